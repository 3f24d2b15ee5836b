//! Firing a slot: a turn in the daemon ([`daemon`]), then, if the entry
//! says so, the final reply delivered elsewhere ([`telegram`]).

pub(crate) mod daemon;
pub(crate) mod telegram;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;

use crate::config::Entry;
use crate::runlog::{Delivery, Status};

/// Why a slot runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Schedule,
    CatchUp,
    Manual,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Schedule => "schedule",
            Self::CatchUp => "catch-up",
            Self::Manual => "manual",
        }
    }

    /// The reason [`By::as_str`] names, as the state file keeps it.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Schedule, Self::CatchUp, Self::Manual]
            .into_iter()
            .find(|by| by.as_str() == name)
    }
}

/// One slot to run.
#[derive(Debug, Clone)]
pub struct Job {
    pub entry: Entry,
    pub slot: DateTime<Utc>,
    pub by: By,
    /// A daemon that is down is retried until then.
    pub retry_until: DateTime<Utc>,
    /// Set once the daemon was reached (see [`Job::reached_daemon`]).
    pub reached: Arc<AtomicBool>,
}

impl Job {
    /// Tells the engine the run is past waiting for the daemon: from now
    /// on it is a turn that runs, and the entry's next slot, if it comes
    /// meanwhile, overlaps it. Until then a slot that comes waits for this
    /// run to give up and starts right after.
    pub fn reached_daemon(&self) {
        self.reached.store(true, Ordering::SeqCst);
    }
}

/// How a run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub started: DateTime<Utc>,
    pub finished: DateTime<Utc>,
    pub error: Option<String>,
    /// The final reply, whole.
    pub reply: Option<String>,
    pub delivery: Option<Delivery>,
}

/// Runs jobs. The service's is `DaemonFirer`; engine tests use
/// their own.
pub trait Firer: Send + Sync + 'static {
    fn fire(&self, job: Job) -> BoxFuture<'static, Outcome>;
}
