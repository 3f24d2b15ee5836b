//! Every agent's long-term memory: one [`Memory`] per agent, in
//! `memory/<agent>.crmem`, opened on first use and kept open.
//!
//! The runtime owns this, not the swappable snapshot, so a reload carries
//! every open memory over and a memory is never opened twice. Each agent's
//! memory has its own lock; memory operations block on the disk (one atomic
//! write per change), so callers run them off the async workers
//! ([`Memories::run`]).
//!
//! **File names.** `<agent>` is the agent name escaped by
//! [`file_name::encode`] — the
//! rule the memory dump uses for entry names. Agent names are already
//! restricted to letters, digits, `-`, `_` and `.`, so in practice the file
//! is the agent's name (`memory/crab.crmem`), readable by people and by
//! `crabtalkd memory dump|load`.
//!
//! The runtime creates one [`Memories`] and hands it to the memory tools;
//! neither reaches the other through it. [`archive`] names the summaries
//! that compaction stores here; [`notes`] is what saving and recalling do,
//! for the memory tools and the protocol's `Remember`/`Recall` alike.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crabtalk_memory::{Memory, MemoryError, file_name};

pub(crate) mod archive;
pub(crate) mod notes;

/// One agent's memory, opened when first needed.
type Slot = Arc<Mutex<Option<Memory>>>;

/// The memories of every agent that has used its memory since start.
pub(crate) struct Memories {
    dir: PathBuf,
    slots: Mutex<HashMap<String, Slot>>,
}

/// Where `agent`'s memory is kept, under a home's `memory/` folder.
pub(crate) fn memory_file(dir: &Path, agent: &str) -> PathBuf {
    dir.join(format!("{}.crmem", file_name::encode(agent)))
}

impl Memories {
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The file of `agent`'s memory.
    pub(crate) fn file(&self, agent: &str) -> PathBuf {
        memory_file(&self.dir, agent)
    }

    fn slot(&self, agent: &str) -> Slot {
        self.slots
            .lock()
            .entry(agent.to_owned())
            .or_default()
            .clone()
    }

    /// Runs `f` on `agent`'s memory, opening it first if needed. Blocks: on
    /// the agent's lock, and on the disk. A memory that cannot be opened
    /// (a damaged file) is tried again next time.
    pub(crate) fn with<R>(
        &self,
        agent: &str,
        f: impl FnOnce(&mut Memory) -> R,
    ) -> Result<R, MemoryError> {
        let slot = self.slot(agent);
        let mut guard = slot.lock();
        if guard.is_none() {
            let memory = Memory::open(self.file(agent))?;
            tracing::debug!(
                "memory of agent {agent}: opened {} ({} entries)",
                memory.path().display(),
                memory.len()
            );
            *guard = Some(memory);
        }
        Ok(f(guard.as_mut().expect("opened above")))
    }

    /// [`with`](Memories::with) on a blocking thread.
    pub(crate) async fn run<R: Send + 'static>(
        self: &Arc<Self>,
        agent: &str,
        f: impl FnOnce(&mut Memory) -> R + Send + 'static,
    ) -> Result<R, MemoryError> {
        let memories = self.clone();
        let agent = agent.to_owned();
        tokio::task::spawn_blocking(move || memories.with(&agent, f))
            .await
            .unwrap_or_else(|join| {
                Err(MemoryError::Io {
                    path: PathBuf::new(),
                    source: io::Error::other(format!("the memory operation failed: {join}")),
                })
            })
    }

    /// Whether the memory file of `agent` exists.
    pub(crate) fn exists(&self, agent: &str) -> bool {
        self.file(agent).is_file()
    }

    /// Moves `old`'s memory to `new` (agent rename): waits for an operation
    /// in progress, closes it, and renames the file. Refuses when `new`
    /// already has a memory file (say, left by a deleted agent).
    pub(crate) fn rename(&self, old: &str, new: &str) -> io::Result<()> {
        let from = self.file(old);
        let to = self.file(new);
        if to.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} already exists (a memory left by an earlier agent {new:?}); move it aside first",
                    to.display()
                ),
            ));
        }
        // Holding the table keeps anyone from opening either name meanwhile.
        let mut slots = self.slots.lock();
        if let Some(slot) = slots.remove(old) {
            drop(slot.lock().take());
        }
        slots.remove(new);
        match std::fs::rename(&from, &to) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crabtalk_memory::{EntryKind, Op};

    fn note(name: &str) -> Op {
        Op::Add {
            name: name.into(),
            content: format!("about {name}"),
            aliases: Vec::new(),
            kind: EntryKind::Note,
        }
    }

    #[test]
    fn a_memory_is_opened_once_and_follows_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let memories = Memories::new(dir.path());
        assert_eq!(memories.file("crab"), dir.path().join("crab.crmem"));
        memories
            .with("crab", |m| m.apply(note("deploy")))
            .unwrap()
            .unwrap();
        // The open memory is used, not the file: delete the file under it.
        std::fs::remove_file(memories.file("crab")).unwrap();
        let found = memories
            .with("crab", |m| m.get("deploy").is_some())
            .unwrap();
        assert!(found);
        memories.with("crab", |m| m.checkpoint()).unwrap().unwrap();

        memories.rename("crab", "crabby").unwrap();
        assert!(!memories.exists("crab") && memories.exists("crabby"));
        let found = memories
            .with("crabby", |m| m.get("deploy").is_some())
            .unwrap();
        assert!(found);
        memories
            .with("other", |m| m.apply(note("x")))
            .unwrap()
            .unwrap();
        let err = memories.rename("crabby", "other").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    }
}
