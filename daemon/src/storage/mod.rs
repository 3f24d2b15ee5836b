//! Conversations on disk.
//!
//! ```text
//! sessions/<agent>/<sender>.jsonl       the append-only log (see `log`)
//! sessions/<agent>/<sender>.meta.json   the metadata sidecar (see `meta`)
//! ```
//!
//! `<agent>` and `<sender>` are escaped (see `names`), so every name maps to
//! a distinct file inside `sessions/`. Clients address stored conversations
//! by an opaque [`Handle`] (`<agent>/<sender>` in escaped form); a handle
//! from a client is checked to be something this module could have issued
//! before it is turned into a path.

pub mod entry;
mod log;
mod meta;
pub mod names;
pub mod numbering;

use std::io;
use std::path::{Path, PathBuf};

pub use self::entry::{CompactMarker, Entry, Message, Role, ToolCallRecord, now_rfc3339};
pub use self::log::{LoadedHistory, SessionLog, read_entries};
pub use self::meta::Meta;

/// An opaque name for a stored conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Handle(String);

impl Handle {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The encoded agent and sender halves.
    pub fn halves(&self) -> (&str, &str) {
        self.0.split_once('/').unwrap_or((&self.0, ""))
    }
}

impl std::fmt::Display for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a handle was refused.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    #[error("{0:?} is not a conversation handle; use one returned by ListConversations")]
    Malformed(String),
    #[error("no stored conversation has the handle {0:?}")]
    NotFound(String),
}

/// The files of one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationFiles {
    pub handle: Handle,
    pub log: PathBuf,
    pub meta: PathBuf,
}

/// A stored conversation, as listed.
#[derive(Debug, Clone)]
pub struct StoredConversation {
    pub files: ConversationFiles,
    pub meta: Meta,
}

/// The `sessions/` folder.
#[derive(Debug, Clone)]
pub struct Storage {
    dir: PathBuf,
}

impl Storage {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files of the conversation `(agent, sender)`.
    pub fn files(&self, agent: &str, sender: &str) -> ConversationFiles {
        self.files_encoded(&names::encode(agent), &names::encode(sender))
    }

    fn files_encoded(&self, agent: &str, sender: &str) -> ConversationFiles {
        let folder = self.dir.join(agent);
        ConversationFiles {
            handle: Handle(format!("{agent}/{sender}")),
            log: folder.join(format!("{sender}.jsonl")),
            meta: folder.join(format!("{sender}.meta.json")),
        }
    }

    /// Turns a client's handle into files, refusing anything this module
    /// would not have issued and anything that does not exist.
    pub fn resolve(&self, handle: &str) -> Result<ConversationFiles, HandleError> {
        let malformed = || HandleError::Malformed(handle.to_owned());
        let (agent, sender) = handle.split_once('/').ok_or_else(malformed)?;
        if !names::is_encoded(agent) || !names::is_encoded(sender) {
            return Err(malformed());
        }
        let files = self.files_encoded(agent, sender);
        if !files.meta.is_file() && !files.log.is_file() {
            return Err(HandleError::NotFound(handle.to_owned()));
        }
        Ok(files)
    }

    /// Every stored conversation, optionally of one agent and/or one sender,
    /// newest first.
    pub fn list(
        &self,
        agent: Option<&str>,
        sender: Option<&str>,
    ) -> io::Result<Vec<StoredConversation>> {
        let folders: Vec<String> = match agent {
            Some(agent) => vec![names::encode(agent)],
            None => read_names(&self.dir, |name| {
                names::is_encoded(name).then(|| name.to_owned())
            })?,
        };
        let mut found = Vec::new();
        for folder in folders {
            let senders = read_names(&self.dir.join(&folder), |name| {
                name.strip_suffix(".meta.json")
                    .filter(|s| names::is_encoded(s))
                    .map(str::to_owned)
            })?;
            for encoded_sender in senders {
                let files = self.files_encoded(&folder, &encoded_sender);
                let Ok(Some(meta)) = Meta::load(&files.meta) else {
                    continue;
                };
                if sender.is_some_and(|sender| sender != meta.sender) {
                    continue;
                }
                found.push(StoredConversation { files, meta });
            }
        }
        found.sort_by(|a, b| {
            b.meta
                .updated_at
                .cmp(&a.meta.updated_at)
                .then_with(|| a.files.handle.0.cmp(&b.files.handle.0))
        });
        Ok(found)
    }

    /// Every conversation log under `sessions/`, whether or not its
    /// metadata is readable (for rebuilding the session index).
    pub fn logs(&self) -> io::Result<Vec<ConversationFiles>> {
        let folders = read_names(&self.dir, |name| {
            names::is_encoded(name).then(|| name.to_owned())
        })?;
        let mut found = Vec::new();
        for folder in folders {
            found.extend(self.logs_in(&folder)?);
        }
        found.sort_by(|a, b| a.handle.0.cmp(&b.handle.0));
        Ok(found)
    }

    /// The logs of `agent`'s conversations.
    pub fn logs_of(&self, agent: &str) -> io::Result<Vec<ConversationFiles>> {
        self.logs_in(&names::encode(agent))
    }

    fn logs_in(&self, folder: &str) -> io::Result<Vec<ConversationFiles>> {
        let senders = read_names(&self.dir.join(folder), |name| {
            name.strip_suffix(".jsonl")
                .filter(|s| names::is_encoded(s))
                .map(str::to_owned)
        })?;
        Ok(senders
            .iter()
            .map(|sender| self.files_encoded(folder, sender))
            .collect())
    }

    /// The handle `(agent, sender)` has (whether or not it exists).
    pub fn handle(&self, agent: &str, sender: &str) -> Handle {
        Handle(format!(
            "{}/{}",
            names::encode(agent),
            names::encode(sender)
        ))
    }

    /// Deletes a conversation's files.
    pub fn delete(&self, files: &ConversationFiles) -> io::Result<()> {
        for path in [&files.log, &files.meta] {
            match std::fs::remove_file(path) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                _ => {}
            }
        }
        Ok(())
    }

    /// The folder of `agent`'s conversations, if it exists.
    pub fn agent_folder(&self, agent: &str) -> Option<PathBuf> {
        let folder = self.dir.join(names::encode(agent));
        folder.exists().then_some(folder)
    }

    /// Moves an agent's conversations to a new agent name.
    pub fn rename_agent(&self, old: &str, new: &str) -> io::Result<()> {
        let from = self.dir.join(names::encode(old));
        let to = self.dir.join(names::encode(new));
        if !from.is_dir() {
            return Ok(());
        }
        if to.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", to.display()),
            ));
        }
        std::fs::rename(&from, &to)?;
        for stored in self.list(Some(new), None)? {
            let mut meta = stored.meta;
            meta.agent = new.to_owned();
            meta.save(&stored.files.meta)?;
        }
        Ok(())
    }
}

/// Names in `dir` mapped through `keep`; a missing folder has none.
fn read_names(dir: &Path, keep: impl Fn(&str) -> Option<String>) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    Ok(entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| keep(&name))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(storage: &Storage, agent: &str, sender: &str, updated: &str) -> ConversationFiles {
        let files = storage.files(agent, sender);
        let meta = Meta {
            agent: agent.into(),
            sender: sender.into(),
            updated_at: updated.into(),
            ..Default::default()
        };
        meta.save(&files.meta).unwrap();
        SessionLog::new(&files.log)
            .append(&Entry::Message(Message::user("hi")))
            .unwrap();
        files
    }

    #[test]
    fn hostile_senders_stay_distinct_and_inside_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path().join("sessions"));
        let senders = ["../../x", "a/b", "a b", "a-b", "", "tg:1"];
        for (i, sender) in senders.iter().enumerate() {
            create(&storage, "crab", sender, &format!("2026-01-0{}", i + 1));
        }
        let listed = storage.list(Some("crab"), None).unwrap();
        assert_eq!(listed.len(), senders.len());
        for stored in &listed {
            assert!(stored.files.log.starts_with(storage.dir()));
            let canonical = stored.files.log.canonicalize().unwrap();
            assert!(canonical.starts_with(storage.dir().canonicalize().unwrap()));
        }
        assert!(!dir.path().join("x.jsonl").exists());
        let by_sender = storage.list(None, Some("a b")).unwrap();
        assert_eq!(by_sender.len(), 1);
        assert_eq!(by_sender[0].meta.sender, "a b");
    }

    #[test]
    fn handles_resolve_only_when_issued_and_present() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path());
        let files = create(&storage, "crab", "user", "t");
        assert_eq!(storage.resolve(files.handle.as_str()).unwrap(), files);
        for bad in [
            "../crab/user",
            "crab/../../etc/passwd",
            "/etc/passwd",
            "crab",
            "crab/user/x",
            "crab/us.er",
        ] {
            assert!(
                matches!(storage.resolve(bad), Err(HandleError::Malformed(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            storage.resolve("crab/nobody"),
            Err(HandleError::NotFound(_))
        ));
    }

    #[test]
    fn listing_is_newest_first_and_rename_moves_everything() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path());
        create(&storage, "crab", "old", "2026-01-01T00:00:00Z");
        create(&storage, "crab", "new", "2026-02-01T00:00:00Z");
        create(&storage, "scout", "user", "2026-01-15T00:00:00Z");
        let all: Vec<_> = storage
            .list(None, None)
            .unwrap()
            .into_iter()
            .map(|s| s.meta.sender)
            .collect();
        assert_eq!(all, ["new", "user", "old"]);
        storage.rename_agent("crab", "crabby").unwrap();
        let moved = storage.list(Some("crabby"), None).unwrap();
        assert_eq!(moved.len(), 2);
        assert!(moved.iter().all(|s| s.meta.agent == "crabby"));
        assert!(storage.list(Some("crab"), None).unwrap().is_empty());
    }
}
