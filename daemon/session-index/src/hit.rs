//! What a search returns: hits with bounded windows of snippets, and the
//! [`MessageSource`] the windows' text is read from.

use std::collections::HashSet;
use std::ops::Range;

use crate::{Field, MAX_INDEXED_BYTES, MAX_SNIPPET_BYTES, Role};
use crabtalk_bm25 as bm25;

/// One search result: a matching message (or a conversation's title or
/// summary) with the messages around it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHit {
    /// The daemon's id of the conversation.
    pub conversation: String,
    pub sender: String,
    /// The conversation's title, when one is set.
    pub title: Option<String>,
    /// What matched.
    pub field: Field,
    /// The matching message; `None` when the title or summary matched.
    pub msg_idx: Option<u32>,
    /// BM25 score times the field weight.
    pub score: f64,
    /// The matching message with up to `context_before` messages before it
    /// and `context_after` after it, in order, at most
    /// [`MAX_WINDOW_ITEMS`](crate::MAX_WINDOW_ITEMS) items; for a title or
    /// summary hit, that text alone.
    pub window: Vec<WindowItem>,
}

/// One message (or title, or summary) of a hit's window, cut to at most
/// [`MAX_SNIPPET_BYTES`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowItem {
    pub field: Field,
    pub msg_idx: Option<u32>,
    pub snippet: String,
    /// Whether `snippet` is only part of the text.
    pub truncated: bool,
    pub tool_name: Option<String>,
}

/// A message as the daemon's storage returns it for a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceMessage {
    pub msg_idx: u32,
    pub role: Role,
    pub text: String,
    pub tool_name: Option<String>,
}

/// Where window text comes from: the conversation logs. The index keeps no
/// message text (at a million messages that would be most of its RAM), so
/// after ranking, a search reads each hit's window here, at most
/// [`MAX_HITS`](crate::MAX_HITS) reads of at most
/// [`MAX_WINDOW_ITEMS`](crate::MAX_WINDOW_ITEMS) messages each.
pub trait MessageSource {
    /// The messages of `conversation` (of `agent`) whose `msg_idx` is in
    /// `range`, in order. Messages that no longer exist may be left out.
    fn read(
        &self,
        agent: &str,
        conversation: &str,
        range: Range<u32>,
    ) -> std::io::Result<Vec<SourceMessage>>;
}

/// The first [`MAX_SNIPPET_BYTES`] of `text`, cut on a char boundary.
pub fn prefix_snippet(text: &str) -> (String, bool) {
    if text.len() <= MAX_SNIPPET_BYTES {
        return (text.to_owned(), false);
    }
    let end = floor_boundary(text, MAX_SNIPPET_BYTES);
    (text[..end].to_owned(), true)
}

/// A snippet of at most [`MAX_SNIPPET_BYTES`] that shows the first place a
/// query term occurs (looked for in the indexed prefix of the text), with a
/// little context before it; the prefix when that is where the match is.
pub(crate) fn snippet_around(text: &str, query_terms: &HashSet<String>) -> (String, bool) {
    if text.len() <= MAX_SNIPPET_BYTES {
        return (text.to_owned(), false);
    }
    let searched = &text[..floor_boundary(text, MAX_INDEXED_BYTES)];
    let mut first = None;
    bm25::tokenizer::for_each_token(searched, |term, span| {
        if first.is_none() && query_terms.contains(term) {
            first = Some(span);
        }
    });
    let Some(span) = first else {
        return prefix_snippet(text);
    };
    if span.end <= MAX_SNIPPET_BYTES {
        return prefix_snippet(text);
    }
    let start = floor_boundary(text, span.start.saturating_sub(MAX_SNIPPET_BYTES / 8));
    let end = floor_boundary(text, start + MAX_SNIPPET_BYTES);
    (text[start..end].to_owned(), true)
}

/// The largest char boundary of `text` at or below `at`.
pub(super) fn floor_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    let mut at = at;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_cuts_multibyte_text_on_a_boundary() {
        let text = "é".repeat(700); // 1400 bytes
        let (snippet, truncated) = prefix_snippet(&text);
        assert!(truncated);
        assert_eq!(snippet.len(), 1024);
        let text = "€".repeat(400); // 3 bytes each: 1024 is mid-char
        let (snippet, truncated) = prefix_snippet(&text);
        assert!(truncated);
        assert_eq!(snippet.len(), 1023);
        assert_eq!(prefix_snippet("short"), ("short".to_owned(), false));
    }

    #[test]
    fn snippet_moves_to_a_late_match() {
        let text = format!("{} needle {}", "hay ".repeat(1000), "hay ".repeat(1000));
        let terms: HashSet<String> = ["needle".to_owned()].into();
        let (snippet, truncated) = snippet_around(&text, &terms);
        assert!(truncated);
        assert!(snippet.len() <= MAX_SNIPPET_BYTES);
        assert!(snippet.contains("needle"));
    }
}
