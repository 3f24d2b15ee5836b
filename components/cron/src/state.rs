//! `cron/state.json`: what the engine has decided about each entry's
//! slots, written atomically (compact JSON) before slots are fired (their
//! claims, all of one tick in one write) and after they finish. A slot at
//! or before `last_slot` is never fired again, so a restart cannot fire
//! anything twice; a claim still `running` at start was cut short by a
//! crash and is recorded `unknown`. A slot `held` back behind a run that
//! only waited for the daemon is on disk too, so a crash cannot lose it:
//! at start it runs if its window is still open, else it is recorded.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use crabtalk_home::{Home, write_atomic_private};
use serde::{Deserialize, Serialize};

use crate::runlog::Status;

/// A slot that was fired and had not finished when last written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub slot: DateTime<Utc>,
    pub started: DateTime<Utc>,
    /// `schedule`, `catch-up` or `manual`.
    pub by: String,
}

/// A slot held back because the entry's previous run was still waiting
/// for the daemon (RFC 0052): it starts when that run gives up, or at the
/// next start of the service if a crash came first, as long as its window
/// is open; otherwise it is recorded `missed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub slot: DateTime<Utc>,
    /// Where its window ends: it may still start before then.
    pub until: DateTime<Utc>,
    /// `schedule` or `catch-up`.
    pub by: String,
}

/// One entry's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryState {
    /// When the entry (with its current schedule) was first seen: slots
    /// before this are not its business.
    pub seen: DateTime<Utc>,
    /// The schedule it was seen with (`cron=… tz=…`); a change starts
    /// the entry afresh.
    #[serde(default)]
    pub schedule: String,
    /// The newest slot decided (fired, missed, quiet, overlapping).
    #[serde(default)]
    pub last_slot: Option<DateTime<Utc>>,
    #[serde(default)]
    pub running: Option<Claim>,
    /// A slot waiting for `running` to give up on the daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
    /// Failed runs in a row.
    #[serde(default)]
    pub failures: u32,
    #[serde(default)]
    pub last_status: Option<Status>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_run: Option<DateTime<Utc>>,
}

/// Failed runs in a row that mark an entry failing.
pub(crate) const FAILING_AFTER: u32 = 3;

impl EntryState {
    pub fn new(seen: DateTime<Utc>, schedule: String) -> Self {
        Self {
            seen,
            schedule,
            last_slot: None,
            running: None,
            held: None,
            failures: 0,
            last_status: None,
            last_error: None,
            last_run: None,
        }
    }

    /// Where the search for the next slot starts.
    pub fn cursor(&self) -> DateTime<Utc> {
        self.last_slot.map_or(self.seen, |last| last.max(self.seen))
    }

    pub fn is_failing(&self) -> bool {
        self.failures >= FAILING_AFTER
    }
}

/// Every entry's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub entries: BTreeMap<String, EntryState>,
}

/// The state file of one home.
#[derive(Debug, Clone)]
pub struct StateFile {
    path: PathBuf,
    /// Writes through this handle and its clones (what the engine's tests
    /// and the busy-minute example count).
    writes: Arc<AtomicUsize>,
}

impl StateFile {
    pub fn of(home: &Home) -> Self {
        Self {
            path: crate::data_dir(home).join("state.json"),
            writes: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// How many times the file was written through this handle or a
    /// clone of it.
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::Relaxed)
    }

    /// The saved state; none yet is an empty one. A file that does not
    /// parse is kept aside as `state.json.bad` and replaced by an empty
    /// state (entries then start from now: nothing old is fired).
    pub fn load(&self) -> State {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return State::default(),
            Err(err) => {
                tracing::error!(
                    "cannot read {}: {err}; starting without it",
                    self.path.display()
                );
                return State::default();
            }
        };
        match serde_json::from_slice(&text) {
            Ok(state) => state,
            Err(err) => {
                let aside = self.path.with_extension("json.bad");
                tracing::error!(
                    "{} does not parse ({err}); kept as {} and starting afresh",
                    self.path.display(),
                    aside.display()
                );
                let _ = std::fs::rename(&self.path, aside);
                State::default()
            }
        }
    }

    /// The saved state for reading only (the CLI, `list`): a file that
    /// does not parse reads as empty and is left where it is.
    pub fn load_quietly(&self) -> State {
        std::fs::read(&self.path)
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or_default()
    }

    /// Writes `state` atomically.
    pub fn save(&self, state: &State) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            crate::create_private_dir(dir)?;
        }
        // Compact: at 10,000 entries the pretty form is twice the bytes to
        // write before a slot may fire.
        let text = serde_json::to_vec(state).map_err(std::io::Error::other)?;
        write_atomic_private(&self.path, &text)?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
