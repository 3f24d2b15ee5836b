//! CRMEM v1 byte for byte: fixtures written by hand from the layout in RFC 0020
//! (not by the code under test), every reader rejection, and a reader that
//! neither panics nor over-allocates on arbitrary bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use crabtalk_memory::format::{self, Field, FormatError};
use crabtalk_memory::{Entry, EntryKind, Memory, MemoryError, Op};
use proptest::prelude::*;

/// Records the largest single allocation made by the current thread, so a
/// test can show the reader never sizes a buffer from a count in the file.
struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(layout.size())));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(new_size)));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

fn largest_allocation_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|m| m.set(0));
    let out = f();
    (out, LARGEST.with(|m| m.get()))
}

/// Two entries, as RFC 0020 lays them out. Offsets in the comments.
#[rustfmt::skip]
const TWO_ENTRIES: [u8; 125] = [
    // header
    b'C', b'R', b'M', b'E', b'M', 0,            //   0 magic "CRMEM\0"
    1, 0, 0, 0,                                 //   6 version 1
    0, 0,                                       //  10 flags 0
    0, 0, 0, 0,                                 //  12 reserved
    // body
    3, 0, 0, 0, 0, 0, 0, 0,                     //  16 next_id 3
    2, 0, 0, 0,                                 //  24 entry_count 2
    // entry #0
    1, 0, 0, 0, 0, 0, 0, 0,                     //  28 id 1
    0xb1, 0x15, 0xde, 0x69, 0, 0, 0, 0,         //  36 created_at 1776162225 (2026-04-14T10:23:45Z)
    0, 0, 0, 0,                                 //  44 kind 0 = Note
    6, 0, 0, 0,                                 //  48 name_len 6
    b'd', b'e', b'p', b'l', b'o', b'y',         //  52 "deploy"
    8, 0, 0, 0,                                 //  58 content_len 8
    b'r', b'u', b'n', b' ', b'm', b'a', b'k', b'e', //  62 "run make"
    1, 0, 0, 0,                                 //  70 alias_count 1
    4, 0, 0, 0,                                 //  74 alias len 4
    b's', b'h', b'i', b'p',                     //  78 "ship"
    // entry #1
    2, 0, 0, 0, 0, 0, 0, 0,                     //  82 id 2
    8, 7, 6, 5, 4, 3, 2, 1,                     //  90 created_at 0x0102030405060708
    1, 0, 0, 0,                                 //  98 kind 1 = Archive
    9, 0, 0, 0,                                 // 102 name_len 9
    b'a', b'r', b'c', b'h', b'i', b'v', b'e', b'-', b'1', // 106 "archive-1"
    2, 0, 0, 0,                                 // 115 content_len 2
    0xc3, 0xa9,                                 // 119 "é"
    0, 0, 0, 0,                                 // 121 alias_count 0
]; // 125 end

/// The same memory after `Remove { name: "deploy" }`: next_id stays 3.
#[rustfmt::skip]
const AFTER_REMOVE: [u8; 71] = [
    b'C', b'R', b'M', b'E', b'M', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    3, 0, 0, 0, 0, 0, 0, 0,                     // next_id 3
    1, 0, 0, 0,                                 // entry_count 1
    2, 0, 0, 0, 0, 0, 0, 0,                     // id 2
    8, 7, 6, 5, 4, 3, 2, 1,                     // created_at
    1, 0, 0, 0,                                 // Archive
    9, 0, 0, 0, b'a', b'r', b'c', b'h', b'i', b'v', b'e', b'-', b'1',
    2, 0, 0, 0, 0xc3, 0xa9,
    0, 0, 0, 0,
];

/// An empty memory: next_id 1, no entries.
#[rustfmt::skip]
const EMPTY: [u8; 28] = [
    b'C', b'R', b'M', b'E', b'M', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0,
];

fn expected_entries() -> Vec<Entry> {
    vec![
        Entry {
            id: 1,
            name: "deploy".into(),
            content: "run make".into(),
            aliases: vec!["ship".into()],
            created_at: 1_776_162_225,
            kind: EntryKind::Note,
        },
        Entry {
            id: 2,
            name: "archive-1".into(),
            content: "é".into(),
            aliases: vec![],
            created_at: 0x0102_0304_0506_0708,
            kind: EntryKind::Archive,
        },
    ]
}

fn decode_err(bytes: &[u8]) -> FormatError {
    format::decode(bytes).expect_err("must be rejected")
}

fn patched(offset: usize, bytes: &[u8]) -> Vec<u8> {
    let mut out = TWO_ENTRIES.to_vec();
    out[offset..offset + bytes.len()].copy_from_slice(bytes);
    out
}

#[test]
fn hand_written_fixture_reads_back() {
    let snapshot = format::decode(&TWO_ENTRIES).unwrap();
    assert_eq!(snapshot.next_id, 3);
    assert_eq!(snapshot.entries, expected_entries());
    let empty = format::decode(&EMPTY).unwrap();
    assert_eq!((empty.next_id, empty.entries.len()), (1, 0));
}

#[test]
fn encoder_matches_the_hand_written_fixture() {
    let entries = expected_entries();
    assert_eq!(format::encode(3, entries.iter()), TWO_ENTRIES);
    assert_eq!(format::encode(1, [].iter()), EMPTY);
}

#[test]
fn store_writes_the_fixture_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crab.crmem");
    let mut memory = Memory::open(&path).unwrap();
    assert!(!path.exists(), "a missing file is not created by open");
    memory
        .apply_at(
            Op::Add {
                name: "deploy".into(),
                content: "run make".into(),
                aliases: vec!["ship".into()],
                kind: EntryKind::Note,
            },
            1_776_162_225,
        )
        .unwrap();
    memory
        .apply_at(
            Op::Add {
                name: "archive-1".into(),
                content: "é".into(),
                aliases: vec![],
                kind: EntryKind::Archive,
            },
            0x0102_0304_0506_0708,
        )
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), TWO_ENTRIES);
    memory
        .apply(Op::Remove {
            name: "ship".into(),
        })
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), AFTER_REMOVE);
}

#[test]
fn opening_the_fixture_and_checkpointing_rewrites_it_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crab.crmem");
    std::fs::write(&path, TWO_ENTRIES).unwrap();
    let memory = Memory::open(&path).unwrap();
    assert_eq!(
        memory.list().cloned().collect::<Vec<_>>(),
        expected_entries()
    );
    assert_eq!(memory.get("ship").unwrap().id, 1);
    std::fs::remove_file(&path).unwrap();
    memory.checkpoint().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), TWO_ENTRIES);
}

#[test]
fn bad_magic_is_rejected() {
    let err = decode_err(&patched(0, b"CRMEX"));
    assert!(matches!(err, FormatError::BadMagic { .. }), "{err}");
    assert!(matches!(
        decode_err(&patched(5, &[1])),
        FormatError::BadMagic { .. }
    ));
}

#[test]
fn other_versions_are_rejected() {
    for version in [0u32, 2, u32::MAX] {
        let err = decode_err(&patched(6, &version.to_le_bytes()));
        assert_eq!(err, FormatError::UnsupportedVersion { found: version });
    }
}

#[test]
fn any_flag_bit_is_rejected() {
    for flags in [1u16, 0x8000] {
        let err = decode_err(&patched(10, &flags.to_le_bytes()));
        assert_eq!(err, FormatError::UnknownFlags { found: flags });
    }
}

#[test]
fn non_zero_reserved_bytes_are_rejected() {
    let err = decode_err(&patched(12, &[0, 0, 7, 0]));
    assert_eq!(
        err,
        FormatError::Reserved {
            found: [0, 0, 7, 0]
        }
    );
}

#[test]
fn unknown_kinds_are_rejected() {
    for kind in [2u32, u32::MAX] {
        let err = decode_err(&patched(98, &kind.to_le_bytes()));
        assert_eq!(
            err,
            FormatError::UnknownKind {
                found: kind,
                offset: 98
            }
        );
    }
}

#[test]
fn truncation_at_every_offset_is_rejected() {
    for len in 0..TWO_ENTRIES.len() {
        let err = decode_err(&TWO_ENTRIES[..len]);
        assert!(
            matches!(err, FormatError::Truncated { .. }),
            "cut at {len}: {err}"
        );
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    let mut bytes = TWO_ENTRIES.to_vec();
    bytes.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        decode_err(&bytes),
        FormatError::TrailingBytes {
            offset: 125,
            count: 3
        }
    );
}

#[test]
fn invalid_utf8_is_rejected_in_every_string() {
    let cases = [
        (52, Field::Name(0)),
        (62, Field::Content(0)),
        (78, Field::Alias(0)),
        (119, Field::Content(1)),
    ];
    for (offset, field) in cases {
        let err = decode_err(&patched(offset, &[0xff]));
        assert_eq!(err, FormatError::InvalidUtf8 { field, offset }, "{err}");
    }
    // A valid start byte whose continuation is cut by the string's end.
    let err = decode_err(&patched(119, &[0x41, 0xc3]));
    assert!(matches!(err, FormatError::InvalidUtf8 { .. }));
}

#[test]
fn absurd_counts_and_lengths_fail_without_allocating_for_them() {
    let cases = [
        (24, Field::EntryCount),
        (48, Field::Name(0)),
        (58, Field::Content(0)),
        (70, Field::AliasCount(0)),
        (74, Field::Alias(0)),
    ];
    for (offset, field) in cases {
        let bytes = patched(offset, &0xFFFF_FFFFu32.to_le_bytes());
        let (result, largest) = largest_allocation_during(|| format::decode(&bytes));
        match result {
            Err(FormatError::Truncated {
                field: got, needed, ..
            }) => {
                assert_eq!(got, field);
                assert!(needed >= 0xFFFF_FFFF, "{needed}");
            }
            other => panic!("offset {offset}: {other:?}"),
        }
        assert!(largest < 4096, "offset {offset}: allocated {largest} bytes");
    }
}

#[test]
fn inconsistent_ids_and_names_are_rejected() {
    // Entry #1 gets id 1 too.
    assert_eq!(
        decode_err(&patched(82, &[1])),
        FormatError::DuplicateId { id: 1 }
    );
    // next_id 2 is not above id 2.
    assert_eq!(
        decode_err(&patched(16, &[2])),
        FormatError::IdNotBelowNextId { id: 2, next_id: 2 }
    );
    // Entry #1 renamed "deploy": a name used twice.
    let mut bytes = TWO_ENTRIES[..102].to_vec();
    bytes.extend_from_slice(&6u32.to_le_bytes());
    bytes.extend_from_slice(b"deploy");
    bytes.extend_from_slice(&TWO_ENTRIES[115..]);
    assert_eq!(
        decode_err(&bytes),
        FormatError::DuplicateName {
            name: "deploy".into(),
            id: 2
        }
    );
    // An empty name.
    let mut bytes = TWO_ENTRIES[..48].to_vec();
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&TWO_ENTRIES[58..]);
    assert!(matches!(
        decode_err(&bytes),
        FormatError::EmptyName { id: 1, .. }
    ));
}

#[test]
fn open_reports_bad_format_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crab.crmem");
    std::fs::write(&path, &TWO_ENTRIES[..40]).unwrap();
    let err = Memory::open(&path).unwrap_err();
    assert!(matches!(err, MemoryError::BadFormat { .. }));
    let message = err.to_string();
    assert!(message.contains("crab.crmem"), "{message}");
    assert!(message.contains("truncated"), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn reader_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let (_, largest) = largest_allocation_during(|| format::decode(&bytes));
        prop_assert!(largest <= 4096 + bytes.len() * 8);
    }

    #[test]
    fn reader_never_panics_on_mutated_fixtures(
        edits in proptest::collection::vec((0usize..125, any::<u8>()), 1..6),
        cut in 0usize..=125,
    ) {
        let mut bytes = TWO_ENTRIES.to_vec();
        for (at, value) in edits {
            bytes[at] = value;
        }
        bytes.truncate(cut);
        let (result, largest) = largest_allocation_during(|| format::decode(&bytes));
        prop_assert!(largest <= 4096, "allocated {}", largest);
        if let Ok(snapshot) = result {
            // Whatever is accepted re-encodes to the same bytes.
            prop_assert_eq!(format::encode(snapshot.next_id, snapshot.entries.iter()), bytes);
        }
    }
}
