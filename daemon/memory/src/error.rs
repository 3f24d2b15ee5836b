//! What can go wrong with a memory, in words a person can act on.

use std::path::PathBuf;

use crate::format::FormatError;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{}: not a valid CRMEM v1 memory file: {reason}; move it aside to start an empty memory", path.display())]
    BadFormat { path: PathBuf, reason: FormatError },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no memory entry is named {name:?}")]
    NotFound { name: String },
    #[error("the name {name:?} is already taken by the entry {owner:?}")]
    NameTaken { name: String, owner: String },
    #[error("invalid name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("the content of {name:?} is {len} bytes; an entry holds at most {max} bytes")]
    ContentTooLarge {
        name: String,
        len: usize,
        max: usize,
    },
    /// A dump tree that cannot be loaded, or a memory that cannot be dumped.
    #[error("{}: {reason}", path.display())]
    Tree { path: PathBuf, reason: String },
}

impl MemoryError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        MemoryError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn tree(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        MemoryError::Tree {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
