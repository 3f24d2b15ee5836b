//! The bridge's own tools: `ask_agent` ([`super::ask`]) and the owner's
//! view of agents, conversations and memory, each one protocol operation
//! (`ListAgents`, `ListConversations`, `SearchSessions`, `Recall`,
//! `Remember`).
//!
//! Every tool has a title and the hints a host uses to decide what needs
//! the user's approval: the lists and searches only read and stay inside
//! crabtalk; `remember` writes (and replaces a note of the same name);
//! `ask_agent` runs an agent, whose tools may do anything the owner's
//! agents may, on the web and on this machine.
//!
//! Answers are JSON — as structured content, and as text for hosts that
//! read only text.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crabtalk_kit::daemon::ConnectError;
use crabtalk_proto::Client;
use crabtalk_proto::msg::{
    ListAgentsMsg, ListConversationsMsg, RecallMsg, RememberMsg, SearchSessionsMsg,
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::ask::{self, AskArgs, failure};

/// The names of the bridge's own tools.
pub(super) const NAMES: [&str; 6] = [
    "ask_agent",
    "list_agents",
    "list_conversations",
    "search_sessions",
    "recall",
    "remember",
];

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// A tool that only reads what crabtalk keeps.
fn reading(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// The bridge's own tools.
pub(super) fn tool_list() -> Vec<Tool> {
    let agent = json!({"type": "string", "description": "The agent's name (default: the daemon's default agent)."});
    vec![
        Tool::new(
            "ask_agent",
            "Send a message to one of your crabtalk agents and get its reply. The agent works with its own tools (the web, files, schedules, its memory…) and keeps the conversation: the next message to the same conversation continues it. Progress (text as it streams, tool calls) is reported while it works.",
            schema(json!({
                "type": "object",
                "properties": {
                    "agent": agent,
                    "message": {"type": "string", "description": "What to say to the agent."},
                    "conversation": {"type": "string", "description": "Which of the agent's conversations (default \"mcp\"); name another to keep a separate thread."}
                },
                "required": ["message"],
                "additionalProperties": false
            })),
        )
        .with_title("Ask a crabtalk agent")
        .with_annotations(
            ToolAnnotations::with_title("Ask a crabtalk agent")
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(true),
        ),
        Tool::new(
            "list_agents",
            "List your crabtalk agents: name, description, model, skills and MCP servers.",
            schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
        .with_title("List crabtalk agents")
        .with_annotations(reading("List crabtalk agents")),
        Tool::new(
            "list_conversations",
            "List stored conversations: agent, conversation (the sender), title, number of messages, last change.",
            schema(json!({
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "description": "Only this agent's conversations."},
                    "conversation": {"type": "string", "description": "Only conversations with this sender."}
                },
                "additionalProperties": false
            })),
        )
        .with_title("List crabtalk conversations")
        .with_annotations(reading("List crabtalk conversations")),
        Tool::new(
            "search_sessions",
            "Search an agent's past conversations by keywords; each match comes with the messages around it.",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords."},
                    "agent": agent,
                    "conversation": {"type": "string", "description": "Only conversations with this sender."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "At most this many matches (default 10)."}
                },
                "required": ["query"],
                "additionalProperties": false
            })),
        )
        .with_title("Search crabtalk conversations")
        .with_annotations(reading("Search crabtalk conversations")),
        Tool::new(
            "recall",
            "Search an agent's long-term memory — its notes and the summaries of its earlier conversations — by keywords.",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords."},
                    "agent": agent,
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "At most this many entries (default 5)."}
                },
                "required": ["query"],
                "additionalProperties": false
            })),
        )
        .with_title("Recall from an agent's memory")
        .with_annotations(reading("Recall from an agent's memory")),
        Tool::new(
            "remember",
            "Save a note in an agent's long-term memory, which it can recall in any conversation. A note of the same name (or alias) is replaced.",
            schema(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "A short, unique name for the note."},
                    "content": {"type": "string", "description": "What to remember, self-contained."},
                    "agent": agent,
                    "aliases": {"type": "array", "items": {"type": "string"}, "description": "Other names to find the note by (given, they replace the note's)."}
                },
                "required": ["name", "content"],
                "additionalProperties": false
            })),
        )
        .with_title("Remember in an agent's memory")
        .with_annotations(
            ToolAnnotations::with_title("Remember in an agent's memory")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    conversation: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    conversation: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    query: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    name: String,
    content: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
}

/// The arguments of tool `tool` read into `T`, or an error result naming
/// what is wrong.
fn arguments<T: DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, CallToolResult> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default())).map_err(|err| {
        failure(format!(
            "the arguments of {tool} are not right: {err}; see the tool's input schema"
        ))
    })
}

/// An answer as structured content with the same JSON as text.
fn answer(value: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// Runs the own tool `name`; `None` if it is not one.
pub(super) async fn call(
    name: &str,
    args: Option<JsonObject>,
    client: Result<Client, ConnectError>,
    context: &rmcp::service::RequestContext<rmcp::RoleServer>,
    host_gone: &AtomicBool,
) -> Option<CallToolResult> {
    if !NAMES.contains(&name) {
        return None;
    }
    let client = match client {
        Ok(client) => client,
        Err(why) => return Some(failure(why.to_string())),
    };
    let result = match name {
        "ask_agent" => match arguments::<AskArgs>(name, args) {
            Ok(args) => ask::ask_agent(client, args, context, host_gone).await,
            Err(result) => result,
        },
        "list_agents" => match arguments::<NoArgs>(name, args) {
            Ok(NoArgs {}) => list_agents(&client).await,
            Err(result) => result,
        },
        "list_conversations" => match arguments::<ListArgs>(name, args) {
            Ok(args) => list_conversations(&client, args).await,
            Err(result) => result,
        },
        "search_sessions" => match arguments::<SearchArgs>(name, args) {
            Ok(args) => search_sessions(&client, args).await,
            Err(result) => result,
        },
        "recall" => match arguments::<RecallArgs>(name, args) {
            Ok(args) => recall(&client, args).await,
            Err(result) => result,
        },
        _ => match arguments::<RememberArgs>(name, args) {
            Ok(args) => remember(&client, args).await,
            Err(result) => result,
        },
    };
    Some(result)
}

/// An error result for a refused request.
fn refused(what: &str, err: crabtalk_proto::ClientError) -> CallToolResult {
    failure(format!("{what}: {err}"))
}

async fn list_agents(client: &Client) -> CallToolResult {
    match client.list_agents(ListAgentsMsg {}).await {
        Ok(list) => answer(json!({
            "agents": list.agents.iter().map(|agent| json!({
                "name": agent.name,
                "description": agent.description,
                "model": agent.model,
                "skills": agent.skills,
                "mcps": agent.mcps,
            })).collect::<Vec<_>>()
        })),
        Err(err) => refused("cannot list the agents", err),
    }
}

async fn list_conversations(client: &Client, args: ListArgs) -> CallToolResult {
    let request = ListConversationsMsg {
        agent: args.agent.unwrap_or_default(),
        sender: args.conversation.unwrap_or_default(),
    };
    match client.list_conversations(request).await {
        Ok(list) => answer(json!({
            "conversations": list.conversations.iter().map(|conversation| json!({
                "agent": conversation.agent,
                "conversation": conversation.sender,
                "title": conversation.title,
                "messages": conversation.message_count,
                "updated": conversation.date,
            })).collect::<Vec<_>>()
        })),
        Err(err) => refused("cannot list the conversations", err),
    }
}

async fn search_sessions(client: &Client, args: SearchArgs) -> CallToolResult {
    let request = SearchSessionsMsg {
        agent: args.agent.unwrap_or_default(),
        sender: args.conversation.unwrap_or_default(),
        query: args.query,
        limit: args.limit,
        context: None,
    };
    match client.search_sessions(request).await {
        Ok(found) => answer(json!({
            "matches": found.hits.iter().map(|hit| json!({
                "conversation": hit.sender,
                "title": hit.title,
                "matched": hit.field,
                "message": hit.msg_idx,
                "score": hit.score,
                "messages": hit.window.iter().map(|item| json!({
                    "message": item.msg_idx,
                    "role": item.field,
                    "tool": item.tool_name,
                    "text": item.snippet,
                    "cut": item.truncated,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>()
        })),
        Err(err) => refused("the search failed", err),
    }
}

async fn recall(client: &Client, args: RecallArgs) -> CallToolResult {
    let request = RecallMsg {
        agent: args.agent.unwrap_or_default(),
        query: args.query,
        limit: args.limit,
    };
    match client.recall(request).await {
        Ok(found) => answer(json!({
            "entries": found.entries.iter().map(|entry| json!({
                "name": entry.name,
                "kind": entry.kind,
                "content": entry.content,
                "cut": entry.truncated,
                "aliases": entry.aliases,
                "created": chrono::DateTime::from_timestamp(entry.created_at as i64, 0)
                    .map(|at| at.to_rfc3339())
                    .unwrap_or_default(),
            })).collect::<Vec<_>>()
        })),
        Err(err) => refused("recall failed", err),
    }
}

async fn remember(client: &Client, args: RememberArgs) -> CallToolResult {
    let request = RememberMsg {
        agent: args.agent.unwrap_or_default(),
        name: args.name,
        content: args.content,
        aliases: args.aliases,
    };
    match client.remember(request).await {
        Ok(saved) => answer(json!({
            "agent": saved.agent,
            "name": saved.name,
            "updated": saved.updated,
        })),
        Err(err) => refused("remember failed", err),
    }
}
