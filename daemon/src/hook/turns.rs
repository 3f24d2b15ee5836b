//! [`Turns`]: what a tool may ask of the daemon's turns.
//!
//! Only `delegate` needs more than its own conversation: it starts turns of
//! other agents and cancels them if its own call is dropped. It does so
//! through this trait, which the runtime implements, and gets back plain
//! outcomes — never the runtime's types.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use super::Chain;
use crate::config::agent::UnknownAgent;

/// What a tool may ask of the daemon's turns.
pub(crate) trait Turns: Send + Sync {
    /// A fresh id, unique across restarts (for `delegate:<id>` senders).
    fn next_id(&self) -> u64;

    /// `Ok` if an agent named `name` exists; else which agents there are.
    fn check_agent(&self, name: &str) -> Result<(), UnknownAgent>;

    /// Starts a turn for `task`. It runs to its end whether or not the
    /// handle is awaited; the handle yields its outcome. `Err` says why it
    /// could not start. (It takes the `Arc` because the turn keeps the
    /// daemon's state alive while it runs.)
    fn start(self: Arc<Self>, task: TaskRequest) -> Result<TaskHandle, TaskError>;

    /// Cancels the turn running on `(agent, sender)`, if any; whether one
    /// was.
    fn kill(&self, agent: &str, sender: &str) -> bool;
}

/// A turn a tool starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRequest {
    pub agent: String,
    pub sender: String,
    pub content: String,
    pub cwd: PathBuf,
    /// Recorded as the conversation's creator if this turn creates it.
    pub created_by: String,
    /// The chain the turn continues.
    pub chain: Chain,
}

/// How a started turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TaskOutcome {
    /// The text of its last model reply.
    pub final_text: String,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Why a tool's turn did not start, or was lost; the text is what the
/// model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskError {
    /// No agent by that name.
    #[error(transparent)]
    UnknownAgent(#[from] UnknownAgent),
    /// The daemon would not start it (shutting down, the conversation busy
    /// with a question, …), in the daemon's words.
    #[error("{0}")]
    Refused(String),
    /// It started and never ended (its task panicked).
    #[error("{0}")]
    Lost(String),
}

/// A started turn's outcome, or why the turn was lost.
pub(crate) type TaskHandle = Pin<Box<dyn Future<Output = Result<TaskOutcome, TaskError>> + Send>>;
