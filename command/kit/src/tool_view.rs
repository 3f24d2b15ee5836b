//! Tool results as people read them.
//!
//! A tool's output is written for the model: `web_search` answers with
//! its whole JSON (every engine's status, scores, snippets), `web_fetch`
//! with the page. The clients — the terminal and the Telegram gateway —
//! show people a summary instead: the results' titles, addresses and the
//! engines that found them; a page's title, address and length. This
//! module reads those answers by their shape (the tool's name ends in
//! `web_search` or `web_fetch`, and the output has that tool's form), so a
//! client never shows raw JSON and never needs the component's code; any
//! other output is left to the client's plain rendering.

use serde::Deserialize;

/// A result worth showing its own way.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolView {
    Search(WebResults),
    Page(FetchedPage),
}

/// A `web_search` answer, reduced to what a person scans.
#[derive(Debug, Clone, PartialEq)]
pub struct WebResults {
    pub query: String,
    pub hits: Vec<WebHit>,
    /// The engines that answered (with results or none).
    pub answered: Vec<String>,
    /// The engines asked that did not answer, with why (`bing rate_limited`).
    pub failed: Vec<String>,
    /// What the answer adds (engines failed, so the list may be short).
    pub note: Option<String>,
}

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct WebHit {
    pub title: String,
    pub url: String,
    /// The engines that found it, best rank first.
    pub engines: Vec<String>,
}

/// A `web_fetch` answer, reduced to what a person needs.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedPage {
    pub title: Option<String>,
    pub url: String,
    /// Characters of the page's text given to the model.
    pub chars: usize,
}

/// What `output` of the tool `tool` (as the daemon names it,
/// `search__web_search`) reads as, when it is one of the known answers.
pub fn view(tool: &str, output: &str) -> Option<ToolView> {
    if tool.ends_with("web_search") {
        return WebResults::parse(output).map(ToolView::Search);
    }
    if tool.ends_with("web_fetch") {
        return FetchedPage::parse(output).map(ToolView::Page);
    }
    None
}

#[derive(Deserialize)]
struct SearchAnswer {
    #[serde(default)]
    query: String,
    results: Vec<ResultItem>,
    #[serde(default)]
    engines: Vec<EngineReport>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
struct ResultItem {
    title: String,
    url: String,
    #[serde(default)]
    engines: Vec<FoundBy>,
}

#[derive(Deserialize)]
struct FoundBy {
    engine: String,
    #[serde(default)]
    rank: usize,
}

#[derive(Deserialize)]
struct EngineReport {
    engine: String,
    status: String,
}

impl WebResults {
    /// A `web_search` answer (its JSON); `None` for anything else.
    pub fn parse(output: &str) -> Option<Self> {
        let answer: SearchAnswer = serde_json::from_str(output.trim()).ok()?;
        let hits = answer
            .results
            .into_iter()
            .map(|item| {
                let mut found = item.engines;
                found.sort_by_key(|f| f.rank);
                WebHit {
                    title: one_line(&item.title),
                    url: item.url,
                    engines: found.into_iter().map(|f| f.engine).collect(),
                }
            })
            .collect();
        let answered = answer
            .engines
            .iter()
            .filter(|e| matches!(e.status.as_str(), "ok" | "no_results"))
            .map(|e| e.engine.clone())
            .collect();
        // Disabled and suspended engines were not asked: not failures.
        let failed = answer
            .engines
            .iter()
            .filter(|e| {
                !matches!(
                    e.status.as_str(),
                    "ok" | "no_results" | "disabled" | "suspended"
                )
            })
            .map(|e| format!("{} {}", e.engine, e.status))
            .collect();
        Some(Self {
            query: answer.query,
            hits,
            answered,
            failed,
            note: answer.note,
        })
    }

    /// `3 results for "rust" (duckduckgo, wikipedia)`.
    pub fn headline(&self) -> String {
        let count = match self.hits.len() {
            0 => "no results".to_owned(),
            1 => "1 result".to_owned(),
            n => format!("{n} results"),
        };
        let mut line = format!("{count} for {:?}", self.query);
        if !self.answered.is_empty() {
            line.push_str(&format!(" ({})", self.answered.join(", ")));
        }
        if !self.failed.is_empty() {
            line.push_str(&format!("; not answering: {}", self.failed.join(", ")));
        }
        line
    }
}

impl FetchedPage {
    /// A `web_fetch` answer (`# title`, then `<url> (type, HTTP status)`,
    /// a blank line and the content); `None` for anything else.
    pub fn parse(output: &str) -> Option<Self> {
        let mut lines = output.lines();
        let mut first = lines.next()?;
        let title = match first.strip_prefix("# ") {
            Some(title) => {
                first = lines.next()?;
                Some(one_line(title))
            }
            None => None,
        };
        let (url, rest) = first.strip_prefix('<')?.split_once("> (")?;
        if !rest.contains("HTTP ") || !(url.starts_with("http://") || url.starts_with("https://")) {
            return None;
        }
        let header = output.find(first).map_or(0, |at| at + first.len());
        let chars = output[header..].trim().chars().count();
        Some(Self {
            title,
            url: url.to_owned(),
            chars,
        })
    }

    /// `Title — https://… (12,345 characters)`.
    pub fn headline(&self) -> String {
        let size = format!("{} characters", thousands(self.chars));
        match &self.title {
            Some(title) => format!("{title} — {} ({size})", self.url),
            None => format!("{} ({size})", self.url),
        }
    }
}

/// `12,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: &str = r#"{"query":"rust","results":[
        {"title":"Rust (programming\nlanguage)","url":"https://en.wikipedia.org/wiki/Rust_(programming_language)","snippet":"…","score":1.5,"engines":[{"engine":"wikipedia","rank":2},{"engine":"duckduckgo","rank":1}]},
        {"title":"rust-lang.org","url":"https://www.rust-lang.org/","snippet":"","score":0.5,"engines":[{"engine":"duckduckgo","rank":2}]}],
        "engines":[{"engine":"bing","status":"disabled"},{"engine":"mojeek","status":"rate_limited"},{"engine":"duckduckgo","status":"ok","results":2},{"engine":"wikipedia","status":"ok","results":1}],
        "cached":false}"#;

    #[test]
    fn a_search_answer_reads_as_its_hits() {
        let Some(ToolView::Search(found)) = view("search__web_search", SEARCH) else {
            panic!("not read")
        };
        assert_eq!(found.hits.len(), 2);
        assert_eq!(found.hits[0].title, "Rust (programming language)");
        assert_eq!(found.hits[0].engines, ["duckduckgo", "wikipedia"]);
        assert_eq!(
            found.headline(),
            "2 results for \"rust\" (duckduckgo, wikipedia); not answering: mojeek rate_limited"
        );
        // Another tool, or another shape, is not read.
        assert_eq!(view("bash", SEARCH), None);
        assert_eq!(view("search__web_search", "no engine answered"), None);
    }

    #[test]
    fn a_fetched_page_reads_as_title_address_and_length() {
        let page = "# The Rust Book\n<https://doc.rust-lang.org/book/> (text/html, HTTP 200)\n\nChapter one.\nChapter two.\n";
        let Some(ToolView::Page(read)) = view("search__web_fetch", page) else {
            panic!("not read")
        };
        assert_eq!(read.title.as_deref(), Some("The Rust Book"));
        assert_eq!(read.chars, "Chapter one.\nChapter two.".chars().count());
        assert_eq!(
            read.headline(),
            "The Rust Book — https://doc.rust-lang.org/book/ (25 characters)"
        );
        let untitled =
            FetchedPage::parse("<http://x.org/> (text/plain, HTTP 200)\n\nhi\n").unwrap();
        assert_eq!(untitled.headline(), "http://x.org/ (2 characters)");
        assert_eq!(FetchedPage::parse("# not a page\njust text"), None);
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
