//! Session search wired to the conversations (RFC 0021; the index itself is
//! [`crabtalk_session_index`], RFC 0020).
//!
//! - **Feeding.** Every message a conversation appends is indexed at once
//!   through its [`SessionFeed`], under its message number (see
//!   [`crate::storage::numbering`]); compaction feeds the summary.
//! - **Rebuilding.** At start the index is rebuilt from every log in
//!   `sessions/` on a thread of its own ([`SessionSearch::start_rebuild`]);
//!   live appends go on meanwhile and are replayed onto the rebuilt index
//!   before it is swapped in, so none is lost.
//! - **Windows.** [`SessionSearch`] is the index's [`MessageSource`](crabtalk_session_index::MessageSource): it
//!   reads a hit's window from the log by message number. It remembers where
//!   every 64th numbered line starts (8 bytes per 64 messages, filled by the
//!   rebuild and by earlier reads), so a window near the end of a long log
//!   is read without reading the file from its start.
//!
//! The module's files: `feed.rs` (feeding), `rebuild.rs` (rebuilding),
//! `windows.rs` (windows and the positions they learn) and `document.rs`
//! (what the index holds for a message, from a conversation or a log line).
//!
//! A conversation is identified in the index by its storage handle
//! (`<agent>/<sender>`, encoded), which is also what clients pass to
//! `GetConversationHistory`.

mod document;
mod feed;
mod rebuild;
mod windows;

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use crabtalk_session_index::{SearchError, SearchQuery, SessionHit, SessionIndex};

use crate::storage::Storage;

pub use self::feed::SessionFeed;
pub use self::rebuild::{REBUILD_GATE_ENV, RebuildReport};
use self::windows::Positions;

/// The session index, the logs it is built from, and where lines start in
/// them. Clones share everything.
#[derive(Clone)]
pub struct SessionSearch {
    index: SessionIndex,
    storage: Storage,
    positions: Arc<Mutex<HashMap<String, Positions>>>,
    /// How many messages each log held when the rebuild read it: the truth
    /// at start, where a sidecar written late (and lost to a crash) lags.
    logged: Arc<Mutex<HashMap<String, u64>>>,
}

/// A search, owned, to run off the async workers.
#[derive(Debug, Clone, Default)]
pub struct SessionQuery {
    pub agent: String,
    /// Only conversations with this sender.
    pub sender: Option<String>,
    pub query: String,
    /// At most this many hits (capped at 20; 0 means 20).
    pub limit: usize,
    /// Messages before and after each match (the window is capped at 16).
    pub context: usize,
}

impl SessionSearch {
    pub fn new(storage: Storage, index: SessionIndex) -> Self {
        Self {
            index,
            storage,
            positions: Arc::default(),
            logged: Arc::default(),
        }
    }

    /// How many messages `handle`'s log held when it was last read whole
    /// (at start, or when its agent was renamed); `None` before that.
    /// Logs only grow, so a count that is lower is out of date.
    pub fn logged_messages(&self, handle: &str) -> Option<u64> {
        self.logged.lock().get(handle).copied()
    }

    pub fn index(&self) -> &SessionIndex {
        &self.index
    }

    /// Searches one agent's conversations; reads windows from the logs
    /// (blocking file I/O: call it off the async workers).
    pub fn search(&self, query: &SearchQuery<'_>) -> Result<Vec<SessionHit>, SearchError> {
        self.index.search(query, self)
    }

    /// [`search`](SessionSearch::search) on a blocking thread.
    pub async fn run(&self, query: SessionQuery) -> Result<Vec<SessionHit>, SearchError> {
        let this = self.clone();
        let agent = query.agent.clone();
        tokio::task::spawn_blocking(move || {
            this.search(&SearchQuery {
                agent: &query.agent,
                sender: query.sender.as_deref(),
                query: &query.query,
                context_before: query.context,
                context_after: query.context,
                limit: query.limit,
            })
        })
        .await
        .unwrap_or_else(|join| {
            Err(SearchError::Source {
                agent,
                conversation: String::new(),
                source: io::Error::other(join.to_string()),
            })
        })
    }

    /// Forgets a conversation (deleted, or moved away).
    pub fn forget(&self, agent: &str, handle: &str) {
        self.index.remove_conversation(agent, handle);
        self.positions.lock().remove(handle);
        self.logged.lock().remove(handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crabtalk_session_index::Role as SearchRole;

    use super::document::source_message;
    use crate::storage::{CompactMarker, Entry, Message, Meta, SessionLog, ToolCallRecord};

    fn search(sessions: &SessionSearch, query: &str, before: usize) -> Vec<SessionHit> {
        sessions
            .search(&SearchQuery {
                agent: "crab",
                sender: None,
                query,
                context_before: before,
                context_after: 1,
                limit: 5,
            })
            .unwrap()
    }

    #[test]
    fn windows_are_read_by_number_from_remembered_positions() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path());
        let files = storage.files("crab", "user");
        Meta {
            agent: "crab".into(),
            sender: "user".into(),
            ..Meta::default()
        }
        .save(&files.meta)
        .unwrap();
        let mut log = SessionLog::new(&files.log);
        for i in 0..300 {
            if i == 100 {
                log.append(&Entry::Compact(CompactMarker {
                    compact: "the summary mentions zebras".into(),
                    archive_name: "a".into(),
                    archived_at: "t".into(),
                    title: "t".into(),
                    messages_before: Some(100),
                }))
                .unwrap();
            }
            let text = if i == 250 {
                "the needle is here".to_owned()
            } else {
                format!("message {i}")
            };
            log.append(&Entry::Message(Message::user(text))).unwrap();
        }
        let sessions = SessionSearch::new(storage, SessionIndex::new());
        let report = sessions.rebuild(sessions.index.start_rebuild()).unwrap();
        assert_eq!((report.conversations, report.messages), (1, 300));
        assert_eq!(sessions.positions.lock()["crab/user"].offsets.len(), 5);

        let hits = search(&sessions, "needle", 2);
        assert_eq!(hits[0].msg_idx, Some(250));
        let window: Vec<_> = hits[0].window.iter().map(|w| w.snippet.as_str()).collect();
        assert_eq!(
            window,
            [
                "message 248",
                "message 249",
                "the needle is here",
                "message 251"
            ]
        );
        let hits = search(&sessions, "zebras", 0);
        assert_eq!(hits[0].field, crabtalk_session_index::Field::Summary);

        // Positions that do not fit the file are dropped, not trusted.
        sessions
            .positions
            .lock()
            .get_mut("crab/user")
            .unwrap()
            .offsets[3] += 1;
        let hits = search(&sessions, "needle", 1);
        let window: Vec<_> = hits[0].window.iter().map(|w| w.snippet.as_str()).collect();
        assert_eq!(window, ["message 249", "the needle is here", "message 251"]);
    }

    #[test]
    fn tool_calls_and_results_are_indexed_with_their_tool() {
        let call = ToolCallRecord {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{\"command\":\"cargo flamegraph\"}".into(),
        };
        let mut assistant = Message::assistant("profiling");
        assistant.tool_calls.push(call.clone());
        let index = SessionIndex::new();
        let feed = SessionFeed::new(index.clone(), "crab", "user", "crab/user");
        feed.message(0, &assistant);
        feed.message(1, &Message::tool_result(&call, "done", false));
        feed.message(2, &Message::system("never indexed"));
        assert_eq!(index.stats().messages, 2);
        let line = serde_json::to_vec(&Entry::Message(assistant)).unwrap();
        let source = source_message(0, &line).unwrap();
        assert_eq!(source.role, SearchRole::ToolCall);
        assert_eq!(source.tool_name.as_deref(), Some("bash"));
        assert!(source.text.contains("flamegraph"), "{}", source.text);
    }
}
