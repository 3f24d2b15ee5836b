//! HTML → the page's readable content, as Markdown or plain text.
//!
//! An article (a post, a documentation page) goes through `dom_smoothie`,
//! a port of Mozilla's Readability: the main content without navigation,
//! ads and footers, written as Markdown by the same library. A page that
//! is not an article (a list, a home page) is written whole, minus
//! scripts, styles, navigation and forms. Pages with more elements than
//! [`MAX_ELEMENTS`] skip Readability, whose scoring walks the tree many
//! times, and are written whole.

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};

/// Above this many elements Readability is not tried.
pub const MAX_ELEMENTS: usize = 60_000;

/// What is left out of a page written whole.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "head", "meta", "nav", "form", "svg", "iframe",
    "button", "select",
];

/// Markdown or text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Text,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Text => "text",
        }
    }
}

/// The title and readable content of `html`, found at `url`.
pub fn readable(html: &str, url: &str, format: Format) -> (Option<String>, String) {
    let document = Document::from(html);
    let title = page_title(&document);
    let elements = document.select("*").length();
    if elements <= MAX_ELEMENTS {
        let config = Config {
            text_mode: match format {
                Format::Markdown => TextMode::Markdown,
                Format::Text => TextMode::Formatted,
            },
            max_elements_to_parse: MAX_ELEMENTS,
            ..Config::default()
        };
        if let Ok(mut readability) = Readability::with_document(document, Some(url), Some(config))
            && let Ok(article) = readability.parse()
        {
            let content = tidy(&article.text_content);
            if !content.trim().is_empty() {
                let title = Some(article.title.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .or(title);
                return (title, content);
            }
        }
        // Readability changed the tree it was given; start again.
        return (title, whole(&Document::from(html), format));
    }
    (title, whole(&document, format))
}

/// The whole page, minus what is never content.
fn whole(document: &Document, format: Format) -> String {
    document.select(&SKIPPED.join(", ")).remove();
    let body = document.select("body");
    let root = if body.exists() {
        body
    } else {
        document.select("html")
    };
    let content = match root.nodes().first() {
        Some(node) => match format {
            Format::Markdown => node.md(Some(&[])).to_string(),
            Format::Text => node.formatted_text().to_string(),
        },
        None => String::new(),
    };
    tidy(&content)
}

fn page_title(document: &Document) -> Option<String> {
    let title = document.select("title").text();
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// Trailing spaces gone, at most one blank line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARTICLE: &str = r#"<!doctype html><html><head><title>Ownership explained | Crab Blog</title></head>
<body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Ownership explained</h1>
<p>Rust's central feature is ownership. Each value in Rust has a variable that is called its owner, and there can only be one owner at a time. When the owner goes out of scope, the value will be dropped.</p>
<h2>Borrowing</h2>
<p>Instead of taking ownership, a function can <strong>borrow</strong> a value with a reference. References are immutable by default, and the borrow checker makes sure they never outlive the value they point to.</p>
<ul><li>one mutable reference</li><li>or any number of shared ones</li></ul>
<p>Read more in <a href="https://doc.rust-lang.org/book/">the book</a>, which explains every rule with examples and exercises for the reader.</p>
</article>
<footer>© Crab Blog · <a href="/privacy">Privacy</a></footer>
<script>track()</script></body></html>"#;

    #[test]
    fn an_article_becomes_markdown_without_navigation_or_scripts() {
        let (title, content) =
            readable(ARTICLE, "https://blog.example/ownership", Format::Markdown);
        assert!(title.unwrap().starts_with("Ownership explained"));
        assert!(content.contains("## Borrowing"), "{content}");
        assert!(content.contains("**borrow**"), "{content}");
        assert!(
            content.contains("[the book](https://doc.rust-lang.org/book/)"),
            "{content}"
        );
        assert!(
            content.contains("- one mutable reference")
                || content.contains("* one mutable reference"),
            "{content}"
        );
        assert!(
            !content.contains("track()") && !content.contains("Privacy"),
            "{content}"
        );
    }

    #[test]
    fn text_format_has_no_markdown_syntax() {
        let (_, content) = readable(ARTICLE, "https://blog.example/ownership", Format::Text);
        assert!(
            content.contains("Borrowing") && !content.contains("## ") && !content.contains("**"),
            "{content}"
        );
    }

    #[test]
    fn a_short_page_keeps_its_content() {
        let html = "<html><head><title>Links</title><style>p{}</style></head><body><h1>Links</h1><ul><li><a href=\"https://a.example/\">A</a></li></ul><script>x()</script></body></html>";
        let (title, content) = readable(html, "https://l.example/", Format::Markdown);
        assert_eq!(title.as_deref(), Some("Links"));
        assert!(content.contains("[A](https://a.example/)"), "{content}");
        assert!(
            !content.contains("x()") && !content.contains("p{}"),
            "{content}"
        );
    }

    #[test]
    fn a_page_too_big_for_readability_is_written_whole() {
        let items: String = (0..MAX_ELEMENTS)
            .map(|i| format!("<p>item {i}</p>"))
            .collect();
        let html = format!(
            "<html><head><title>Big</title></head><body><nav>menu</nav>{items}<script>x()</script></body></html>"
        );
        let (title, content) = readable(&html, "https://b.example/", Format::Markdown);
        assert_eq!(title.as_deref(), Some("Big"));
        assert!(
            content.contains("item 0") && content.contains(&format!("item {}", MAX_ELEMENTS - 1))
        );
        assert!(!content.contains("x()") && !content.contains("menu"));
        let (_, text) = readable(&html, "https://b.example/", Format::Text);
        assert!(text.contains("item 7") && !text.contains("menu"));
    }
}
