//! `crabtalk-session-index`: session search (RFC 0020) — BM25 over the text
//! of every conversation an agent has had, returning small windows of
//! messages around each match.
//!
//! The daemon feeds the index as it persists messages
//! ([`SessionIndex::add_message`]), sets titles and summaries when they change,
//! and rebuilds it from storage in the background at start
//! ([`SessionIndex::start_rebuild`]), while live appends stay searchable.
//!
//! **Documents and weights.** Every message is a document, and so are a
//! conversation's title and its summary. Scores are BM25 times the weight of
//! the document's [`Field`], applied before the top hits are cut:
//!
//! | field | weight |
//! |---|---|
//! | summary | 3.0 |
//! | title | 2.0 |
//! | user message | 1.5 |
//! | tool-use turn: an assistant message that calls tools ([`Role::ToolCall`]), or a tool's result ([`Role::ToolResult`]) | 1.3 |
//! | assistant text | 1.0 |
//!
//! **Scope.** Each agent has its own index: a search names its agent and can
//! only see that agent's documents; a sender filter narrows it further.
//!
//! **Bounds.** At most [`MAX_HITS`] hits; each window at most
//! [`MAX_WINDOW_ITEMS`] items; each snippet at most [`MAX_SNIPPET_BYTES`]
//! bytes, cut on a character boundary and flagged `truncated`.
//!
//! **RAM.** The index keeps no message text: ranking needs only postings,
//! and a search reads the few windows it returns from a [`MessageSource`]
//! (the daemon's conversation storage). Titles and summaries, one each per
//! conversation, are kept.
//!
//! ```
//! use crabtalk_session_index::*;
//!
//! struct Log(Vec<&'static str>);
//! impl MessageSource for Log {
//!     fn read(&self, _: &str, _: &str, range: std::ops::Range<u32>) -> std::io::Result<Vec<SourceMessage>> {
//!         Ok(range
//!             .filter_map(|i| self.0.get(i as usize).map(|text| SourceMessage {
//!                 msg_idx: i, role: Role::User, text: text.to_string(), tool_name: None,
//!             }))
//!             .collect())
//!     }
//! }
//!
//! let log = Log(vec!["the cron job fails at midnight", "check the timezone"]);
//! let index = SessionIndex::new();
//! let conv = ConversationRef { agent: "crab", sender: "user", conversation: "c1" };
//! for (i, text) in log.0.iter().enumerate() {
//!     index.add_message(conv, i as u32, Role::User, text, None);
//! }
//! let hits = index.search(&SearchQuery {
//!     agent: "crab", sender: None, query: "cron",
//!     context_before: 0, context_after: 1, limit: 5,
//! }, &log)?;
//! assert_eq!(hits[0].msg_idx, Some(0));
//! assert_eq!(hits[0].window.len(), 2);
//! # Ok::<(), SearchError>(())
//! ```

mod corpus;
mod hit;
mod index;

pub use corpus::IndexStats;
pub use hit::{MessageSource, SessionHit, SourceMessage, WindowItem, prefix_snippet};
pub use index::{Rebuild, RebuildError, SearchError, SearchQuery, SessionIndex};

/// Most hits one search returns.
pub const MAX_HITS: usize = 20;
/// Most items in one hit's window (before + match + after).
pub const MAX_WINDOW_ITEMS: usize = 16;
/// Most bytes of one window item's snippet.
pub const MAX_SNIPPET_BYTES: usize = 1024;
/// Only this much of a message is indexed (a 1 MiB tool result costs no more
/// than 32 KiB of text).
pub const MAX_INDEXED_BYTES: usize = 32 * 1024;
/// Message indices at or above this are not indexed.
pub const MAX_MESSAGES_PER_CONVERSATION: u32 = 1 << 24;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    /// Assistant text without tool calls.
    Assistant,
    /// An assistant message that calls tools; index its text and the calls.
    ToolCall,
    /// A tool's result.
    ToolResult,
}

/// What a document is: a message of some role, or a conversation's title or
/// summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Summary,
    Title,
    Message(Role),
}

impl Field {
    /// A short name: `summary`, `title`, `user`, `assistant`, `tool_call`,
    /// `tool_result` (the protocol and the tools use it).
    pub fn name(self) -> &'static str {
        match self {
            Field::Summary => "summary",
            Field::Title => "title",
            Field::Message(Role::User) => "user",
            Field::Message(Role::Assistant) => "assistant",
            Field::Message(Role::ToolCall) => "tool_call",
            Field::Message(Role::ToolResult) => "tool_result",
        }
    }

    /// The multiplier applied to this field's BM25 scores.
    pub fn weight(self) -> f64 {
        match self {
            Field::Summary => 3.0,
            Field::Title => 2.0,
            Field::Message(Role::User) => 1.5,
            Field::Message(Role::ToolCall | Role::ToolResult) => 1.3,
            Field::Message(Role::Assistant) => 1.0,
        }
    }
}

/// Which conversation a change is about: the agent whose index it lives in,
/// the sender (for the sender filter; fixed by the first reference), and the
/// daemon's opaque id for it, returned in hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationRef<'a> {
    pub agent: &'a str,
    pub sender: &'a str,
    pub conversation: &'a str,
}
