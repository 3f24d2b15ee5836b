//! MCP tools: the tools of an agent's own MCP servers and of the components
//! the daemon found, named `server__tool`. Which tools an agent has depends
//! on what it declares, what is connected right now and which component (if
//! any) started the turn's chain, so this hook lists them per agent and
//! chain. Every call tells the server who is calling (`_meta`, see
//! [`crate::mcp::caller`]).

use std::sync::Arc;

use crate::config::agent::AgentDef;
use crate::hook::{Chain, Hook, ToolContext, ToolFuture, ToolOutput, ToolSpec};
use crate::mcp::McpHub;
use crate::mcp::caller::Caller;
use crate::storage::ToolCallRecord;

/// The MCP tools.
pub(crate) struct McpHook {
    hub: Arc<McpHub>,
}

impl McpHook {
    pub(crate) fn new(hub: Arc<McpHub>) -> Self {
        Self { hub }
    }
}

impl Hook for McpHook {
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    fn tools_for(&self, agent: &AgentDef, chain: &Chain) -> Vec<ToolSpec> {
        self.hub.tools_for(agent, chain.trigger.as_deref())
    }

    fn stamp(&self, _agent: &AgentDef) -> u64 {
        crate::mcp::tools_generation()
    }

    fn unavailable(&self, agent: &AgentDef, chain: &Chain, tool: &str) -> Option<String> {
        self.hub.unavailable(agent, chain.trigger.as_deref(), tool)
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let arguments =
            match serde_json::from_str::<serde_json::Value>(if call.arguments.trim().is_empty() {
                "{}"
            } else {
                &call.arguments
            }) {
                Ok(serde_json::Value::Object(map)) => Some(map),
                Ok(serde_json::Value::Null) => None,
                Ok(other) => {
                    let message = format!(
                        "the arguments of {} must be a JSON object, not {other}",
                        call.name
                    );
                    return Some(Box::pin(std::future::ready(ToolOutput::error(message))));
                }
                Err(err) => {
                    let message = format!("invalid arguments for {}: {err}", call.name);
                    return Some(Box::pin(std::future::ready(ToolOutput::error(message))));
                }
            };
        let caller = Caller {
            agent: context.conversation.agent().to_owned(),
            sender: context.sender.clone(),
            origin: context.chain.origin.clone(),
            trigger: context.chain.trigger.clone(),
            gateway: context.gateway.clone(),
        };
        let running = self
            .hub
            .call(&context.agent, &call.name, arguments, caller)?;
        Some(Box::pin(running))
    }
}
