//! HTML → the page's readable content, as Markdown or plain text.
//!
//! First the page's [shape] is measured with the tokenizer
//! alone: a page that nests deeper than [`shape::MAX_DEPTH`] or would have
//! more than [`shape::MAX_ELEMENTS`] elements is never parsed into a tree
//! (the tree builder, Readability and the Markdown writer all cost more
//! the deeper a page goes, and some recurse); its text is the answer, with
//! a note saying why. Every other page is parsed a piece at a time, and
//! the real tree's depth is checked again before anything walks it.
//!
//! An article (a post, a documentation page) then goes through
//! `dom_smoothie`, a port of Mozilla's Readability: the main content
//! without navigation, ads and footers. A page that is not an article (a
//! list, a home page) is written whole, minus scripts, styles, navigation
//! and forms. Pages with more elements than [`MAX_ELEMENTS`] skip
//! Readability, whose scoring walks the tree many times. Links are written
//! with their URLs as the page means them ([`links`]).
//!
//! Every step asks the [`Budget`] first: the work ends at its deadline,
//! or as soon as nobody waits for it.

use dom_query::{Document, NodeRef};
use dom_smoothie::{Config, Readability, TextMode};
use html5ever::tendril::{StrTendril, TendrilSink};

use super::budget::{Budget, Stopped};
use super::links;
use super::shape::{self, CHUNK, Shape};

/// Above this many elements Readability is not tried.
pub(crate) const MAX_ELEMENTS: usize = 60_000;

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

/// A page made readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readable {
    pub title: Option<String>,
    pub content: String,
    /// What the reader should know about how it was made (a page given
    /// as plain text because of its shape).
    pub note: Option<String>,
}

/// The title and readable content of `html`, found at `url`, within
/// `budget`.
pub fn readable(
    html: &str,
    url: &str,
    format: Format,
    budget: &Budget,
) -> Result<Readable, Stopped> {
    let shape = shape::measure(html, budget)?;
    if !shape.fits() {
        return Ok(flat(shape));
    }
    let document = parse(html, budget)?;
    let depth = depth_of(&document);
    if depth > shape::MAX_DEPTH {
        return Ok(flat(Shape { depth, ..shape }));
    }
    budget.check()?;
    let title = page_title(&document).or_else(|| shape.title.clone());
    let elements = document.select("*").length();
    if elements <= MAX_ELEMENTS {
        let config = Config {
            // The article's HTML is written below, links and all.
            text_mode: TextMode::Raw,
            max_elements_to_parse: MAX_ELEMENTS,
            ..Config::default()
        };
        if let Ok(mut readability) = Readability::with_document(document, Some(url), Some(config))
            && let Ok(article) = readability.parse()
        {
            budget.check()?;
            let article_doc = Document::from(article.content);
            let content = render(&article_doc, url, format, Some(&[]));
            if !content.trim().is_empty() {
                let title = Some(article.title.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .or(title);
                return Ok(Readable {
                    title,
                    content,
                    note: None,
                });
            }
        }
        // Readability changed the tree it was given; start again.
        budget.check()?;
        let document = parse(html, budget)?;
        return Ok(Readable {
            title,
            content: whole(&document, url, format),
            note: None,
        });
    }
    Ok(Readable {
        title,
        content: whole(&document, url, format),
        note: None,
    })
}

/// A page too deep or too big for a tree: its text, and why.
fn flat(shape: Shape) -> Readable {
    let why = if shape.depth > shape::MAX_DEPTH {
        format!("its elements nest more than {} deep", shape::MAX_DEPTH)
    } else {
        format!("it has more than {} elements", shape::MAX_ELEMENTS)
    };
    Readable {
        title: shape.title,
        content: tidy(&shape.text),
        note: Some(format!(
            "the page is given as plain text, without links or layout: {why}"
        )),
    }
}

/// `html` parsed into a tree a piece at a time, asking `budget` between
/// pieces.
fn parse(html: &str, budget: &Budget) -> Result<Document, Stopped> {
    let opts = html5ever::ParseOpts {
        tree_builder: html5ever::tree_builder::TreeBuilderOpts {
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = html5ever::parse_document(Document::default(), opts);
    let mut rest = html;
    while !rest.is_empty() {
        budget.check()?;
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
    }
    Ok(parser.finish())
}

/// The deepest node of `document`, walked without recursion.
fn depth_of(document: &Document) -> usize {
    let mut deepest = 0;
    let mut stack: Vec<(NodeRef<'_>, usize)> = vec![(document.root(), 0)];
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        stack.extend(node.children_it(false).map(|child| (child, depth + 1)));
    }
    deepest
}

/// The body (else the whole) of `document` as `format`; `skip` as for
/// `md` (`None`: its own list of tags that are never content).
fn render(document: &Document, url: &str, format: Format, skip: Option<&[&str]>) -> String {
    let body = document.select("body");
    let root = if body.exists() {
        body
    } else {
        document.select("html")
    };
    let Some(node) = root.nodes().first() else {
        return String::new();
    };
    let content = match format {
        Format::Markdown => {
            let kept = links::Links::take(document, url);
            kept.restore(&node.md(skip))
        }
        Format::Text => node.formatted_text().to_string(),
    };
    tidy(&content)
}

/// The whole page, minus what is never content.
fn whole(document: &Document, url: &str, format: Format) -> String {
    document.select(&SKIPPED.join(", ")).remove();
    render(document, url, format, Some(&[]))
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

    fn run(html: &str, url: &str, format: Format) -> Readable {
        readable(html, url, format, &Budget::unlimited()).unwrap()
    }

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
        let Readable { title, content, .. } =
            run(ARTICLE, "https://blog.example/ownership", Format::Markdown);
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
        let content = run(ARTICLE, "https://blog.example/ownership", Format::Text).content;
        assert!(
            content.contains("Borrowing") && !content.contains("## ") && !content.contains("**"),
            "{content}"
        );
    }

    #[test]
    fn a_short_page_keeps_its_content() {
        let html = "<html><head><title>Links</title><style>p{}</style></head><body><h1>Links</h1><ul><li><a href=\"https://a.example/\">A</a></li></ul><script>x()</script></body></html>";
        let Readable { title, content, .. } = run(html, "https://l.example/", Format::Markdown);
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
        let Readable { title, content, .. } = run(&html, "https://b.example/", Format::Markdown);
        assert_eq!(title.as_deref(), Some("Big"));
        assert!(
            content.contains("item 0") && content.contains(&format!("item {}", MAX_ELEMENTS - 1))
        );
        assert!(!content.contains("x()") && !content.contains("menu"));
        let text = run(&html, "https://b.example/", Format::Text).content;
        assert!(text.contains("item 7") && !text.contains("menu"));
    }

    #[test]
    fn links_keep_their_query_strings_and_become_absolute() {
        let html = r#"<html><head><title>Links</title></head><body><h1>Links</h1><p>See <a href="https://d.example/p?a=1&amp;b=2">one</a> and <a href="/two?x=1&amp;y=2">two</a>.</p></body></html>"#;
        let content = run(html, "https://l.example/dir/", Format::Markdown).content;
        assert!(
            content.contains("[one](https://d.example/p?a=1&b=2)"),
            "{content}"
        );
        assert!(
            content.contains("[two](https://l.example/two?x=1&y=2)"),
            "{content}"
        );
        assert!(!content.contains("&amp;"), "{content}");
        let article = ARTICLE.replace(
            "https://doc.rust-lang.org/book/",
            "https://doc.rust-lang.org/book/?a=1&amp;b=2",
        );
        let content = run(&article, "https://blog.example/ownership", Format::Markdown).content;
        assert!(
            content.contains("[the book](https://doc.rust-lang.org/book/?a=1&b=2)"),
            "{content}"
        );
    }

    #[test]
    fn deep_pages_are_given_as_text_with_a_note() {
        for html in [
            "<b>".repeat(3_000) + "deep words" + &"</b>".repeat(3_000),
            "<blockquote>".repeat(3_000) + "deep words",
            "<a><b><i>".repeat(2_000) + "deep words",
            "<div>".repeat(50_000) + "deep words",
        ] {
            let page = run(&html, "https://deep.example/", Format::Markdown);
            assert_eq!(page.content, "deep words");
            assert!(page.note.unwrap().contains("nest more than 256 deep"));
        }
        // Just under the limit: parsed and written as usual.
        let html = "<div>".repeat(200) + "<p>fine <a href=\"/x?a=1&amp;b=2\">link</a></p>";
        let page = run(&html, "https://deep.example/", Format::Markdown);
        assert!(page.note.is_none(), "{page:?}");
        assert!(
            page.content
                .contains("[link](https://deep.example/x?a=1&b=2)"),
            "{page:?}"
        );
    }

    #[test]
    fn a_spent_budget_stops_the_work() {
        let budget = Budget::unlimited();
        budget.cancel();
        assert_eq!(
            readable(ARTICLE, "https://blog.example/", Format::Markdown, &budget),
            Err(Stopped::Cancelled)
        );
    }
}
