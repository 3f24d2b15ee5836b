//! [`ToolContext`]: everything a tool call may know about where it runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Chain, ToolConversation, Turns};
use crate::config::agent::AgentDef;

/// Everything a tool call may need to know about where it runs, and the
/// two handles through which it may act beyond its own tool: the
/// conversation and the daemon's turns. The turn that runs the call builds
/// it; nothing in it outlives the call unless the tool keeps a clone.
#[derive(Clone)]
pub(crate) struct ToolContext {
    pub agent: Arc<AgentDef>,
    pub sender: String,
    /// The chain of turns this one belongs to (who began it, how deep).
    pub chain: Chain,
    /// The effective working directory of this turn.
    pub cwd: PathBuf,
    /// The conversation the call runs in.
    pub conversation: Arc<dyn ToolConversation>,
    /// The daemon's turns, for tools that start or cancel others.
    pub turns: Arc<dyn Turns>,
    /// How long `ask_user` waits.
    pub ask_timeout: Duration,
    /// The gateway sender whose chain this is, if any. Set by the gate in
    /// `Tools::dispatch` (whatever the caller put here), so that hooks read
    /// one answer to "is this a gateway conversation".
    pub gateway: Option<String>,
}
