//! A conversation's append-only log: one JSON [`Entry`] per line.
//!
//! Each append is one `write` of one whole line, so a crash (even `kill -9`)
//! can only ever leave a torn *last* line. Loading drops such a line (and
//! reports it), and never lets it swallow the next append. Loading reads only
//! from the last compact marker on, scanning the file backwards for it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::entry::{CompactMarker, Entry, MARKER_PREFIX, Message};
use super::numbering;

/// Bytes read per step when scanning backwards.
const SCAN_BLOCK: u64 = 64 * 1024;

/// The writable end of a conversation log.
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    file: Option<File>,
}

/// The working history of a conversation, as loaded from its log.
#[derive(Debug, Default)]
pub struct LoadedHistory {
    /// Messages since the last compact marker.
    pub messages: Vec<Message>,
    /// The last compact marker, if the conversation was ever compacted.
    pub marker: Option<CompactMarker>,
    /// The number the next appended message gets: how many numbered lines
    /// the whole log holds (see [`numbering`]).
    pub next_number: u64,
    /// What was wrong with the file (a torn last line, unreadable lines).
    pub problems: Vec<String>,
}

impl SessionLog {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            file: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry as one line.
    pub fn append(&mut self, entry: &Entry) -> io::Result<()> {
        self.append_line(entry)
    }

    /// Appends one message: the line `append(&Entry::Message(..))` writes
    /// (the entry is untagged), without copying the message first.
    pub fn append_message(&mut self, message: &Message) -> io::Result<()> {
        self.append_line(message)
    }

    fn append_line(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
        line.push(b'\n');
        self.open()?.write_all(&line)
    }

    /// Opens the log for appending, creating it (and its folder) if it does
    /// not exist yet.
    pub fn open(&mut self) -> io::Result<&mut File> {
        let file = match self.file.take() {
            Some(file) => file,
            None => {
                if let Some(dir) = self.path.parent() {
                    crate::private::create_dir(dir)?;
                }
                let mut options = OpenOptions::new();
                options.create(true).append(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                options.open(&self.path)?
            }
        };
        Ok(self.file.insert(file))
    }

    /// Loads the history since the last compact marker, repairing a torn
    /// last line first.
    pub fn load(&mut self) -> io::Result<LoadedHistory> {
        let mut loaded = LoadedHistory::default();
        let mut file = match OpenOptions::new().read(true).write(true).open(&self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(loaded),
            Err(err) => return Err(err),
        };
        if let Some(dropped) = repair_torn_tail(&mut file)? {
            loaded.problems.push(format!(
                "{}: dropped a torn last line ({dropped} bytes) left by a crash",
                self.path.display()
            ));
        }
        let start = last_marker_offset(&mut file)?;
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let after_marker = numbering::count_numbered(&bytes);
        // Lossy: one bad byte must not cost the whole conversation.
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Entry>(line) {
                Ok(Entry::Message(message)) => loaded.messages.push(message),
                Ok(Entry::Compact(marker)) => {
                    loaded.messages.clear();
                    loaded.marker = Some(marker);
                }
                Err(err) => loaded.problems.push(format!(
                    "{}: skipped an unreadable line {} after the last marker: {err}",
                    self.path.display(),
                    n + 1
                )),
            }
        }
        let before_marker = match &loaded.marker {
            None => 0,
            Some(CompactMarker {
                messages_before: Some(count),
                ..
            }) => *count,
            // A marker written without the count: count the lines before it.
            Some(_) => {
                let mut prefix = vec![0; start as usize];
                file.seek(SeekFrom::Start(0))?;
                file.read_exact(&mut prefix)?;
                numbering::count_numbered(&prefix)
            }
        };
        loaded.next_number = before_marker + after_marker;
        Ok(loaded)
    }
}

/// Reads every entry of a log (for history export), skipping unreadable
/// lines and a torn tail.
pub fn read_entries(path: &Path) -> io::Result<Vec<Entry>> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// Truncates a last line that lacks its newline; returns its length.
fn repair_torn_tail(file: &mut File) -> io::Result<Option<u64>> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    let keep = match rfind_byte(file, len, b'\n')? {
        Some(newline) => newline + 1,
        None => 0,
    };
    file.set_len(keep)?;
    Ok(Some(len - keep))
}

/// Offset of the start of the last line that begins with the marker prefix,
/// or 0 when there is none.
fn last_marker_offset(file: &mut File) -> io::Result<u64> {
    let len = file.metadata()?.len();
    let mut end = len;
    let mut block = Vec::new();
    while end > 0 {
        // Overlap blocks by the prefix length so a marker across a block
        // boundary is still seen.
        let start = end.saturating_sub(SCAN_BLOCK);
        let read_end = (end + MARKER_PREFIX.len() as u64).min(len);
        block.resize((read_end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        let mut at = block.len();
        while let Some(pos) = block[..at].iter().rposition(|&b| b == b'\n') {
            let line_start = pos + 1;
            if block[line_start..].starts_with(MARKER_PREFIX) {
                return Ok(start + line_start as u64);
            }
            at = pos;
        }
        if start == 0 {
            // Either the first line is the marker or there is none: both
            // mean "read from the start".
            return Ok(0);
        }
        end = start;
    }
    Ok(0)
}

/// Offset of the last `byte` before `end`.
fn rfind_byte(file: &mut File, end: u64, byte: u8) -> io::Result<Option<u64>> {
    let mut end = end;
    let mut block = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(SCAN_BLOCK);
        block.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        if let Some(pos) = block.iter().rposition(|&b| b == byte) {
            return Ok(Some(start + pos as u64));
        }
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::storage::entry::Role;

    fn marker(summary: &str) -> Entry {
        Entry::Compact(CompactMarker {
            compact: summary.into(),
            archive_name: "a".into(),
            archived_at: "t".into(),
            title: String::new(),
            messages_before: None,
        })
    }

    #[test]
    fn a_message_appended_alone_is_the_line_of_its_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut message = Message::assistant("with a call");
        message.agent = "guest".into();
        message.thinking = "hmm".into();
        let mut by_entry = SessionLog::new(dir.path().join("entry.jsonl"));
        by_entry.append(&Entry::Message(message.clone())).unwrap();
        let mut alone = SessionLog::new(dir.path().join("alone.jsonl"));
        alone.append_message(&message).unwrap();
        let read = |log: &SessionLog| std::fs::read(log.path()).unwrap();
        assert_eq!(read(&alone), read(&by_entry));
        let loaded = SessionLog::new(alone.path()).load().unwrap();
        assert_eq!(loaded.messages, [message]);
    }

    #[test]
    fn history_replays_from_the_last_marker() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::new(dir.path().join("c.jsonl"));
        log.append(&Entry::Message(Message::user("one"))).unwrap();
        log.append(&marker("first summary")).unwrap();
        log.append(&Entry::Message(Message::user("two"))).unwrap();
        log.append(&marker("second summary")).unwrap();
        log.append(&Entry::Message(Message::user("three"))).unwrap();
        log.append(&Entry::Message(Message::assistant("reply")))
            .unwrap();
        let loaded = SessionLog::new(log.path()).load().unwrap();
        assert_eq!(loaded.marker.unwrap().compact, "second summary");
        let contents: Vec<_> = loaded.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["three", "reply"]);
        assert!(loaded.problems.is_empty());
    }

    #[test]
    fn the_marker_is_found_across_scan_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::new(dir.path().join("c.jsonl"));
        log.append(&marker("old")).unwrap();
        let big = "x".repeat(1000);
        for _ in 0..200 {
            log.append(&Entry::Message(Message::user(big.clone())))
                .unwrap();
        }
        log.append(&marker("new")).unwrap();
        for _ in 0..150 {
            log.append(&Entry::Message(Message::user(big.clone())))
                .unwrap();
        }
        let loaded = SessionLog::new(log.path()).load().unwrap();
        assert_eq!(loaded.marker.unwrap().compact, "new");
        assert_eq!(loaded.messages.len(), 150);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_does_not_eat_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut log = SessionLog::new(&path);
        log.append(&Entry::Message(Message::user("kept"))).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"role\":\"assis")
            .unwrap();

        let mut reopened = SessionLog::new(&path);
        let loaded = reopened.load().unwrap();
        assert_eq!(loaded.messages.len(), 1);
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        reopened
            .append(&Entry::Message(Message::assistant("after")))
            .unwrap();
        let loaded = SessionLog::new(&path).load().unwrap();
        let contents: Vec<_> = loaded.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["kept", "after"]);
        assert!(loaded.problems.is_empty());
    }

    #[test]
    fn the_next_message_number_counts_the_whole_log_from_the_last_marker() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut log = SessionLog::new(&path);
        log.append(&Entry::Message(Message::user("0"))).unwrap();
        log.append(&Entry::Message(Message::user("1"))).unwrap();
        // An older marker without a count: the lines before it are counted.
        log.append(&marker("old")).unwrap();
        log.append(&Entry::Message(Message::user("2"))).unwrap();
        assert_eq!(SessionLog::new(&path).load().unwrap().next_number, 3);
        // A marker with a count is trusted, and nothing before it is read.
        log.append(&Entry::Compact(CompactMarker {
            messages_before: Some(3),
            ..match marker("new") {
                Entry::Compact(marker) => marker,
                Entry::Message(_) => unreachable!(),
            }
        }))
        .unwrap();
        log.append(&Entry::Message(Message::user("3"))).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"not json\n{\"role\":\"user\",\"con")
            .unwrap();
        let loaded = SessionLog::new(&path).load().unwrap();
        // The unreadable line keeps its number; the torn tail has none.
        assert_eq!(loaded.next_number, 5);
        assert_eq!(loaded.messages.len(), 1);
    }

    #[test]
    fn unreadable_middle_lines_are_skipped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "{\"role\":\"user\",\"content\":\"a\"}\nnot json\n{\"role\":\"user\",\"content\":\"b\"}\n").unwrap();
        let loaded = SessionLog::new(&path).load().unwrap();
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.messages.iter().all(|m| m.role == Role::User));
    }

    proptest! {
        #[test]
        fn any_truncation_keeps_every_complete_line(n in 1usize..8, cut_back in 0usize..200) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("c.jsonl");
            let mut log = SessionLog::new(&path);
            for i in 0..n {
                log.append(&Entry::Message(Message::user(format!("message {i} ✓")))).unwrap();
            }
            let bytes = std::fs::read(&path).unwrap();
            let cut = bytes.len().saturating_sub(cut_back);
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let complete = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
            let loaded = SessionLog::new(&path).load().unwrap();
            prop_assert_eq!(loaded.messages.len(), complete);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("c.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            let _ = SessionLog::new(&path).load().unwrap();
        }
    }
}
