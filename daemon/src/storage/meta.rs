//! A conversation's metadata, kept beside its log (`<sender>.meta.json`) so
//! that updating it never rewrites the log. Written atomically.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// What the daemon knows about a conversation besides its messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    pub agent: String,
    pub sender: String,
    /// Who started it (the first sender; for delegated or event-fired
    /// conversations, what triggered them).
    pub created_by: String,
    pub created_at: String,
    /// The first line of the first user message (see `auto_title`), or
    /// what a client set; empty until then.
    pub title: String,
    /// Whether `title` was taken from the first message. Such a title is
    /// not indexed for search: the message itself is.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auto_title: bool,
    pub updated_at: String,
    pub message_count: u64,
    /// The latest compaction summary, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How many times the conversation was compacted.
    pub compactions: u32,
}

impl Meta {
    /// Reads a sidecar; `None` when it does not exist.
    pub fn load(path: &Path) -> io::Result<Option<Self>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|err| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {err}", path.display()),
                )
            }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    pub fn save(&self, path: &Path) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        crabtalk_home::write_atomic_private(path, &bytes)
    }
}
