//! The tool contract: what a tool is, what a call of it may see, and what it
//! may ask of the conversation and of the daemon — and nothing more.
//!
//! This is the bottom of the tool stack. The tools (`tools/`) and the MCP
//! client (`mcp/`) are built on it; the runtime is built on them and
//! implements the two narrow traits declared here, so no tool ever names
//! the runtime:
//!
//! - [`ToolConversation`]: the conversation a call runs in (ask the user,
//!   remember which files were read, whose conversation it is);
//! - [`Turns`]: the daemon's turns (start a task's turn, cancel it, check
//!   that an agent exists, a fresh id).
//!
//! A turn hands both to every call in its [`ToolContext`], so a tool holds
//! no reference back to the runtime between calls. See RFC 0041.
//!
//! A [`Hook`] is a subsystem that owns tools: it declares their
//! [`ToolSpec`]s and turns a call into a [`ToolFuture`] that yields a
//! [`ToolOutput`].

mod chain;
mod context;
mod conversation;
mod prompt;
mod tool;
mod turns;

pub(crate) use self::chain::Chain;
pub(crate) use self::context::ToolContext;
pub(crate) use self::conversation::{FileStamp, ToolConversation};
pub(crate) use self::prompt::{PromptContext, escape_attribute};
pub(crate) use self::tool::{ToolFuture, ToolOutput, ToolSpec, parse_arguments};
pub(crate) use self::turns::{TaskError, TaskHandle, TaskOutcome, TaskRequest, Turns};

use crate::config::agent::AgentDef;
use crate::storage::ToolCallRecord;

/// A subsystem that owns tools.
pub(crate) trait Hook: Send + Sync {
    /// The tools this hook owns.
    fn tools(&self) -> Vec<ToolSpec>;

    /// The tools this hook offers `agent` in a turn of `chain`: by default
    /// those of [`Hook::tools`] that [`Hook::offers`] lets through. Hooks
    /// whose tools depend on the agent or the chain (MCP servers) answer
    /// directly.
    fn tools_for(&self, agent: &AgentDef, chain: &Chain) -> Vec<ToolSpec> {
        let _ = chain;
        self.tools()
            .into_iter()
            .filter(|spec| self.offers(agent, &spec.name))
            .collect()
    }

    /// Whether this hook offers `tool` to `agent` at all (for example, memory
    /// tools only where memory is enabled).
    fn offers(&self, agent: &AgentDef, tool: &str) -> bool {
        let _ = (agent, tool);
        true
    }

    /// A fragment for the agent's system prompt.
    fn system_prompt(&self, context: &PromptContext<'_>) -> Option<String> {
        let _ = context;
        None
    }

    /// Rewrites a user message before it enters the history; `None` leaves
    /// it as it is.
    fn preprocess(&self, agent: &AgentDef, content: &str) -> Option<String> {
        let _ = (agent, content);
        None
    }

    /// Starts `call` if this hook owns its tool.
    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture>;

    /// What, besides the agent and the chain, the tools this hook offers
    /// depend on right now, as a number that changes when they may have
    /// changed. A conversation keeps its turn's tools in the provider's
    /// shape from one turn to the next while every hook's stamp, the
    /// snapshot, the agent and the chain stay the same (RFC 0025). The
    /// default, 0, says the hook's tools depend on nothing else.
    fn stamp(&self, agent: &AgentDef) -> u64 {
        let _ = agent;
        0
    }

    /// Why `tool`, which no hook offers `agent` in a turn of `chain` now,
    /// would be this hook's if it could be: the words the model gets
    /// instead of "there is no tool" (a component that stopped, and how to
    /// start it). `None` when the name means nothing to this hook.
    fn unavailable(&self, agent: &AgentDef, chain: &Chain, tool: &str) -> Option<String> {
        let _ = (agent, chain, tool);
        None
    }
}
