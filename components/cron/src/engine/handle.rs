//! [`EngineHandle`]: what other tasks (the MCP tools, the CLI's `run <id>`)
//! ask of the running engine, as messages to its loop.

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use crate::runlog::RunRecord;

/// A request to the running engine.
pub(super) enum Command {
    RunNow {
        id: String,
        started: oneshot::Sender<Result<DateTime<Utc>, String>>,
        finished: Option<oneshot::Sender<RunRecord>>,
    },
    Reload,
}

/// Talks to a running engine; cheap to clone.
#[derive(Clone)]
pub struct EngineHandle {
    pub(super) commands: mpsc::Sender<Command>,
}

impl EngineHandle {
    /// Runs entry `id` now; answers when it has started (with its slot)
    /// or could not (why).
    pub async fn run_now(&self, id: &str) -> Result<DateTime<Utc>, String> {
        self.start(id, None).await
    }

    /// Runs entry `id` now and waits for its record.
    pub async fn run_now_and_wait(&self, id: &str) -> Result<RunRecord, String> {
        let (done, finished) = oneshot::channel();
        self.start(id, Some(done)).await?;
        finished.await.map_err(|_| "the engine stopped".to_owned())
    }

    async fn start(
        &self,
        id: &str,
        finished: Option<oneshot::Sender<RunRecord>>,
    ) -> Result<DateTime<Utc>, String> {
        let (started, answer) = oneshot::channel();
        self.commands
            .send(Command::RunNow {
                id: id.to_owned(),
                started,
                finished,
            })
            .await
            .map_err(|_| "the engine stopped".to_owned())?;
        answer.await.map_err(|_| "the engine stopped".to_owned())?
    }

    /// Re-reads `crons.toml` now (after an edit made by this process).
    pub async fn reload(&self) {
        let _ = self.commands.send(Command::Reload).await;
    }
}
