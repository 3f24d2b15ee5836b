//! Relative links in Markdown: the file they name exists, and the heading
//! a `#fragment` names is in it (anchors as mdbook and GitHub make them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// A link that leads nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    /// The Markdown file the link is in.
    pub file: PathBuf,
    /// The link as written.
    pub target: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The destinations of every link and image in `markdown`, in order.
/// Links inside code are not links.
pub fn link_targets(markdown: &str) -> Vec<String> {
    Parser::new_ext(markdown, Options::all())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.into_string())
            }
            _ => None,
        })
        .collect()
}

/// The anchors of the headings of `markdown`, as mdbook (and GitHub) make
/// them: lowercase, spaces to `-`, punctuation other than `-` and `_`
/// dropped; a repeated heading gets `-1`, `-2`…
pub fn headings(markdown: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut text: Option<String> = None;
    for event in Parser::new_ext(markdown, Options::all()) {
        match event {
            Event::Start(Tag::Heading { level, .. }) if level <= HeadingLevel::H6 => {
                text = Some(String::new());
            }
            Event::Text(part) | Event::Code(part) => {
                if let Some(text) = text.as_mut() {
                    text.push_str(&part);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some(text) = text.take() else { continue };
                let base = anchor_of(&text);
                let count = seen.entry(base.clone()).or_insert(0);
                anchors.push(if *count == 0 {
                    base
                } else {
                    format!("{base}-{count}")
                });
                *count += 1;
            }
            _ => {}
        }
    }
    anchors
}

fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Whether `target` points outside the repository (a URL, a mail address)
/// and so is not checked here.
fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// Every relative link in `files` that does not resolve.
pub fn broken_links(files: &[PathBuf]) -> Vec<BrokenLink> {
    let mut broken = Vec::new();
    let mut anchors_of: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            broken.push(BrokenLink {
                file: file.clone(),
                target: String::new(),
                reason: "cannot be read as UTF-8 text".into(),
            });
            continue;
        };
        let folder = file.parent().unwrap_or(Path::new("."));
        for target in link_targets(&text) {
            if is_external(&target) {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                folder.join(path)
            };
            if !resolved.exists() {
                broken.push(BrokenLink {
                    file: file.clone(),
                    target: target.clone(),
                    reason: format!("{} does not exist", resolved.display()),
                });
                continue;
            }
            let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
                continue;
            };
            if resolved.extension().is_none_or(|ext| ext != "md") {
                continue;
            }
            let anchors = anchors_of.entry(resolved.clone()).or_insert_with(|| {
                std::fs::read_to_string(&resolved)
                    .map(|text| headings(&text))
                    .unwrap_or_default()
            });
            if !anchors.iter().any(|anchor| anchor == fragment) {
                broken.push(BrokenLink {
                    file: file.clone(),
                    target: target.clone(),
                    reason: format!("{} has no heading #{fragment}", resolved.display()),
                });
            }
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_in_code_are_not_links() {
        let text = "See [the guide](guide/cron.md) and ![a plot](plot.png).\n\n\
                    ```\n[not a link](nowhere.md)\n```\n\nAnd `[nor](this.md)`.";
        assert_eq!(link_targets(text), ["guide/cron.md", "plot.png"]);
    }

    #[test]
    fn anchors_follow_mdbook() {
        let text = "# The scheduler (`crabtalk-cron`)\n## Idle cost\n## Idle cost\n### A, B & C!\n";
        assert_eq!(
            headings(text),
            [
                "the-scheduler-crabtalk-cron",
                "idle-cost",
                "idle-cost-1",
                "a-b--c"
            ]
        );
    }

    #[test]
    fn a_missing_file_and_a_missing_heading_are_reported_and_the_rest_is_not() {
        let dir = std::env::temp_dir().join(format!("crabtalk-docs-links-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("guide")).unwrap();
        std::fs::write(dir.join("guide/cron.md"), "# Cron\n## Troubleshooting\n").unwrap();
        let page = dir.join("index.md");
        std::fs::write(
            &page,
            "[ok](guide/cron.md) [ok too](guide/cron.md#troubleshooting) \
             [here](#index) [web](https://example.com/x.md)\n\
             [gone](guide/search.md) [no such part](guide/cron.md#setup)\n\n# Index\n",
        )
        .unwrap();
        let broken = broken_links(std::slice::from_ref(&page));
        std::fs::remove_dir_all(&dir).unwrap();
        let targets: Vec<&str> = broken.iter().map(|b| b.target.as_str()).collect();
        assert_eq!(
            targets,
            ["guide/search.md", "guide/cron.md#setup"],
            "{broken:#?}"
        );
        assert!(broken[0].reason.contains("does not exist"));
        assert!(broken[1].reason.contains("no heading #setup"));
    }
}
