//! [`EngineHandle`]: what other tasks (the MCP tools, the CLI's `run <id>`)
//! ask of the running engine, as messages to its loop.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use crate::runlog::RunRecord;

/// A request to the running engine.
pub(super) enum Command {
    RunNow {
        id: String,
        started: oneshot::Sender<Result<DateTime<Utc>, RunNowError>>,
        finished: Option<oneshot::Sender<RunRecord>>,
    },
    Reload,
}

/// Why an entry could not be run now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunNowError {
    #[error("no entry `{id}`; cron_list shows the ids")]
    NoEntry { id: String },
    #[error("`{id}` is running already; try again when it has finished")]
    Running { id: String },
    #[error("the engine stopped")]
    Stopped,
}

/// The MCP tools answer with the message.
/// The schedule a running engine keeps while `crons.toml` has a problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptSchedule {
    /// Why the file was refused (`file:line:column: …`).
    pub problem: String,
    /// How many entries of the last good file keep running.
    pub entries: usize,
}

impl std::fmt::Display for KeptSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; the last good schedule keeps running ({} entr{}) until the file is fixed",
            self.problem,
            self.entries,
            if self.entries == 1 { "y" } else { "ies" }
        )
    }
}

/// Talks to a running engine; cheap to clone.
#[derive(Clone)]
pub struct EngineHandle {
    pub(super) commands: mpsc::Sender<Command>,
    pub(super) kept: Arc<Mutex<Option<KeptSchedule>>>,
    pub(super) schedule_len: Arc<std::sync::atomic::AtomicUsize>,
}

impl EngineHandle {
    /// The last good schedule the engine keeps because `crons.toml` now
    /// has a problem; `None` while the file is fine.
    pub fn kept_schedule(&self) -> Option<KeptSchedule> {
        self.kept.lock().map_or(None, |kept| kept.clone())
    }

    /// How many entries the running schedule has.
    pub fn schedule_len(&self) -> usize {
        self.schedule_len.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs entry `id` now; answers when it has started (with its slot)
    /// or could not (why).
    pub async fn run_now(&self, id: &str) -> Result<DateTime<Utc>, RunNowError> {
        self.start(id, None).await
    }

    /// Runs entry `id` now and waits for its record.
    pub async fn run_now_and_wait(&self, id: &str) -> Result<RunRecord, RunNowError> {
        let (done, finished) = oneshot::channel();
        self.start(id, Some(done)).await?;
        finished.await.map_err(|_| RunNowError::Stopped)
    }

    async fn start(
        &self,
        id: &str,
        finished: Option<oneshot::Sender<RunRecord>>,
    ) -> Result<DateTime<Utc>, RunNowError> {
        let (started, answer) = oneshot::channel();
        self.commands
            .send(Command::RunNow {
                id: id.to_owned(),
                started,
                finished,
            })
            .await
            .map_err(|_| RunNowError::Stopped)?;
        answer.await.map_err(|_| RunNowError::Stopped)?
    }

    /// Re-reads `crons.toml` now (after an edit made by this process).
    pub async fn reload(&self) {
        let _ = self.commands.send(Command::Reload).await;
    }
}
