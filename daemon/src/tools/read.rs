//! `read`: a text file's lines, numbered, from an offset, within caps.
//!
//! Reading a file records its stamp in the conversation, which is what lets
//! `edit` change it (and notice if it changed in between). The daemon's own
//! files are never read (see [`HomeGuard`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::files::{HomeGuard, OpenError, looks_binary, resolve};
use crate::hook::FileStamp;
use crate::hook::{Hook, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments};
use crate::storage::ToolCallRecord;

/// Lines returned when the call names no limit.
const DEFAULT_LIMIT: usize = 2000;

/// Bytes returned at most, whatever the limit.
const MAX_BYTES: usize = 256 * 1024;

/// Characters kept of one line.
const MAX_LINE: usize = 2000;

/// Largest file read at all.
const MAX_FILE: u64 = 32 * 1024 * 1024;

/// The `read` tool.
pub(crate) struct ReadHook {
    guard: HomeGuard,
}

impl ReadHook {
    pub(crate) fn new(guard: HomeGuard) -> Self {
        Self { guard }
    }
}

#[derive(Deserialize)]
struct Arguments {
    path: String,
    /// 1-based first line.
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Hook for ReadHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "read".into(),
            description:
                "Read a text file (a path relative to the working directory, or absolute). \
                Lines come numbered (`  12\\tline`); the numbers are not part of the file. Use \
                offset (1-based line) and limit for long files. Reading a file is required before \
                editing it."
                    .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines (default 2000)."}
                },
                "required": ["path"]
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
            let read = tokio::task::spawn_blocking({
                let path = path.clone();
                move || read_file(&guard, &path)
            })
            .await;
            let bytes = match read {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(error)) => return ToolOutput::error(error.to_string()),
                Err(err) => {
                    return ToolOutput::error(format!("reading {} failed: {err}", path.display()));
                }
            };
            if looks_binary(&bytes) {
                return ToolOutput::error(format!(
                    "{} looks like a binary file; read only works on text (use bash with xxd or file to inspect it)",
                    path.display()
                ));
            }
            context
                .conversation
                .record_read(path.clone(), FileStamp::of(&bytes));
            let text = String::from_utf8_lossy(&bytes);
            ToolOutput::ok(numbered(
                &text,
                arguments.offset.unwrap_or(1),
                arguments.limit.unwrap_or(DEFAULT_LIMIT),
            ))
        }))
    }
}

/// Why `read` read nothing; the text is what the model reads.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("{} is a directory; use bash with ls to list it", path.display())]
    Directory { path: PathBuf },
    #[error(
        "{} is {size} bytes, more than read handles ({MAX_FILE}); use bash (head, sed -n, grep) on it",
        path.display()
    )]
    TooLarge { path: PathBuf, size: u64 },
}

fn read_file(guard: &HomeGuard, path: &Path) -> Result<Vec<u8>, ReadError> {
    let unreadable = |source| OpenError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let (file, _) = guard.open(path)?;
    let meta = file.metadata().map_err(unreadable)?;
    if meta.is_dir() {
        return Err(ReadError::Directory {
            path: path.to_owned(),
        });
    }
    if meta.len() > MAX_FILE {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            size: meta.len(),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    Ok(bytes)
}

/// Lines `offset..offset+limit`, numbered, within the byte cap, with a note
/// about what was left out.
fn numbered(text: &str, offset: usize, limit: usize) -> String {
    let offset = offset.max(1);
    let total = text.lines().count();
    if total == 0 {
        return "(the file is empty)".into();
    }
    if offset > total {
        return format!("(the file has {total} lines; offset {offset} is past the end)");
    }
    let mut out = String::new();
    let mut last = offset - 1;
    for (index, line) in text.lines().enumerate().skip(offset - 1).take(limit.max(1)) {
        let line = match line.char_indices().nth(MAX_LINE) {
            Some((cut, _)) => format!("{}… [line cut at {MAX_LINE} characters]", &line[..cut]),
            None => line.to_owned(),
        };
        let entry = format!("{:>6}\t{line}\n", index + 1);
        if out.len() + entry.len() > MAX_BYTES {
            break;
        }
        out.push_str(&entry);
        last = index + 1;
    }
    if last < total {
        out.push_str(&format!(
            "[lines {offset}-{last} of {total} shown; read on with offset = {}]",
            last + 1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_from_the_offset_and_the_rest_is_announced() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(
            numbered(text, 2, 2),
            "     2\tb\n     3\tc\n[lines 2-3 of 4 shown; read on with offset = 4]"
        );
        assert_eq!(
            numbered(text, 1, 10),
            "     1\ta\n     2\tb\n     3\tc\n     4\td\n"
        );
        assert!(numbered(text, 9, 1).contains("past the end"));
        assert_eq!(numbered("", 1, 1), "(the file is empty)");
        let long = "é".repeat(MAX_LINE + 5);
        assert!(numbered(&long, 1, 1).contains("line cut"));
    }

    /// A guard for a home that is not where the tests read.
    fn guard() -> HomeGuard {
        HomeGuard::new(&crabtalk_home::Home::new("/nonexistent/crabtalk-home"))
    }

    #[test]
    fn a_directory_is_refused_with_a_pointer_to_ls() {
        let dir = tempfile::tempdir().unwrap();
        let message = read_file(&guard(), dir.path()).unwrap_err().to_string();
        assert!(
            message.contains("is a directory") && message.contains("ls"),
            "{message}"
        );
    }

    #[test]
    fn a_file_over_the_size_limit_is_refused_with_a_way_around() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.log");
        // Sparse: takes no room on disk.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(MAX_FILE + 1)
            .unwrap();
        let message = read_file(&guard(), &path).unwrap_err().to_string();
        assert!(
            message.contains(&format!("{} bytes", MAX_FILE + 1))
                && message.contains("head, sed -n, grep"),
            "{message}"
        );
        let missing = read_file(&guard(), &dir.path().join("nope")).unwrap_err();
        assert!(
            matches!(missing, ReadError::Open(OpenError::Missing { .. })),
            "{missing:?}"
        );
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }

    #[test]
    fn output_stops_at_the_byte_cap_and_says_where_to_go_on() {
        // 1000-character lines: about 260 fit in 256 KiB.
        let line = "x".repeat(1000);
        let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
        let out = numbered(&text, 1, 1000);
        assert!(out.len() <= MAX_BYTES + 100, "{}", out.len());
        let last = MAX_BYTES / (line.len() + 8);
        assert!(
            out.ends_with(&format!(
                "[lines 1-{last} of 1000 shown; read on with offset = {}]",
                last + 1
            )),
            "{}",
            &out[out.len() - 120..]
        );
    }
}
