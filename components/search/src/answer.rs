//! What `web_search` and `web_fetch` answer (the MCP tools' structured
//! content and the CLI's `--json`), and the CLI's text form of it.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::health::Status;

/// `web_search`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchAnswer {
    pub query: String,
    pub results: Vec<ResultItem>,
    /// Every engine: what it did for this search, or why it was not asked.
    pub engines: Vec<EngineReport>,
    /// Whether this answer came from the cache (then `cached_secs` says how old it is).
    pub cached: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_secs: Option<u64>,
    /// Said when engines failed, so a short list is not taken for all there is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One fused result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultItem {
    pub title: String,
    pub url: String,
    pub snippet: String,
    /// The fusion score (higher is better).
    pub score: f64,
    /// Each engine that returned it, at which rank (1 = its first result).
    pub engines: Vec<FoundBy>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundBy {
    pub engine: String,
    pub rank: usize,
}

/// One engine's part in a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineReport {
    pub engine: String,
    pub status: Status,
    /// How many results it gave (when it answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<usize>,
    /// How long it took (when it was asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_until: Option<DateTime<Utc>>,
}

impl SearchAnswer {
    /// Whether no engine answered at all (the tool then reports an error).
    pub fn nobody_answered(&self) -> bool {
        !self.engines.iter().any(|e| e.status.answered())
    }

    /// The CLI's text form.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if self.results.is_empty() {
            let _ = writeln!(out, "no results for {:?}", self.query);
        }
        for (i, result) in self.results.iter().enumerate() {
            let found: Vec<String> = result
                .engines
                .iter()
                .map(|f| format!("{}#{}", f.engine, f.rank))
                .collect();
            let _ = writeln!(out, "{:>2}. {}", i + 1, result.title);
            let _ = writeln!(out, "    {}", result.url);
            if !result.snippet.is_empty() {
                let _ = writeln!(out, "    {}", result.snippet);
            }
            let _ = writeln!(out, "    score {:.3} · {}", result.score, found.join(" "));
        }
        let _ = writeln!(out);
        for engine in &self.engines {
            let _ = writeln!(out, "{}", engine.line());
        }
        if let Some(note) = &self.note {
            let _ = writeln!(out, "note: {note}");
        }
        if let Some(secs) = self.cached_secs {
            let _ = writeln!(out, "(from the cache, {secs} s old)");
        }
        out
    }
}

impl EngineReport {
    /// `bing: rate_limited (HTTP 429) — suspended until …`.
    pub fn line(&self) -> String {
        let mut line = format!("{:<10} {}", self.engine, self.status.name());
        if let Some(n) = self.results {
            let _ = write!(line, ", {n} results");
        }
        if let Some(ms) = self.ms {
            let _ = write!(line, ", {ms} ms");
        }
        if let Some(detail) = &self.detail {
            let _ = write!(line, " ({detail})");
        }
        if let Some(until) = self.suspended_until {
            let _ = write!(
                line,
                "; suspended until {}",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            );
        }
        line
    }
}

/// `web_fetch`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchAnswer {
    /// What was asked for.
    pub url: String,
    /// Where the content came from, after redirects.
    pub final_url: String,
    pub status: u16,
    pub content_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `markdown` or `text`.
    pub format: String,
    pub content: String,
    /// Characters of the whole content before any cut.
    pub total_chars: usize,
    /// Whether `content` was cut at `max_chars`.
    pub truncated: bool,
    /// Whether the body was longer than the byte cap (only its start was read).
    pub body_cut: bool,
    /// Says what was cut and how to get more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub cached: bool,
}

impl FetchAnswer {
    /// The CLI's text form.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(title) = &self.title {
            let _ = writeln!(out, "# {title}");
        }
        let _ = writeln!(
            out,
            "<{}> ({}, HTTP {})\n",
            self.final_url, self.content_type, self.status
        );
        out.push_str(&self.content);
        if !self.content.ends_with('\n') {
            out.push('\n');
        }
        if let Some(note) = &self.note {
            let _ = writeln!(out, "\n[{note}]");
        }
        out
    }
}
