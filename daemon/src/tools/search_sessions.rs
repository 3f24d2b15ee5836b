//! `search_sessions`: BM25 over the calling agent's own past conversations
//! (RFC 0021), returning short windows of messages around each match.
//!
//! Offered with the memory tools (only where `[memory] enabled`). The search
//! is always scoped to the agent that calls it; the model can narrow it to
//! one sender. In a gateway sender's chain (see [`super::gateway`]) it is
//! always narrowed to that sender: one person never finds another's
//! conversations. Hits and windows are bounded by the index (at most 20
//! hits, 16 messages a window, 1 KiB a snippet).

use std::fmt::Write;

use serde::Deserialize;
use serde_json::json;

use super::memory::memory_enabled;
use crate::config::agent::AgentDef;
use crate::hook::{Hook, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments};
use crate::sessions::{SessionQuery, SessionSearch};
use crate::storage::ToolCallRecord;
use crabtalk_session_index::SessionHit;

/// Hits when the model asks for no number.
const DEFAULT_HITS: usize = 5;
/// Messages before and after a match when the model asks for no number.
const DEFAULT_CONTEXT: usize = 2;

pub(crate) struct SessionSearchHook {
    sessions: SessionSearch,
}

impl SessionSearchHook {
    pub(crate) fn new(sessions: SessionSearch) -> Self {
        Self { sessions }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default)]
    sender: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    context: Option<usize>,
}

impl Hook for SessionSearchHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "search_sessions".into(),
            description: "Search your past conversations by keywords. Returns the best-matching \
                passages, each with a few messages around it and the conversation it is from."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords, e.g. \"cron timezone bug\"."},
                    "sender": {"type": "string", "description": "Only conversations with this user (as named in the results)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": crabtalk_session_index::MAX_HITS, "description": "How many passages at most (default 5)."},
                    "context": {"type": "integer", "minimum": 0, "maximum": 7, "description": "Messages shown before and after each match (default 2)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }]
    }

    fn offers(&self, agent: &AgentDef, _tool: &str) -> bool {
        memory_enabled(agent)
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        if call.name != "search_sessions" {
            return None;
        }
        let args = match parse_arguments::<Args>(call) {
            Ok(args) => args,
            Err(output) => return Some(Box::pin(std::future::ready(output))),
        };
        let sessions = self.sessions.clone();
        let agent = context.agent.name.clone();
        let sender = match (context.gateway, args.sender.filter(|s| !s.is_empty())) {
            (Some(gateway), Some(asked)) if asked != gateway => {
                return Some(Box::pin(std::future::ready(ToolOutput::error(format!(
                    "this conversation came through a gateway, so search_sessions only searches the conversations of {gateway:?}; leave out sender"
                )))));
            }
            (Some(gateway), _) => Some(gateway),
            (None, asked) => asked,
        };
        Some(Box::pin(async move {
            if args.query.trim().is_empty() {
                return ToolOutput::error("the query is empty; give keywords to search for");
            }
            let query = SessionQuery {
                agent,
                sender,
                query: args.query.clone(),
                limit: args.limit.unwrap_or(DEFAULT_HITS).max(1),
                context: args.context.unwrap_or(DEFAULT_CONTEXT),
            };
            match sessions.run(query).await {
                Ok(hits) => ToolOutput::ok(render(&args.query, &hits)),
                Err(err) => ToolOutput::error(format!("the search failed: {err}")),
            }
        }))
    }
}

/// Hits as text for the model: one block per hit, the matching message
/// marked with `>`.
fn render(query: &str, hits: &[SessionHit]) -> String {
    if hits.is_empty() {
        return format!("No past conversation matches {query:?}.");
    }
    let mut out = format!("{} passages match {query:?}, best first:\n", hits.len());
    for (n, hit) in hits.iter().enumerate() {
        let _ = write!(out, "\n[{}] conversation with {:?}", n + 1, hit.sender);
        if let Some(title) = &hit.title {
            let _ = write!(out, " titled {title:?}");
        }
        let _ = write!(out, " ({}), matched in ", hit.conversation);
        match hit.msg_idx {
            Some(idx) => {
                let _ = write!(out, "message {idx}");
            }
            None => out.push_str(hit.field.name()),
        }
        let _ = writeln!(out, ", score {:.2}", hit.score);
        for item in &hit.window {
            let mark = if item.msg_idx == hit.msg_idx {
                '>'
            } else {
                ' '
            };
            let who = match (&item.tool_name, item.field.name()) {
                (Some(tool), field) => format!("{field} {tool}"),
                (None, field) => field.to_owned(),
            };
            let number = item.msg_idx.map(|i| format!("#{i} ")).unwrap_or_default();
            let more = if item.truncated { " […]" } else { "" };
            let text = item.snippet.trim().replace('\n', "\n    ");
            let _ = writeln!(out, "{mark} {number}{who}: {text}{more}");
        }
    }
    out
}
