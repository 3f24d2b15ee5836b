//! What is read back after a crash: an agent's memory file (CRMEM) and a
//! conversation's log (JSONL).
//!
//! CRMEM is written whole (`write_atomic`), so a damaged file is refused
//! whole, and the refusal must say where. Oracles: no panic; what decodes
//! encodes to the same bytes (the reader is strict, so the format has one
//! spelling); every cut of a good file is refused as truncated at an
//! offset inside it; a refusal's offset is inside the file; what decodes
//! opens as a memory and answers recall.
//!
//! A log is appended a line at a time, so a crash leaves at most a torn
//! last line. Oracles: no panic; a torn tail is reported, cut off the
//! file, and changes nothing else — the history read is the one read from
//! the file without it; the history is the messages after the last
//! compact marker; every unreadable line after the marker is reported.

use std::path::Path;

use crabtalk_memory::Memory;
use crabtalk_memory::format::{self, FormatError};
use crabtalkd::storage::{Entry, LoadedHistory, SessionLog};

pub fn crmem(data: &[u8]) {
    match format::decode(data) {
        Ok(snapshot) => {
            let again = format::encode(snapshot.next_id, snapshot.entries.iter());
            assert_eq!(again, data, "a decoded file encodes differently");
            for cut in [data.len() - 1, data.len() / 2, data.len().saturating_sub(5)] {
                match format::decode(&data[..cut]) {
                    Err(FormatError::Truncated { offset, .. }) => assert!(offset <= cut),
                    other => panic!("a file cut at {cut} of {} reads as {other:?}", data.len()),
                }
            }
            let dir = tempfile::tempdir().expect("a temp dir");
            let path = dir.path().join("a.crmem");
            std::fs::write(&path, data).expect("write the memory file");
            let memory = Memory::open(&path).expect("a decoded file opens");
            assert_eq!(memory.len(), snapshot.entries.len());
            for entry in snapshot.entries.iter().take(4) {
                let _ = memory.search(&entry.content, 3);
                let _ = memory.search(&entry.name, 3);
            }
        }
        Err(err) => {
            let offset = match &err {
                FormatError::Truncated { offset, left, .. } => {
                    assert_eq!(offset + left, data.len(), "{err}");
                    Some(*offset)
                }
                FormatError::InvalidUtf8 { offset, .. }
                | FormatError::UnknownKind { offset, .. } => Some(*offset),
                FormatError::TrailingBytes { offset, count } => {
                    assert_eq!(offset + count, data.len(), "{err}");
                    Some(*offset)
                }
                _ => None,
            };
            if let Some(offset) = offset {
                assert!(
                    offset <= data.len(),
                    "{err}: outside a file of {} bytes",
                    data.len()
                );
            }
        }
    }
}

fn load(dir: &Path, name: &str, bytes: &[u8]) -> (LoadedHistory, Vec<u8>) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write the log");
    let loaded = SessionLog::new(&path).load().expect("the log loads");
    let after = std::fs::read(&path).expect("read the log back");
    (loaded, after)
}

pub fn conversation_log(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (loaded, after) = load(dir.path(), "a.jsonl", data);
    let whole = data
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let (complete, torn) = data.split_at(whole);
    assert_eq!(
        after, complete,
        "the file after loading is not its complete lines"
    );
    let torn_reported = loaded
        .problems
        .iter()
        .filter(|p| p.contains("torn last line"))
        .count();
    assert_eq!(
        torn_reported,
        usize::from(!torn.is_empty()),
        "{:?}",
        loaded.problems
    );

    let (clean, _) = load(dir.path(), "b.jsonl", complete);
    assert_eq!(
        loaded.messages, clean.messages,
        "a torn tail changed the history"
    );
    assert_eq!(
        loaded.next_number, clean.next_number,
        "a torn tail changed the numbering"
    );
    assert_eq!(loaded.problems.len(), clean.problems.len() + torn_reported);

    // Read every line from the start: the history is what follows the
    // last compact marker, and every unreadable line after it is reported.
    let text = String::from_utf8_lossy(complete);
    let mut messages = Vec::new();
    let mut unreadable = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        // A line that starts as a marker is one, even when it cannot be
        // read (its summary damaged): the history restarts there, and the
        // line itself is reported.
        if line.starts_with("{\"compact\":") {
            messages.clear();
            unreadable = 0;
        }
        match serde_json::from_str::<Entry>(line) {
            Ok(Entry::Message(message)) => messages.push(message),
            Ok(Entry::Compact(_)) => messages.clear(),
            Err(_) => unreadable += 1,
        }
    }
    assert_eq!(
        clean.messages, messages,
        "the history is not what follows the last marker"
    );
    assert_eq!(clean.problems.len(), unreadable, "{:?}", clean.problems);
}
