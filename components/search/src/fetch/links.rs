//! Link destinations in the Markdown exactly as the page means them.
//!
//! The HTML parser has already decoded `href="?a=1&amp;b=2"` to
//! `?a=1&b=2`; the Markdown writer would write it as an HTML attribute
//! again (`&amp;`), and a model following the link would ask for
//! `amp;b=2`. So before writing, every link's and image's URL is taken
//! out of the tree — resolved against the page's URL — and a token of
//! letters and digits put in its place; after writing, each token becomes
//! its URL, escaped only as a Markdown destination needs.

use std::hash::{BuildHasher, RandomState};

use dom_query::Document;

/// The URLs taken out of a document, and the token they wait behind.
pub(crate) struct Links {
    prefix: String,
    urls: Vec<String>,
}

impl Links {
    /// Replaces every `a[href]` and `img[src]` of `document` by a token.
    pub(crate) fn take(document: &Document, page_url: &str) -> Self {
        let base = url::Url::parse(page_url).ok();
        // A prefix no page can have planned for.
        let nonce = RandomState::new().hash_one(page_url);
        let prefix = format!("ZZcrabtalk{nonce:x}L");
        let mut urls = Vec::new();
        for (selector, attr) in [("a[href]", "href"), ("img[src]", "src")] {
            for node in document.select(selector).nodes() {
                let Some(value) = node.attr(attr) else {
                    continue;
                };
                let value = value.trim();
                let resolved = base
                    .as_ref()
                    .and_then(|base| base.join(value).ok())
                    .map_or_else(|| value.to_owned(), |url| url.to_string());
                node.set_attr(attr, &format!("{prefix}{}ZZ", urls.len()));
                urls.push(resolved);
            }
        }
        Self { prefix, urls }
    }

    /// `markdown` with every token replaced by its URL.
    pub(crate) fn restore(&self, markdown: &str) -> String {
        if self.urls.is_empty() {
            return markdown.to_owned();
        }
        let mut out = String::with_capacity(markdown.len());
        let mut rest = markdown;
        while let Some(at) = rest.find(&self.prefix) {
            out.push_str(&rest[..at]);
            let after = &rest[at + self.prefix.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let url = after[..digits]
                .parse::<usize>()
                .ok()
                .filter(|_| after[digits..].starts_with("ZZ"))
                .and_then(|index| self.urls.get(index));
            match url {
                Some(url) => {
                    out.push_str(&destination(url));
                    rest = &after[digits + 2..];
                }
                None => {
                    out.push_str(&self.prefix);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// `url` as a Markdown link destination: what would end or break one
/// (spaces, angle brackets, unbalanced parentheses, control characters) is
/// percent-encoded; nothing else changes.
pub(crate) fn destination(url: &str) -> String {
    let mut depth = 0i32;
    let mut balanced = true;
    for ch in url.chars() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    balanced = false;
                }
            }
            _ => {}
        }
    }
    balanced &= depth == 0;
    let mut out = String::with_capacity(url.len());
    for ch in url.chars() {
        match ch {
            ' ' | '<' | '>' | '\\' | '\u{0}'..='\u{1f}' | '\u{7f}' => {
                let mut buf = [0u8; 4];
                for byte in ch.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{byte:02X}"));
                }
            }
            '(' if !balanced => out.push_str("%28"),
            ')' if !balanced => out.push_str("%29"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_keep_the_url_and_escape_only_what_markdown_needs() {
        assert_eq!(destination("https://d/p?a=1&b=2"), "https://d/p?a=1&b=2");
        assert_eq!(
            destination("https://en.wikipedia.org/wiki/Rust_(programming_language)"),
            "https://en.wikipedia.org/wiki/Rust_(programming_language)"
        );
        assert_eq!(destination("https://d/a b"), "https://d/a%20b");
        assert_eq!(destination("https://d/a)b"), "https://d/a%29b");
        assert_eq!(destination("https://d/<x>"), "https://d/%3Cx%3E");
    }

    #[test]
    fn links_come_back_decoded_and_absolute() {
        let document = Document::from(
            r#"<body><a href="https://d/p?a=1&amp;b=2">one</a> <a href="/rel?x=&quot;y&quot;">two</a> <img src="i.png" alt="pic"></body>"#,
        );
        let links = Links::take(&document, "https://site.example/dir/page");
        let body = document.select("body");
        let markdown = links.restore(&body.nodes()[0].md(None));
        assert!(
            markdown.contains("[one](https://d/p?a=1&b=2)"),
            "{markdown}"
        );
        assert!(
            markdown.contains("[two](https://site.example/rel?x=%22y%22)"),
            "{markdown}"
        );
        assert!(
            markdown.contains("(https://site.example/dir/i.png)"),
            "{markdown}"
        );
        assert!(!markdown.contains("ZZcrabtalk"), "{markdown}");
    }
}
