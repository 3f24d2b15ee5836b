//! `edit`: replace one exact piece of a file.
//!
//! Safe by construction rather than by trust: the file must have been read
//! in this conversation, it must not have changed since (someone else — a
//! user, another agent — may have edited it), and `old_string` must occur
//! exactly once. The new file is written atomically, keeping its
//! permissions, to the file the path leads to (through links). The daemon's
//! own files are never edited (see [`HomeGuard`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::files::{HomeGuard, OpenError, resolve};
use crate::hook::FileStamp;
use crate::hook::{Hook, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments};
use crate::storage::ToolCallRecord;

/// The `edit` tool.
pub(crate) struct EditHook {
    guard: HomeGuard,
}

impl EditHook {
    pub(crate) fn new(guard: HomeGuard) -> Self {
        Self { guard }
    }
}

#[derive(Deserialize)]
struct Arguments {
    path: String,
    old_string: String,
    new_string: String,
}

impl Hook for EditHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "edit".into(),
            description: "Replace old_string with new_string in a file you have read in this \
                conversation. old_string must appear exactly once (include surrounding lines to make \
                it unique) and must match the file exactly, without read's line numbers."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "What to put in its place."}
                },
                "required": ["path", "old_string", "new_string"]
            }),
        }]
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let arguments: Arguments = match parse_arguments(call) {
            Ok(arguments) => arguments,
            Err(error) => return Some(Box::pin(std::future::ready(error))),
        };
        let guard = self.guard.clone();
        Some(Box::pin(async move {
            let path = resolve(&context.cwd, &arguments.path);
            let Some(read_stamp) = context.conversation.read_stamp(&path) else {
                return ToolOutput::error(format!(
                    "read {} first: edit only changes files read in this conversation",
                    path.display()
                ));
            };
            let conversation = context.conversation.clone();
            let result = tokio::task::spawn_blocking(move || {
                let new_stamp = edit(
                    &guard,
                    &path,
                    read_stamp,
                    &arguments.old_string,
                    &arguments.new_string,
                )?;
                conversation.record_read(path.clone(), new_stamp);
                Ok::<_, EditError>(format!("edited {}", path.display()))
            })
            .await;
            match result {
                Ok(Ok(message)) => ToolOutput::ok(message),
                Ok(Err(error)) => ToolOutput::error(error.to_string()),
                Err(err) => ToolOutput::error(format!("the edit failed: {err}")),
            }
        }))
    }
}

/// Why `edit` changed nothing; the text is what the model reads.
#[derive(Debug, thiserror::Error)]
enum EditError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(
        "{} changed since you read it (someone else edited it); read it again and redo the edit",
        path.display()
    )]
    Changed { path: PathBuf },
    #[error(
        "{} is not valid UTF-8, so edit cannot change it; use bash (sed, or iconv to convert it) instead",
        path.display()
    )]
    NotUtf8 { path: PathBuf },
    #[error("old_string is empty; give the exact text to replace")]
    EmptyOld,
    #[error(
        "old_string was not found in {}; check it against the file (without read's line numbers)",
        path.display()
    )]
    NotFound { path: PathBuf },
    #[error(
        "old_string occurs {count} times in {}; include more surrounding text so it occurs once",
        path.display()
    )]
    Ambiguous { path: PathBuf, count: usize },
    #[error("cannot write {}: {source}", path.display())]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Applies the edit; returns the new file's stamp.
fn edit(
    guard: &HomeGuard,
    path: &Path,
    read: FileStamp,
    old: &str,
    new: &str,
) -> Result<FileStamp, EditError> {
    let (mut file, real) = guard.open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|source| OpenError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
    if FileStamp::of(&bytes) != read {
        return Err(EditError::Changed {
            path: path.to_owned(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| EditError::NotUtf8 {
        path: path.to_owned(),
    })?;
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    match text.matches(old).count() {
        0 => {
            return Err(EditError::NotFound {
                path: path.to_owned(),
            });
        }
        1 => {}
        count => {
            return Err(EditError::Ambiguous {
                path: path.to_owned(),
                count,
            });
        }
    }
    let updated = text.replacen(old, new, 1);
    let mode = permissions(&real);
    crabtalk_home::write_atomic_mode(&real, updated.as_bytes(), mode).map_err(|source| {
        EditError::Unwritable {
            path: path.to_owned(),
            source,
        }
    })?;
    Ok(FileStamp::of(updated.as_bytes()))
}

#[cfg(unix)]
fn permissions(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.permissions().mode() & 0o7777)
        .unwrap_or(0o644)
}

#[cfg(not(unix))]
fn permissions(_: &Path) -> u32 {
    0o644
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guard for a home that is not where the tests edit.
    fn guard() -> HomeGuard {
        HomeGuard::new(&crabtalk_home::Home::new("/nonexistent/crabtalk-home"))
    }

    #[test]
    fn one_exact_match_is_replaced_and_everything_else_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "alpha beta\nbeta gamma\n").unwrap();
        let stamp = FileStamp::of(&std::fs::read(&path).unwrap());
        let refused = |old: &str| {
            edit(&guard(), &path, stamp, old, "x")
                .unwrap_err()
                .to_string()
        };
        assert!(refused("beta").contains("2 times"));
        assert!(refused("delta").contains("not found"));
        let new_stamp = edit(&guard(), &path, stamp, "alpha beta", "ALPHA").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "ALPHA\nbeta gamma\n"
        );
        // The old stamp no longer matches: a second edit from it is refused.
        let changed = edit(&guard(), &path, stamp, "gamma", "G").unwrap_err();
        assert!(matches!(changed, EditError::Changed { .. }), "{changed:?}");
        assert!(changed.to_string().contains("changed since you read it"));
        edit(&guard(), &path, new_stamp, "gamma", "G").unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn permissions_survive_an_edit() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        std::fs::write(&path, "echo hi\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let stamp = FileStamp::of(&std::fs::read(&path).unwrap());
        edit(&guard(), &path, stamp, "hi", "hello").unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn an_empty_old_string_is_refused_and_the_file_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "keep me\n").unwrap();
        let stamp = FileStamp::of(&std::fs::read(&path).unwrap());
        let message = edit(&guard(), &path, stamp, "", "inserted")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("old_string is empty") && message.contains("exact text"),
            "{message}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me\n");
    }

    #[test]
    fn a_file_that_is_not_utf8_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.txt");
        let bytes = b"caf\xe9 au lait\n";
        std::fs::write(&path, bytes).unwrap();
        let stamp = FileStamp::of(bytes);
        let message = edit(&guard(), &path, stamp, "au", "with")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("latin1.txt")
                && message.contains("not valid UTF-8")
                && message.contains("use bash"),
            "{message}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}
