//! What `read` and `edit` share: resolving a path against the turn's working
//! directory, and the stamp that tells whether a file changed since it was
//! read.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// A file's size and a hash of its bytes at the time it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    hash: u64,
}

impl FileStamp {
    pub fn of(bytes: &[u8]) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut hasher);
        Self {
            len: bytes.len() as u64,
            hash: hasher.finish(),
        }
    }
}

/// `path` relative to `cwd` (absolute paths stay as they are), with `.` and
/// `..` resolved lexically so the same file always has the same key.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether bytes look like a binary file (a NUL in the first 8 KiB).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_working_directory() {
        assert_eq!(
            resolve(Path::new("/w/p"), "src/../a.rs"),
            Path::new("/w/p/a.rs")
        );
        assert_eq!(
            resolve(Path::new("/w/p"), "/etc/hosts"),
            Path::new("/etc/hosts")
        );
        assert_eq!(resolve(Path::new("/w/p"), "./x"), Path::new("/w/p/x"));
    }

    #[test]
    fn stamps_change_with_content() {
        assert_eq!(FileStamp::of(b"a"), FileStamp::of(b"a"));
        assert_ne!(FileStamp::of(b"a"), FileStamp::of(b"b"));
        assert!(looks_binary(b"ab\0c") && !looks_binary("é".as_bytes()));
    }
}
