//! `delegate`: hand tasks to other agents (RFC 0004).
//!
//! Each task runs as a turn of its own in a fresh conversation, with the
//! sender `delegate:<id>` (ids come from the run-id clock, so they stay
//! unique across restarts) and its own working directory if it names one.
//!
//! - Foreground: waits for every task and returns `[{agent, result, error}]`.
//!   If the delegating turn is cancelled, its tasks are cancelled too.
//! - Background (`background: true`): returns the task ids at once; each
//!   result is published as `agent:<name>:done`, like every turn's end.
//!
//! Limits: at most `max_tasks` tasks per call, and delegated turns may
//! delegate again only down to `max_depth` levels. A task's turn continues
//! the delegating turn's [`Chain`](crate::hook::Chain): its depth
//! is one more, its origin and event hop count are the same. The depth
//! travels with the turn, so no table here can be lost to a reload or a
//! restart.
//!
//! The turns are started through the call's [`crate::hook::Turns`]
//! handle: this hook holds no reference to the runtime.

use std::sync::Arc;

use serde::Deserialize;

use super::files::resolve;
use crate::hook::{
    Hook, PromptContext, TaskError, TaskRequest, ToolContext, ToolFuture, ToolOutput, ToolSpec,
    Turns, parse_arguments,
};
use crate::storage::ToolCallRecord;

/// The sender prefix of delegated turns.
pub(crate) const SENDER_PREFIX: &str = "delegate:";

/// The `delegate` tool.
pub(crate) struct DelegateHook {
    max_depth: u32,
    max_tasks: usize,
}

#[derive(Deserialize)]
struct Arguments {
    tasks: Vec<Task>,
    #[serde(default)]
    background: bool,
}

#[derive(Deserialize)]
struct Task {
    agent: String,
    message: String,
    #[serde(default)]
    cwd: Option<String>,
}

impl DelegateHook {
    pub(crate) fn new(max_depth: u32, max_tasks: usize) -> Self {
        Self {
            max_depth,
            max_tasks,
        }
    }
}

impl Hook for DelegateHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "delegate".into(),
            description: "Hand tasks to other agents; each runs in a conversation of its own. Without \
                background, waits for all of them and returns each agent's result. With background, \
                returns at once; results are published as agent:<name>:done events. The agent \
                `worker` is always available for ad-hoc tasks. Give each task everything it needs: \
                the other agent does not see this conversation."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "tasks": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "agent": {"type": "string"},
                                "message": {"type": "string", "description": "The task, complete in itself."},
                                "cwd": {"type": "string", "description": "Working directory for this task (default: yours)."}
                            },
                            "required": ["agent", "message"]
                        }
                    },
                    "background": {"type": "boolean", "description": "Return at once instead of waiting."}
                },
                "required": ["tasks"]
            }),
        }]
    }

    fn system_prompt(&self, context: &PromptContext<'_>) -> Option<String> {
        let peers: Vec<String> = context
            .agents
            .values()
            .filter(|agent| agent.name != context.agent.name)
            .map(|agent| format!("- {}: {}", agent.name, agent.config.description))
            .collect();
        if peers.is_empty() {
            return None;
        }
        Some(format!(
            "<agents>\nAgents you can delegate to with the delegate tool:\n{}\n</agents>",
            peers.join("\n")
        ))
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let output = self.start(call, &context);
        Some(match output {
            Err(error) => Box::pin(std::future::ready(error)),
            Ok(running) => running,
        })
    }
}

/// Cancels the delegated turns of a foreground call that is dropped before
/// they finish (the delegating turn was cancelled).
struct ChildTurns {
    turns: Arc<dyn Turns>,
    keys: Vec<(String, String)>,
    finished: bool,
}

impl ChildTurns {
    /// The children finished: nothing to cancel.
    fn disarm(&mut self) {
        self.finished = true;
    }
}

impl Drop for ChildTurns {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        for (agent, sender) in &self.keys {
            self.turns.kill(agent, sender);
        }
    }
}

impl DelegateHook {
    fn start(
        &self,
        call: &ToolCallRecord,
        context: &ToolContext,
    ) -> Result<ToolFuture, ToolOutput> {
        let arguments: Arguments = parse_arguments(call)?;
        let turns = &context.turns;
        if arguments.tasks.is_empty() {
            return Err(ToolOutput::error("delegate needs at least one task"));
        }
        if arguments.tasks.len() > self.max_tasks {
            return Err(ToolOutput::error(format!(
                "{} tasks is more than the {} one call may start; split the work or do some yourself",
                arguments.tasks.len(),
                self.max_tasks
            )));
        }
        let chain = context.chain.delegated();
        if chain.depth > self.max_depth {
            return Err(ToolOutput::error(format!(
                "delegation is already {} levels deep (the limit is {}); do this task yourself",
                context.chain.depth, self.max_depth
            )));
        }
        let mut started = Vec::new();
        for task in arguments.tasks {
            if let Err(unknown) = turns.check_agent(&task.agent) {
                started.push((task.agent, String::new(), Err(TaskError::from(unknown))));
                continue;
            }
            let cwd = task
                .cwd
                .as_deref()
                .map_or_else(|| context.cwd.clone(), |cwd| resolve(&context.cwd, cwd));
            let sender = format!("{SENDER_PREFIX}{}", turns.next_id());
            let turn = turns.clone().start(TaskRequest {
                agent: task.agent.clone(),
                sender: sender.clone(),
                content: task.message,
                cwd,
                created_by: format!("delegated by {} ({})", context.agent.name, context.sender),
                chain: chain.clone(),
            });
            match turn {
                Ok(handle) => started.push((task.agent, sender, Ok(handle))),
                Err(error) => started.push((task.agent, String::new(), Err(error))),
            }
        }

        if arguments.background {
            let mut tasks = Vec::new();
            for (agent, sender, handle) in started {
                match handle {
                    // The turn runs on without us; its result is its done-event.
                    Ok(_) => tasks.push(serde_json::json!({"id": sender, "agent": agent})),
                    Err(error) => {
                        tasks.push(serde_json::json!({"agent": agent, "error": error.to_string()}))
                    }
                }
            }
            let reply = serde_json::json!({
                "background": true,
                "tasks": tasks,
                "note": "each result will be published as an agent:<name>:done event",
            });
            return Ok(Box::pin(std::future::ready(ToolOutput::ok(
                reply.to_string(),
            ))));
        }

        let mut guard = ChildTurns {
            turns: turns.clone(),
            keys: started
                .iter()
                .filter(|(_, sender, _)| !sender.is_empty())
                .map(|(a, s, _)| (a.clone(), s.clone()))
                .collect(),
            finished: false,
        };
        Ok(Box::pin(async move {
            let mut results = Vec::new();
            let mut failed = 0;
            for (agent, _, handle) in started {
                let entry = match handle {
                    Err(error) => {
                        serde_json::json!({"agent": agent, "result": null, "error": error.to_string()})
                    }
                    Ok(handle) => match handle.await {
                        Ok(outcome) => match outcome.error {
                            None => {
                                serde_json::json!({"agent": agent, "result": outcome.final_text, "error": null})
                            }
                            Some(failure) => {
                                serde_json::json!({"agent": agent, "result": outcome.final_text, "error": failure})
                            }
                        },
                        Err(err) => {
                            serde_json::json!({"agent": agent, "result": null, "error": err.to_string()})
                        }
                    },
                };
                failed += usize::from(!entry["error"].is_null());
                results.push(entry);
            }
            guard.disarm();
            let text = serde_json::Value::Array(results).to_string();
            if failed == 0 {
                ToolOutput::ok(text)
            } else {
                ToolOutput::error(text)
            }
        }))
    }
}
