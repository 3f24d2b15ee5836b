//! How compacted conversations are named in an agent's memory.
//!
//! Compaction stores a conversation's summary as an archive entry named
//! `compaction-<sender>-<UTC time>`; the memory tools use the same rule to
//! show a gateway sender the summaries of its own conversations and no
//! others. Both sides read it from here.

use chrono::{DateTime, Utc};
use crabtalk_memory::Memory;

/// A name no entry of `memory` has: `compaction-<sender>-<UTC time>`, with
/// `-2`, `-3`… if the same conversation was compacted twice in one second.
pub(crate) fn archive_name(memory: &Memory, sender: &str, at: DateTime<Utc>) -> String {
    let base = format!(
        "compaction-{}-{}",
        archive_sender(sender),
        at.format("%Y%m%d-%H%M%S")
    );
    if memory.get(&base).is_none() {
        return base;
    }
    (2u32..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| memory.get(name).is_none())
        .expect("some suffix is free")
}

/// `sender` as it appears in archive names: without control characters,
/// at most 64 bytes.
fn archive_sender(sender: &str) -> String {
    let mut sender: String = sender.chars().filter(|c| !c.is_control()).collect();
    if sender.len() > 64 {
        let mut end = 64;
        while !sender.is_char_boundary(end) {
            end -= 1;
        }
        sender.truncate(end);
    }
    sender
}

/// Whether `name` is the name [`archive_name`] gives an archive of a
/// conversation with `sender`: `compaction-<sender>-YYYYMMDD-HHMMSS`,
/// maybe with `-<n>`. Exact, so `tg:4` does not claim `tg:42`'s archives.
pub(crate) fn is_archive_of(name: &str, sender: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("compaction-")
        .and_then(|rest| rest.strip_prefix(archive_sender(sender).as_str()))
        .and_then(|rest| rest.strip_prefix('-'))
    else {
        return false;
    };
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let Some((stamp, suffix)) = rest.split_at_checked(15) else {
        return false;
    };
    let stamp_ok = stamp.as_bytes()[8] == b'-' && digits(&stamp[..8]) && digits(&stamp[9..]);
    let suffix_ok = suffix.is_empty() || suffix.strip_prefix('-').is_some_and(digits);
    stamp_ok && suffix_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crabtalk_memory::{EntryKind, Op};

    #[test]
    fn archives_belong_to_exactly_their_sender() {
        assert!(is_archive_of("compaction-tg:42-20260403-100000", "tg:42"));
        assert!(is_archive_of("compaction-tg:42-20260403-100000-3", "tg:42"));
        assert!(!is_archive_of("compaction-tg:42-20260403-100000", "tg:4"));
        assert!(!is_archive_of("compaction-tg:420-20260403-100000", "tg:42"));
        assert!(!is_archive_of(
            "compaction-tg:42-20250101-000000-20260403-100000",
            "tg:42"
        ));
        assert!(!is_archive_of("compaction-user-20260403-100000", "tg:42"));
        assert!(!is_archive_of("notes", "tg:42"));
    }
    #[test]
    fn archive_names_are_unique_and_safe() {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::open(dir.path().join("m.crmem")).unwrap();
        let at = DateTime::parse_from_rfc3339("2026-04-03T10:00:00Z")
            .unwrap()
            .to_utc();
        let first = archive_name(&memory, "tg:1\n2", at);
        assert_eq!(first, "compaction-tg:12-20260403-100000");
        memory
            .apply(Op::Add {
                name: first.clone(),
                content: "x".into(),
                aliases: Vec::new(),
                kind: EntryKind::Archive,
            })
            .unwrap();
        assert_eq!(archive_name(&memory, "tg:1\n2", at), format!("{first}-2"));
        let long = archive_name(&memory, &"é".repeat(100), at);
        assert!(long.len() <= 128, "{}", long.len());
    }
}
