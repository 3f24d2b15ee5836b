//! Dump to an mdbook tree and load it back: round trips, hostile names, and
//! a bad tree that changes nothing.

use std::fs;
use std::path::Path;

use crabtalk_memory::{Entry, EntryKind, Memory, MemoryError, Op};

fn memory_with(entries: &[(&str, &str, &[&str], EntryKind, u64)]) -> (tempfile::TempDir, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let mut memory = Memory::open(dir.path().join("crab.crmem")).unwrap();
    for (name, content, aliases, kind, created_at) in entries {
        memory
            .apply_at(
                Op::Add {
                    name: name.to_string(),
                    content: content.to_string(),
                    aliases: aliases.iter().map(|a| a.to_string()).collect(),
                    kind: *kind,
                },
                *created_at,
            )
            .unwrap();
    }
    (dir, memory)
}

/// Entries without ids, in a stable order, for comparing memories.
fn contents(memory: &Memory) -> Vec<(String, String, Vec<String>, EntryKind, u64)> {
    let mut out: Vec<_> = memory
        .list()
        .map(|e: &Entry| {
            (
                e.name.clone(),
                e.content.clone(),
                e.aliases.clone(),
                e.kind,
                e.created_at,
            )
        })
        .collect();
    out.sort();
    out
}

fn sample() -> (tempfile::TempDir, Memory) {
    memory_with(&[
        (
            "deploy",
            "prod rollout steps ...\n\n## twice\n",
            &["ship", "release"],
            EntryKind::Note,
            1_776_162_225,
        ),
        (
            "a/b",
            "slash <in> & name",
            &["x&y", "<tag>"],
            EntryKind::Note,
            10,
        ),
        ("../escape", "dots", &[], EntryKind::Note, 11),
        ("会议 notes", "中文内容", &["会议"], EntryKind::Note, 12),
        (
            "archive-1",
            "summary\r\nwith CRLF",
            &[],
            EntryKind::Archive,
            13,
        ),
        ("empty", "", &[], EntryKind::Archive, 14),
    ])
}

#[test]
fn dump_writes_the_rfc_tree() {
    let (_home, memory) = sample();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("brain");
    assert_eq!(memory.dump(&dir).unwrap(), 6);

    let book = fs::read_to_string(dir.join("book.toml")).unwrap();
    assert!(book.contains("src = \".\""), "{book}");
    let deploy = fs::read_to_string(dir.join("notes/deploy.md")).unwrap();
    assert_eq!(
        deploy,
        "<div id=\"meta\">\n<dl>\n  <dt>Created</dt>\n  <dd><time datetime=\"2026-04-14T10:23:45Z\">2026-04-14T10:23:45Z</time></dd>\n  <dt>Aliases</dt>\n  <dd><ul><li>ship</li><li>release</li></ul></dd>\n</dl>\n</div>\n\nprod rollout steps ...\n\n## twice\n"
    );
    assert!(dir.join("archives/archive-1.md").is_file());
    let summary = fs::read_to_string(dir.join("SUMMARY.md")).unwrap();
    assert!(summary.starts_with("# Summary\n"), "{summary}");
    assert!(summary.contains("- [deploy](notes/deploy.md)"), "{summary}");
    assert!(summary.contains("# Archives"), "{summary}");
}

#[test]
fn hostile_names_stay_inside_their_folder() {
    let (_home, memory) = sample();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("brain");
    memory.dump(&dir).unwrap();
    // Nothing escaped the tree, and each entry is one file in its folder.
    let mut top: Vec<String> = fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    top.sort();
    assert_eq!(top, ["brain"]);
    let mut notes: Vec<String> = fs::read_dir(dir.join("notes"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            assert!(e.file_type().unwrap().is_file());
            e.file_name().into_string().unwrap()
        })
        .collect();
    notes.sort();
    assert_eq!(
        notes,
        ["%2E.%2Fescape.md", "a%2Fb.md", "deploy.md", "会议 notes.md"]
    );
}

#[test]
fn dump_then_load_round_trips() {
    let (_home, memory) = sample();
    let out = tempfile::tempdir().unwrap();
    memory.dump(out.path()).unwrap();

    let (_other_home, mut other) =
        memory_with(&[("stale", "gone after load", &[], EntryKind::Note, 1)]);
    assert_eq!(other.load(out.path()).unwrap(), 6);
    assert_eq!(contents(&other), contents(&memory));
    assert!(other.get("stale").is_none());
    assert_eq!(other.get("会议").unwrap().name, "会议 notes");
    assert_eq!(other.search("slash", 5)[0].entry.name, "a/b");
    // The load was flushed: it survives a reopen, and ids kept growing.
    let reopened = Memory::open(other.path()).unwrap();
    assert_eq!(contents(&reopened), contents(&memory));
    assert!(reopened.list().all(|e| e.id >= 2));
}

#[test]
fn dump_clears_kind_folders_and_keeps_everything_else() {
    let (_home, memory) = sample();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path();
    fs::create_dir_all(dir.join("notes")).unwrap();
    fs::write(dir.join("notes/orphan.md"), "old").unwrap();
    fs::write(dir.join("book.toml"), "[book]\ntitle = \"Mine\"\n").unwrap();
    fs::create_dir_all(dir.join("theme")).unwrap();
    fs::write(dir.join("theme/custom.css"), "x").unwrap();
    memory.dump(dir).unwrap();
    assert!(!dir.join("notes/orphan.md").exists());
    assert_eq!(
        fs::read_to_string(dir.join("book.toml")).unwrap(),
        "[book]\ntitle = \"Mine\"\n"
    );
    assert!(dir.join("theme/custom.css").exists());
}

#[test]
fn hand_written_files_load() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path();
    fs::create_dir_all(dir.join("notes")).unwrap();
    fs::write(dir.join("notes/plain.md"), "no meta block at all").unwrap();
    fs::write(
        dir.join("notes/edited.md"),
        "<div id=\"meta\">\n<dl>\n<dt>Created</dt>\n<dd><time datetime=\"2026-04-14T12:23:45+02:00\">x</time></dd>\n<dt>Aliases</dt>\n<dd><ul>\n<li>one</li>\n<li>t&amp;wo</li>\n</ul></dd>\n</dl>\n</div>\r\n\r\nbody",
    )
    .unwrap();
    fs::write(dir.join("notes/.edited.md.swp"), [0xff, 0xfe]).unwrap();
    fs::write(dir.join("notes/readme.txt"), "ignored").unwrap();
    let (_home, mut memory) = memory_with(&[]);
    assert_eq!(memory.load(dir).unwrap(), 2);
    let edited = memory.get("t&wo").unwrap();
    assert_eq!(
        (
            edited.name.as_str(),
            edited.content.as_str(),
            edited.created_at
        ),
        ("edited", "body", 1_776_162_225)
    );
    assert_eq!(memory.get("plain").unwrap().content, "no meta block at all");
}

fn assert_load_refused(setup: impl FnOnce(&Path), expect: &str) {
    let (_home, mut memory) = sample();
    let before = contents(&memory);
    let file_before = fs::read(memory.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    memory.dump(out.path()).unwrap();
    setup(out.path());
    let err = memory.load(out.path()).unwrap_err();
    assert!(matches!(err, MemoryError::Tree { .. }), "{err}");
    assert!(err.to_string().contains(expect), "{err}");
    assert_eq!(contents(&memory), before);
    assert_eq!(fs::read(memory.path()).unwrap(), file_before);
}

#[test]
fn a_bad_tree_changes_nothing() {
    assert_load_refused(
        |dir| {
            fs::write(dir.join("notes/dup.md"), "<div id=\"meta\">\n<dl><dt>Aliases</dt><dd><ul><li>ship</li></ul></dd></dl>\n</div>\n\nx").unwrap()
        },
        "\"ship\" is also used by",
    );
    assert_load_refused(
        |dir| fs::write(dir.join("archives/deploy.md"), "same name, other kind").unwrap(),
        "\"deploy\" is also used by",
    );
    assert_load_refused(
        |dir| fs::write(dir.join("notes/bad%zz.md"), "x").unwrap(),
        "not a valid escaped entry name",
    );
    assert_load_refused(
        |dir| fs::write(dir.join("notes/binary.md"), [0x66, 0xff, 0x00]).unwrap(),
        "not valid UTF-8",
    );
    assert_load_refused(
        |dir| {
            fs::write(
                dir.join("notes/late.md"),
                "<div id=\"meta\"><time datetime=\"yesterday\"></time></div>\n\nx",
            )
            .unwrap()
        },
        "is not an RFC 3339 time",
    );
    assert_load_refused(
        |dir| fs::write(dir.join("notes/open.md"), "<div id=\"meta\">\nnever closed").unwrap(),
        "is not closed",
    );
    assert_load_refused(
        |dir| {
            fs::write(
                dir.join("notes/ctl.md"),
                "<div id=\"meta\"><dt>Aliases</dt><dd><ul><li>a\tb</li></ul></dd></div>\n\nx",
            )
            .unwrap()
        },
        "invalid alias",
    );
}

#[test]
fn load_refuses_a_folder_that_is_not_a_dump() {
    let (_home, mut memory) = sample();
    let before = contents(&memory);
    let empty = tempfile::tempdir().unwrap();
    let err = memory.load(empty.path()).unwrap_err();
    assert!(err.to_string().contains("not a memory dump"), "{err}");
    let err = memory.load(&empty.path().join("missing")).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
    assert_eq!(contents(&memory), before);
}

#[test]
fn names_differing_only_in_case_refuse_to_dump() {
    let (_home, memory) = memory_with(&[
        ("Deploy", "a", &[], EntryKind::Note, 1),
        ("deploy", "b", &[], EntryKind::Note, 2),
    ]);
    let out = tempfile::tempdir().unwrap();
    let err = memory.dump(out.path()).unwrap_err();
    assert!(err.to_string().contains("differ only in case"), "{err}");
    assert!(!out.path().join("notes").exists(), "nothing was written");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Any valid names and any content survive dump → load unchanged.
    #[test]
    fn random_memories_round_trip(
        entries in proptest::collection::btree_map(
            "[a-zA-Z0-9 ./%\\\\:*?<>|\"'&é会-]{1,20}",
            ("(?s).{0,60}", proptest::bool::ANY, 0u64..4_000_000_000),
            1..6,
        )
    ) {
        // Keep one name per case-folded spelling (the dump refuses others)
        // and names with a visible character.
        let mut seen = std::collections::HashSet::new();
        let entries: Vec<_> = entries
            .into_iter()
            .filter(|(name, _)| !name.trim().is_empty() && seen.insert(name.to_lowercase()))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::open(dir.path().join("a.crmem")).unwrap();
        for (name, (content, archive, at)) in &entries {
            memory.apply_at(Op::Add {
                name: name.clone(),
                content: content.clone(),
                aliases: vec![],
                kind: if *archive { EntryKind::Archive } else { EntryKind::Note },
            }, *at).unwrap();
        }
        let tree = dir.path().join("tree");
        memory.dump(&tree).unwrap();
        let mut loaded = Memory::open(dir.path().join("b.crmem")).unwrap();
        loaded.load(&tree).unwrap();
        proptest::prop_assert_eq!(contents(&loaded), contents(&memory));
    }
}
