//! The memory store through its public API: ops and their errors, recall
//! ranking against BM25 computed by hand, and random op sequences against a
//! simple model, reopening from disk along the way.

use std::path::{Path, PathBuf};

use crabtalk_memory::{Entry, EntryKind, Memory, MemoryError, Op};
use proptest::prelude::*;

fn add(name: &str, content: &str, aliases: &[&str]) -> Op {
    Op::Add {
        name: name.into(),
        content: content.into(),
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
        kind: EntryKind::Note,
    }
}

fn temp_memory() -> (tempfile::TempDir, PathBuf, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory").join("crab.crmem");
    let memory = Memory::open(&path).unwrap();
    (dir, path, memory)
}

#[test]
fn missing_file_opens_empty_and_is_created_on_first_write() {
    let (_dir, path, mut memory) = temp_memory();
    assert!(memory.is_empty());
    assert!(!path.exists());
    memory.apply(add("a", "x", &[])).unwrap();
    assert!(path.exists());
    assert_eq!(Memory::open(&path).unwrap().len(), 1);
}

#[test]
fn entries_are_addressed_by_name_or_alias() {
    let (_dir, _path, mut memory) = temp_memory();
    let id = memory
        .apply(add("deploy", "steps", &["ship", "release"]))
        .unwrap();
    for name in ["deploy", "ship", "release"] {
        assert_eq!(memory.get(name).unwrap().id, id);
    }
    memory
        .apply(Op::Update {
            name: "ship".into(),
            content: "new steps".into(),
            aliases: vec!["ship".into()],
            rename: None,
        })
        .unwrap();
    let entry = memory.get("deploy").unwrap();
    assert_eq!(entry.content, "new steps");
    assert_eq!(entry.aliases, ["ship"]);
    assert!(memory.get("release").is_none(), "Update replaces aliases");
    memory
        .apply(Op::Remove {
            name: "ship".into(),
        })
        .unwrap();
    assert!(memory.get("deploy").is_none() && memory.get("ship").is_none());
}

#[test]
fn names_and_aliases_are_unique_across_entries() {
    let (_dir, _path, mut memory) = temp_memory();
    memory.apply(add("deploy", "", &["ship"])).unwrap();
    for op in [
        add("ship", "", &[]),
        add("other", "", &["deploy"]),
        Op::Alias {
            name: "deploy".into(),
            aliases: vec!["ok".into(), "ship".into()],
        },
    ] {
        // `Alias` onto its own entry is fine; only the Add ops conflict.
        let result = memory.apply(op.clone());
        if matches!(op, Op::Alias { .. }) {
            assert!(result.is_ok());
            continue;
        }
        match result {
            Err(MemoryError::NameTaken { owner, .. }) => assert_eq!(owner, "deploy"),
            other => panic!("{op:?}: {other:?}"),
        }
    }
    memory.apply(add("other", "", &[])).unwrap();
    let err = memory
        .apply(Op::Alias {
            name: "other".into(),
            aliases: vec!["ok".into()],
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the name \"ok\" is already taken by the entry \"deploy\""
    );
    let err = memory
        .apply(Op::Remove {
            name: "nobody".into(),
        })
        .unwrap_err();
    assert!(matches!(err, MemoryError::NotFound { .. }));
}

#[test]
fn rename_moves_the_canonical_name_and_keeps_identity() {
    let (_dir, _path, mut memory) = temp_memory();
    memory.apply(add("taken", "", &[])).unwrap();
    let id = memory
        .apply_at(
            Op::Add {
                name: "old".into(),
                content: "c".into(),
                aliases: vec!["alt".into()],
                kind: EntryKind::Archive,
            },
            42,
        )
        .unwrap();
    let err = memory
        .apply(Op::Update {
            name: "old".into(),
            content: "c".into(),
            aliases: vec![],
            rename: Some("taken".into()),
        })
        .unwrap_err();
    assert!(matches!(err, MemoryError::NameTaken { .. }));
    // Renaming to one of its own aliases is allowed; the old name is let go.
    memory
        .apply(Op::Update {
            name: "old".into(),
            content: "c2".into(),
            aliases: vec![],
            rename: Some("alt".into()),
        })
        .unwrap();
    let entry = memory.get("alt").unwrap();
    assert_eq!(
        (entry.id, entry.kind, entry.created_at, entry.aliases.len()),
        (id, EntryKind::Archive, 42, 0)
    );
    assert!(memory.get("old").is_none());
}

#[test]
fn invalid_names_and_content_are_refused() {
    let (_dir, path, mut memory) = temp_memory();
    for name in [
        "",
        "   ",
        "a\nb",
        "tab\there",
        &"x".repeat(129),
        &"/".repeat(100),
    ] {
        let err = memory.apply(add(name, "", &[])).unwrap_err();
        assert!(
            matches!(err, MemoryError::InvalidName { .. }),
            "{name:?}: {err}"
        );
        let err = memory.apply(add("fine", "", &[name])).unwrap_err();
        assert!(
            matches!(err, MemoryError::InvalidName { .. }),
            "{name:?}: {err}"
        );
    }
    let huge = "x".repeat(crabtalk_memory::MAX_CONTENT_BYTES + 1);
    let err = memory.apply(add("big", &huge, &[])).unwrap_err();
    assert!(matches!(err, MemoryError::ContentTooLarge { .. }));
    assert!(!path.exists(), "refused ops write nothing");
}

#[test]
fn a_failed_flush_changes_neither_ram_nor_file() {
    let (_dir, path, mut memory) = temp_memory();
    memory.apply(add("keep", "before", &[])).unwrap();
    let before = std::fs::read(&path).unwrap();
    // Block the rename: the target's folder entry becomes a non-empty dir.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("x"), b"").unwrap();
    let err = memory.apply(add("new", "x", &[])).unwrap_err();
    assert!(matches!(err, MemoryError::Io { .. }), "{err}");
    assert!(memory.get("new").is_none());
    assert_eq!(memory.len(), 1);
    assert!(memory.search("x", 10).is_empty());
    std::fs::remove_dir_all(&path).unwrap();
    memory.checkpoint().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn ids_are_never_reused_across_reopen() {
    let (_dir, path, mut memory) = temp_memory();
    let a = memory.apply(add("a", "", &[])).unwrap();
    let b = memory.apply(add("b", "", &[])).unwrap();
    memory.apply(Op::Remove { name: "b".into() }).unwrap();
    drop(memory);
    let mut memory = Memory::open(&path).unwrap();
    let c = memory.apply(add("c", "", &[])).unwrap();
    assert!(a < b && b < c, "{a} {b} {c}");
}

/// Recall against BM25 scores worked out by hand.
///
/// Each entry is indexed as name + aliases + content:
///
/// ```text
/// id 1  deploy | ship | run make release              terms: deploy ship run make release          |d| = 5
/// id 2  cat    |      | the cat sat on the mat        terms: cat the cat sat on the mat            |d| = 7
/// id 3  release-notes | release notes for release two terms: release notes release notes for release two  |d| = 7
/// ```
///
/// N = 3, avgdl = 19/3, k1 = 1.2, b = 0.75, and
/// `score = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl))` with
/// `idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))`.
///
/// - "release": df = 2, idf = ln(1 + 1.5/2.5) = ln 1.6; id 1 has tf 1
///   (|d| 5), id 3 has tf 3 (|d| 7).
/// - "ship cat": ship df 1 (id 1, tf 1), cat df 1 (id 2, tf 2); idf = ln(1 +
///   2.5/1.5) for both.
#[test]
fn recall_matches_hand_computed_bm25() {
    let (_dir, _path, mut memory) = temp_memory();
    memory
        .apply(add("deploy", "run make release", &["ship"]))
        .unwrap();
    memory
        .apply(add("cat", "the cat sat on the mat", &[]))
        .unwrap();
    memory
        .apply(add("release-notes", "release notes for release two", &[]))
        .unwrap();

    let (k1, b, avgdl) = (1.2f64, 0.75f64, 19.0f64 / 3.0);
    let part = |tf: f64, len: f64| tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avgdl));
    let idf_release = (1.0f64 + 1.5 / 2.5).ln();
    let idf_rare = (1.0f64 + 2.5 / 1.5).ln();

    let hits = memory.search("release", 10);
    let got: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.entry.name.as_str(), h.score))
        .collect();
    let expected = [
        ("release-notes", idf_release * part(3.0, 7.0)),
        ("deploy", idf_release * part(1.0, 5.0)),
    ];
    assert_eq!(got.len(), 2);
    for ((name, score), (want_name, want)) in got.iter().zip(expected) {
        assert_eq!(*name, want_name);
        assert!((score - want).abs() < 1e-9, "{name}: {score} vs {want}");
    }

    let hits = memory.search("SHIP, cat!", 10);
    let expected = [
        ("cat", idf_rare * part(2.0, 7.0)),
        ("deploy", idf_rare * part(1.0, 5.0)),
    ];
    assert_eq!(hits.len(), 2);
    for (hit, (want_name, want)) in hits.iter().zip(expected) {
        assert_eq!(hit.entry.name, want_name);
        assert!((hit.score - want).abs() < 1e-9);
    }
    assert_eq!(memory.search("release", 1).len(), 1);
    assert!(memory.search("absent", 10).is_empty());
}

#[test]
fn recall_ties_are_ordered_by_id_and_follow_updates() {
    let (_dir, path, mut memory) = temp_memory();
    for name in ["c", "a", "b"] {
        memory.apply(add(name, "same text", &[])).unwrap();
    }
    let names = |m: &Memory| -> Vec<String> {
        m.search("text", 10)
            .iter()
            .map(|h| h.entry.name.clone())
            .collect()
    };
    assert_eq!(names(&memory), ["c", "a", "b"]);
    memory
        .apply(Op::Update {
            name: "a".into(),
            content: "other words".into(),
            aliases: vec![],
            rename: None,
        })
        .unwrap();
    assert_eq!(names(&memory), ["c", "b"]);
    assert_eq!(memory.search("words", 10)[0].entry.name, "a");
    // The index is rebuilt on open: same ranking after reopening.
    let reopened = Memory::open(&path).unwrap();
    assert_eq!(names(&reopened), ["c", "b"]);
    // Aliases are searchable.
    memory
        .apply(Op::Alias {
            name: "b".into(),
            aliases: vec!["zebra".into()],
        })
        .unwrap();
    assert_eq!(memory.search("zebra", 10)[0].entry.name, "b");
}

// ---- random op sequences against a model ----

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const WORDS: [&str; 3] = ["alpha", "beta", "gamma"];

#[derive(Debug, Clone)]
enum Step {
    Op(Op),
    Reopen,
}

fn name() -> impl Strategy<Value = String> {
    proptest::sample::select(&NAMES[..]).prop_map(str::to_owned)
}

fn names() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(name(), 0..3)
}

fn content() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(&WORDS[..]), 0..3).prop_map(|w| w.join(" "))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (name(), content(), names(), any::<bool>()).prop_map(|(name, content, aliases, archive)| {
            Step::Op(Op::Add {
                name,
                content,
                aliases,
                kind: if archive { EntryKind::Archive } else { EntryKind::Note },
            })
        }),
        2 => (name(), content(), names(), proptest::option::of(name())).prop_map(
            |(name, content, aliases, rename)| Step::Op(Op::Update { name, content, aliases, rename })
        ),
        1 => (name(), names()).prop_map(|(name, aliases)| Step::Op(Op::Alias { name, aliases })),
        1 => name().prop_map(|name| Step::Op(Op::Remove { name })),
        1 => Just(Step::Reopen),
    ]
}

/// The model: entries in id order, looked up by scanning.
#[derive(Debug, Default)]
struct Model {
    next_id: u64,
    entries: Vec<Entry>,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Ok(u64),
    NotFound,
    Taken,
}

impl Model {
    fn resolve(&self, name: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.name == name || e.aliases.iter().any(|a| a == name))
    }

    /// Aliases for an entry named `name` owned by `owner`: repeats and the
    /// name dropped; `None` if one belongs to another entry.
    fn clean(&self, name: &str, aliases: &[String], owner: Option<usize>) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for alias in aliases {
            if alias == name || out.contains(alias) {
                continue;
            }
            if let Some(other) = self.resolve(alias)
                && Some(other) != owner
            {
                return None;
            }
            out.push(alias.clone());
        }
        Some(out)
    }

    fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Add {
                name,
                content,
                aliases,
                kind,
            } => {
                if self.resolve(name).is_some() {
                    return Outcome::Taken;
                }
                let Some(aliases) = self.clean(name, aliases, None) else {
                    return Outcome::Taken;
                };
                let id = self.next_id;
                self.next_id += 1;
                self.entries.push(Entry {
                    id,
                    name: name.clone(),
                    content: content.clone(),
                    aliases,
                    created_at: 0,
                    kind: *kind,
                });
                Outcome::Ok(id)
            }
            Op::Update {
                name,
                content,
                aliases,
                rename,
            } => {
                let Some(i) = self.resolve(name) else {
                    return Outcome::NotFound;
                };
                let new_name = rename
                    .clone()
                    .unwrap_or_else(|| self.entries[i].name.clone());
                if let Some(j) = self.resolve(&new_name)
                    && j != i
                {
                    return Outcome::Taken;
                }
                let Some(aliases) = self.clean(&new_name, aliases, Some(i)) else {
                    return Outcome::Taken;
                };
                let entry = &mut self.entries[i];
                entry.name = new_name;
                entry.content = content.clone();
                entry.aliases = aliases;
                Outcome::Ok(entry.id)
            }
            Op::Alias { name, aliases } => {
                let Some(i) = self.resolve(name) else {
                    return Outcome::NotFound;
                };
                let Some(added) = self.clean(&self.entries[i].name.clone(), aliases, Some(i))
                else {
                    return Outcome::Taken;
                };
                let entry = &mut self.entries[i];
                for alias in added {
                    if !entry.aliases.contains(&alias) {
                        entry.aliases.push(alias);
                    }
                }
                Outcome::Ok(entry.id)
            }
            Op::Remove { name } => {
                let Some(i) = self.resolve(name) else {
                    return Outcome::NotFound;
                };
                Outcome::Ok(self.entries.remove(i).id)
            }
        }
    }
}

fn check_against(memory: &Memory, model: &Model) -> Result<(), TestCaseError> {
    let got: Vec<Entry> = memory.list().cloned().collect();
    prop_assert_eq!(&got, &model.entries);
    for name in NAMES {
        prop_assert_eq!(
            memory.get(name).map(|e| e.id),
            model.resolve(name).map(|i| model.entries[i].id)
        );
    }
    for word in WORDS {
        let mut found: Vec<u64> = memory
            .search(word, 100)
            .iter()
            .map(|h| h.entry.id)
            .collect();
        found.sort_unstable();
        let expected: Vec<u64> = model
            .entries
            .iter()
            .filter(|e| e.content.split(' ').any(|w| w == word))
            .map(|e| e.id)
            .collect();
        prop_assert_eq!(found, expected, "search {}", word);
    }
    Ok(())
}

fn reopen(path: &Path) -> Memory {
    Memory::open(path).expect("a memory written by the store reopens")
}

proptest! {
    // Every successful op is an fsync'd write: keep the case count modest.
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_ops_match_the_model(steps in proptest::collection::vec(step(), 1..14)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.crmem");
        let mut memory = Memory::open(&path).unwrap();
        let mut model = Model { next_id: 1, entries: Vec::new() };
        for step in steps {
            match step {
                Step::Reopen => memory = reopen(&path),
                Step::Op(op) => {
                    let expected = model.apply(&op);
                    let got = match memory.apply_at(op.clone(), 0) {
                        Ok(id) => Outcome::Ok(id),
                        Err(MemoryError::NotFound { .. }) => Outcome::NotFound,
                        Err(MemoryError::NameTaken { .. }) => Outcome::Taken,
                        Err(other) => return Err(TestCaseError::fail(format!("{op:?}: {other}"))),
                    };
                    prop_assert_eq!(got, expected, "{:?}", op);
                }
            }
            check_against(&memory, &model)?;
        }
        check_against(&reopen(&path), &model)?;
    }
}
