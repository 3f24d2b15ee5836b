//! What `remember` and `recall` do to a memory, written once for the two
//! ways in: the memory tools an agent calls (`tools::memory`, which adds
//! the gateway sender's view) and the protocol's `Remember`/`Recall`
//! operations the daemon's user sends (`server.rs`, RFC 0022).
//!
//! A note is saved under its name; a name or alias that already names a
//! note replaces that note's content (and its aliases, when new ones are
//! given). The summaries compaction stores are not notes: saving over one
//! is refused. Recalled content is cut to [`MAX_RECALLED_BYTES`].

use crabtalk_memory::{Entry, EntryKind, Memory, Op};

/// Recall results when the caller asks for no number.
pub(crate) const DEFAULT_RECALL: usize = 5;
/// Most recall results.
pub(crate) const MAX_RECALL: usize = 20;
/// Each recalled entry's content is cut to this many bytes.
pub(crate) const MAX_RECALLED_BYTES: usize = 8 * 1024;

/// A note that was saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Saved {
    /// The note's stored name (an existing note keeps its own when it was
    /// found by an alias).
    pub name: String,
    /// Whether an existing note was replaced.
    pub updated: bool,
}

/// Why a note was not saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SaveError {
    /// The name is that of a compacted conversation's summary.
    #[error(
        "{0:?} is the summary of a compacted conversation, not a note; remember under another name"
    )]
    Summary(String),
    /// The store refused the change (a bad name, the disk).
    #[error("{0}")]
    Store(String),
}

/// Saves `content` as the note `name` (a stored name) in `memory`. Only
/// entries `visible` says the caller may see are found by name; aliases
/// given replace the note's, none keep them.
pub(crate) fn save_note(
    memory: &mut Memory,
    name: &str,
    content: String,
    aliases: Option<Vec<String>>,
    visible: impl Fn(&Entry) -> bool,
) -> Result<Saved, SaveError> {
    let existing = memory
        .get(name)
        .filter(|entry| visible(entry))
        .map(|entry| (entry.name.clone(), entry.kind, entry.aliases.clone()));
    let (op, saved) = match existing {
        Some((_, EntryKind::Archive, _)) => return Err(SaveError::Summary(name.to_owned())),
        Some((canonical, EntryKind::Note, current_aliases)) => (
            Op::Update {
                name: canonical.clone(),
                content,
                aliases: aliases.unwrap_or(current_aliases),
                rename: None,
            },
            Saved {
                name: canonical,
                updated: true,
            },
        ),
        None => (
            Op::Add {
                name: name.to_owned(),
                content,
                aliases: aliases.unwrap_or_default(),
                kind: EntryKind::Note,
            },
            Saved {
                name: name.to_owned(),
                updated: false,
            },
        ),
    };
    memory
        .apply(op)
        .map_err(|err| SaveError::Store(err.to_string()))?;
    Ok(saved)
}

/// The number of entries a recall asked for `limit` returns.
pub(crate) fn recall_limit(limit: Option<usize>) -> usize {
    match limit {
        None | Some(0) => DEFAULT_RECALL,
        Some(limit) => limit.min(MAX_RECALL),
    }
}

/// An entry's content as recall shows it: trimmed and cut to
/// [`MAX_RECALLED_BYTES`] on a character boundary; whether it was cut.
pub(crate) fn recalled_content(entry: &Entry) -> (&str, bool) {
    let content = entry.content.trim();
    if content.len() <= MAX_RECALLED_BYTES {
        return (content, false);
    }
    let mut end = MAX_RECALLED_BYTES;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    (&content[..end], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_finds_the_note_and_a_summary_is_not_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::open(dir.path().join("m.crmem")).unwrap();
        let everything = |_: &Entry| true;
        let saved = save_note(
            &mut memory,
            "deploy",
            "make release".into(),
            Some(vec!["ship".into()]),
            everything,
        )
        .unwrap();
        assert_eq!(
            saved,
            Saved {
                name: "deploy".into(),
                updated: false
            }
        );
        let saved = save_note(&mut memory, "ship", "make tag".into(), None, everything).unwrap();
        assert_eq!(
            saved,
            Saved {
                name: "deploy".into(),
                updated: true
            }
        );
        assert_eq!(memory.get("deploy").unwrap().aliases, ["ship"]);
        // Hidden entries are not found: a new note of the same name is
        // refused by the store rather than replacing what the caller
        // cannot see.
        let hidden = save_note(&mut memory, "deploy", "x".into(), None, |_| false);
        assert!(matches!(hidden, Err(SaveError::Store(_))), "{hidden:?}");
        assert_eq!(memory.get("deploy").unwrap().content, "make tag");

        memory
            .apply(Op::Add {
                name: "compaction-user-1".into(),
                content: "summary".into(),
                aliases: Vec::new(),
                kind: EntryKind::Archive,
            })
            .unwrap();
        let refused = save_note(
            &mut memory,
            "compaction-user-1",
            "x".into(),
            None,
            everything,
        );
        assert_eq!(refused, Err(SaveError::Summary("compaction-user-1".into())));
    }

    #[test]
    fn limits_and_cuts() {
        assert_eq!(recall_limit(None), DEFAULT_RECALL);
        assert_eq!(recall_limit(Some(0)), DEFAULT_RECALL);
        assert_eq!(recall_limit(Some(3)), 3);
        assert_eq!(recall_limit(Some(999)), MAX_RECALL);
        let entry = Entry {
            name: "long".into(),
            content: "é".repeat(MAX_RECALLED_BYTES),
            ..sample()
        };
        let (shown, cut) = recalled_content(&entry);
        assert!(cut && shown.len() <= MAX_RECALLED_BYTES && shown.len() % 2 == 0);
        let entry = Entry {
            content: "  short \n".into(),
            ..sample()
        };
        assert_eq!(recalled_content(&entry), ("short", false));
    }

    fn sample() -> Entry {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::open(dir.path().join("m.crmem")).unwrap();
        memory
            .apply(Op::Add {
                name: "n".into(),
                content: "c".into(),
                aliases: Vec::new(),
                kind: EntryKind::Note,
            })
            .unwrap();
        memory.get("n").unwrap().clone()
    }
}
