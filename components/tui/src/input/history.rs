//! Input history, kept in `$CRABTALK_HOME/tui/history`.
//!
//! One entry per line, each a JSON string, so entries with newlines (a
//! multi-line message) survive intact and a damaged line costs only itself.
//! Every addition re-reads the file, appends, trims to [`LIMIT`] and
//! rewrites it with `write_atomic_private` (0600: what someone typed can be
//! private), so two TUIs running at once merge their histories instead of
//! overwriting each other, and a crash never leaves half a file.

use std::io;
use std::path::{Path, PathBuf};

use crabtalk_home::{Home, write_atomic_private};

/// Most entries kept.
pub(crate) const LIMIT: usize = 1000;

/// Longest entry kept, in bytes (a pasted novel is not history).
const MAX_ENTRY: usize = 64 * 1024;

/// The history of entered lines, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    path: Option<PathBuf>,
    entries: Vec<String>,
}

impl History {
    /// The history file of `home`.
    pub(crate) fn path_in(home: &Home) -> PathBuf {
        home.root().join("tui").join("history")
    }

    /// A history that is not saved.
    pub(crate) fn in_memory() -> Self {
        Self::default()
    }

    /// Loads the history at `path` (missing or unreadable: empty).
    pub(crate) fn load(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let entries = read_entries(&path);
        Self {
            path: Some(path),
            entries,
        }
    }

    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[String] {
        &self.entries
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn get(&self, index: usize) -> Option<&str> {
        self.entries.get(index).map(String::as_str)
    }

    /// Adds an entry (not blank ones, nor a repeat of the last) and saves.
    pub(crate) fn add(&mut self, entry: &str) -> io::Result<()> {
        if entry.trim().is_empty() || entry.len() > MAX_ENTRY {
            return Ok(());
        }
        let Some(path) = self.path.clone() else {
            push_entry(&mut self.entries, entry);
            return Ok(());
        };
        // Merge with what other sessions saved meanwhile.
        let mut entries = read_entries(&path);
        push_entry(&mut entries, entry);
        let mut contents = String::new();
        for entry in &entries {
            contents.push_str(&serde_json::Value::String(entry.clone()).to_string());
            contents.push('\n');
        }
        self.entries = entries;
        write_atomic_private(&path, contents.as_bytes())
    }
}

fn push_entry(entries: &mut Vec<String>, entry: &str) {
    if entries.last().map(String::as_str) != Some(entry) {
        entries.push(entry.to_owned());
    }
    if entries.len() > LIMIT {
        let excess = entries.len() - LIMIT;
        entries.drain(..excess);
    }
}

fn read_entries(path: &Path) -> Vec<String> {
    let Ok(contents) = std::fs::read(path) else {
        return Vec::new();
    };
    let contents = String::from_utf8_lossy(&contents);
    let mut entries: Vec<String> = contents
        .lines()
        .filter_map(|line| serde_json::from_str::<String>(line).ok())
        .filter(|entry| !entry.trim().is_empty())
        .collect();
    if entries.len() > LIMIT {
        let excess = entries.len() - LIMIT;
        entries.drain(..excess);
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_line_entries_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tui").join("history");
        let mut history = History::load(&path);
        history.add("first").unwrap();
        history.add("two\nlines \"quoted\" 蟹🦀").unwrap();
        history.add("two\nlines \"quoted\" 蟹🦀").unwrap();
        history.add("   ").unwrap();
        let reloaded = History::load(&path);
        assert_eq!(reloaded.entries(), ["first", "two\nlines \"quoted\" 蟹🦀"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn two_sessions_merge_and_damaged_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history");
        let mut one = History::load(&path);
        let mut two = History::load(&path);
        one.add("from one").unwrap();
        two.add("from two").unwrap();
        assert_eq!(two.entries(), ["from one", "from two"]);
        let mut contents = std::fs::read(&path).unwrap();
        contents.extend_from_slice(b"{not json\n\xff\xfe\n\"ok\"\n");
        std::fs::write(&path, contents).unwrap();
        assert_eq!(
            History::load(&path).entries(),
            ["from one", "from two", "ok"]
        );
    }

    #[test]
    fn the_history_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history");
        let lines: String = (0..LIMIT + 10)
            .map(|n| format!("\"entry {n}\"\n"))
            .collect();
        std::fs::write(&path, lines).unwrap();
        let mut history = History::load(&path);
        assert_eq!(history.len(), LIMIT);
        history.add("newest").unwrap();
        assert_eq!(History::load(&path).len(), LIMIT);
        assert_eq!(history.get(LIMIT - 1), Some("newest"));
    }
}
