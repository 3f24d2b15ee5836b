//! [`ToolConversation`]: the part of a conversation a tool call may use.
//!
//! A tool never holds the runtime's conversation. It gets this narrow view
//! of it instead, through its [`ToolContext`](super::ToolContext): whose
//! conversation it is, a question put to the user (`ask_user`), and the
//! files read in it with what they held then (`read` and `edit`).

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::pin::Pin;

use crabtalk_proto::msg::AskUserEvent;

/// What a tool call may do in the conversation it runs in.
pub(crate) trait ToolConversation: Send + Sync {
    /// The agent whose conversation this is.
    fn agent(&self) -> &str;

    /// Puts `question` to the user (to the turn's client and to event
    /// subscribers) and waits for the answer given with `ReplyToAsk`;
    /// `None` if the question was withdrawn. The question is registered
    /// before it is announced, so a fast reply is never missed, and it is
    /// withdrawn when the returned future is dropped.
    fn ask(&self, question: AskUserEvent) -> Pin<Box<dyn Future<Output = Option<String>> + Send>>;

    /// Records that `path` was read, as it was then.
    fn record_read(&self, path: PathBuf, stamp: FileStamp);

    /// What `path` held when it was last read in this conversation, if it
    /// was.
    fn read_stamp(&self, path: &Path) -> Option<FileStamp>;
}

/// A file's size and a hash of its bytes at the time it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    len: u64,
    hash: u64,
}

impl FileStamp {
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut hasher);
        Self {
            len: bytes.len() as u64,
            hash: hasher.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_change_with_content() {
        assert_eq!(FileStamp::of(b"a"), FileStamp::of(b"a"));
        assert_ne!(FileStamp::of(b"a"), FileStamp::of(b"b"));
    }
}
