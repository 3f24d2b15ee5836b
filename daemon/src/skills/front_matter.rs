//! The front matter of a `SKILL.md`: the fields of the agentskills.io
//! format this daemon reads, from a small, forgiving subset of YAML.
//!
//! ```text
//! ---
//! name: check-feeds
//! description: "Check the RSS feeds and summarise what is new"
//! allowed-tools: [bash, read]        # or: bash, read   or a "- item" list
//! ---
//! The body: the skill's prompt.
//! ```
//!
//! A file without front matter is all body. Unknown keys are ignored.

/// Why a skill's front matter cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrontMatterError {
    /// A line that is neither a `key: value` pair, a list item, a comment
    /// nor blank.
    #[error("front matter line {0:?} is not `key: value`")]
    NotAPair(String),
    /// The opening `---` has no closing one.
    #[error("front matter is not closed with `---`")]
    NotClosed,
}

/// The fields read from a skill's front matter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub allowed_tools: Vec<String>,
}

impl FrontMatter {
    /// Splits a file into its front matter and its body.
    pub(crate) fn split(text: &str) -> Result<(Self, &str), FrontMatterError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = text
            .strip_prefix("---")
            .filter(|rest| rest.starts_with('\n') || rest.starts_with("\r\n"))
        else {
            return Ok((Self::default(), text));
        };
        let mut front = Self::default();
        let mut list_key: Option<String> = None;
        // The body starts after the line that closes the front matter; count
        // from the end of the opening `---` line.
        let opening = rest.find('\n').map_or(rest.len(), |newline| newline + 1);
        let mut offset = text.len() - rest.len() + opening;
        for line in rest[opening..].split_inclusive('\n') {
            offset += line.len();
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim() == "---" {
                return Ok((front, &text[offset..]));
            }
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            if let Some(item) = line.trim_start().strip_prefix("- ") {
                if list_key.as_deref() == Some("allowed-tools") {
                    front.allowed_tools.push(unquote(item).to_owned());
                }
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(FrontMatterError::NotAPair(line.to_owned()));
            };
            let key = key.trim().to_owned();
            let value = strip_comment(value.trim());
            list_key = value.is_empty().then(|| key.clone());
            match key.as_str() {
                "name" => front.name = Some(unquote(value).to_owned()).filter(|v| !v.is_empty()),
                "description" => {
                    front.description = Some(unquote(value).to_owned()).filter(|v| !v.is_empty())
                }
                "allowed-tools" | "allowed_tools" => front.allowed_tools = split_list(value),
                _ => {}
            }
        }
        Err(FrontMatterError::NotClosed)
    }
}

fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

fn strip_comment(value: &str) -> &str {
    if value.starts_with('"') || value.starts_with('\'') {
        return value;
    }
    value.split(" #").next().unwrap_or(value).trim()
}

fn split_list(value: &str) -> Vec<String> {
    let value = value.trim().trim_start_matches('[').trim_end_matches(']');
    value
        .split([',', ' '])
        .map(unquote)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_their_common_shapes() {
        let (front, body) = FrontMatter::split(
            "---\nname: check-feeds\ndescription: \"Check feeds: all of them\"\nallowed-tools: [bash, read]\nextra: ignored\n---\nDo it.\n",
        )
        .unwrap();
        assert_eq!(front.name.as_deref(), Some("check-feeds"));
        assert_eq!(
            front.description.as_deref(),
            Some("Check feeds: all of them")
        );
        assert_eq!(front.allowed_tools, ["bash", "read"]);
        assert_eq!(body, "Do it.\n");

        let (front, _) =
            FrontMatter::split("---\nallowed-tools:\n  - bash\n  - 'edit'\n---\n").unwrap();
        assert_eq!(front.allowed_tools, ["bash", "edit"]);
        let (front, _) =
            FrontMatter::split("---\nallowed-tools: bash, read # the usual\n---\n").unwrap();
        assert_eq!(front.allowed_tools, ["bash", "read"]);
    }

    #[test]
    fn no_front_matter_is_all_body_and_broken_front_matter_is_an_error() {
        let (front, body) = FrontMatter::split("Just a prompt.").unwrap();
        assert_eq!((front, body), (FrontMatter::default(), "Just a prompt."));
        assert!(FrontMatter::split("---\nname: x\nbody without end").is_err());
        assert!(FrontMatter::split("---\nnot a pair\n---\n").is_err());
    }
}
