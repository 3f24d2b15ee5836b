//! What a memory holds: entries, their kinds, and the rules for names.

/// What wrote an entry. Fixed for the life of the entry: to change it, remove
/// the entry and add it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryKind {
    /// Written by the agent (`remember` / `forget`). CRMEM value 0.
    Note,
    /// Written by compaction: the summary of an archived conversation prefix.
    /// CRMEM value 1.
    Archive,
}

impl EntryKind {
    /// The `kind` value in a CRMEM file.
    pub fn code(self) -> u32 {
        match self {
            EntryKind::Note => 0,
            EntryKind::Archive => 1,
        }
    }

    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(EntryKind::Note),
            1 => Some(EntryKind::Archive),
            _ => None,
        }
    }

    /// The dump folder for this kind (`notes/`, `archives/`).
    pub fn folder(self) -> &'static str {
        match self {
            EntryKind::Note => "notes",
            EntryKind::Archive => "archives",
        }
    }
}

/// One memory entry. Addressed by `name` or any of `aliases`; every name and
/// alias is unique across the whole memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Monotonic, never reused within one file.
    pub id: u64,
    /// The canonical name.
    pub name: String,
    pub content: String,
    /// Other names that resolve to this entry, in the order they were given.
    pub aliases: Vec<String>,
    /// Unix seconds.
    pub created_at: u64,
    pub kind: EntryKind,
}

impl Entry {
    /// The text recall ranks this entry by: name, aliases and content.
    pub(crate) fn indexed_text(&self) -> String {
        let mut text = String::with_capacity(
            self.name.len()
                + self.content.len()
                + self.aliases.iter().map(|a| a.len() + 1).sum::<usize>()
                + 2,
        );
        text.push_str(&self.name);
        for alias in &self.aliases {
            text.push('\n');
            text.push_str(alias);
        }
        text.push('\n');
        text.push_str(&self.content);
        text
    }
}

/// The longest name or alias, in bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// The largest content of one entry, in bytes.
pub const MAX_CONTENT_BYTES: usize = 4 * 1024 * 1024;

/// Checks a name or alias given to a write op; `Err` says why it is refused.
pub(crate) fn check_name(name: &str) -> Result<(), &'static str> {
    if name.trim().is_empty() {
        return Err("a name must have a visible character");
    }
    if name.len() > MAX_NAME_BYTES {
        return Err("a name is at most 128 bytes");
    }
    if name.chars().any(char::is_control) {
        return Err("a name must not contain control characters (newlines, tabs, ...)");
    }
    if crate::file_name::encode(name).len() > crate::file_name::MAX_STEM_BYTES {
        return Err("the name is too long to be a file name once escaped; shorten it");
    }
    Ok(())
}
