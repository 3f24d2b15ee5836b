//! The MCP tools (`search__web_search` and `search__web_fetch`, as the
//! daemon names them): arguments read by [`args`], the work done by
//! [`Web`], the answer as structured content plus a text block.
//!
//! `web_search` answers with the fused results and every engine's status.
//! When no engine answered, the call is an error (with the same content):
//! the model must not take a silent web for an empty one. `web_fetch`'s
//! text block is the page (title, final URL, content, what was cut);
//! its structured content has the same as fields.
//!
//! A call its client cancels (`notifications/cancelled`, or the client's
//! session closed) is dropped at once: rmcp only signals the request's
//! cancellation token and would otherwise let the handler run to its end,
//! so `call_tool` races the call against that token. Dropping a fetch
//! stops the page being made readable at its next look at its budget
//! (RFC 0063).

pub mod args;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use crate::config::EngineId;
use crate::web::{MAX_CHARS_LIMIT, Web};

/// The tools, shared by every MCP session.
#[derive(Clone)]
pub struct SearchTools {
    web: Arc<Web>,
    busy: crate::memory::Busy,
}

fn schema(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// The tool list: both only read the public web, and say so to hosts that
/// offer them (`crabtalkd mcp`).
pub fn tool_list() -> Vec<Tool> {
    let engines: Vec<&str> = EngineId::ALL.iter().map(|e| e.name()).collect();
    vec![
        Tool::new(
            "web_search",
            "Search the web: several engines at once, results fused and de-duplicated. Each result lists the engines that found it and at which rank; `engines` in the answer says how each engine did (ok, no_results, rate_limited, blocked, timeout, error, suspended, disabled) — when engines are failing, say so rather than concluding nothing exists. Use web_fetch to read a result.",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to search for."},
                    "count": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many results (default 10)."},
                    "lang": {"type": "string", "description": "Language of the results: en, de, pt-br…"},
                    "region": {"type": "string", "description": "Region of the results: us, de, jp…"},
                    "engines": {"type": "array", "items": {"type": "string", "enum": engines}, "description": "Only these engines (default: every enabled one)."}
                },
                "required": ["query"],
                "additionalProperties": false
            })),
        ).with_title("Search the web")
        .with_annotations(
            ToolAnnotations::with_title("Search the web")
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(true),
        ),
        Tool::new(
            "web_fetch",
            "Read a web page (http or https, public addresses only) as Markdown or plain text: the main content, with its title and final URL after redirects. Long pages are cut at max_chars, and the answer says so.",
            schema(json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The page's http(s) URL."},
                    "max_chars": {"type": "integer", "minimum": 1, "maximum": MAX_CHARS_LIMIT, "description": "The most characters of content returned (default 50000)."},
                    "format": {"type": "string", "enum": ["markdown", "text"], "description": "markdown (default) or text."}
                },
                "required": ["url"],
                "additionalProperties": false
            })),
        ).with_title("Read a web page")
        .with_annotations(
            ToolAnnotations::with_title("Read a web page")
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(true),
        ),
    ]
}

impl SearchTools {
    pub fn new(web: Arc<Web>) -> Self {
        Self {
            web,
            busy: crate::memory::Busy::default(),
        }
    }

    /// Runs tool `name` with `arguments` (an object; a JSON string holding
    /// one is accepted too).
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        // Freed memory goes back to the system when the last call ends.
        let _busy = self.busy.enter();
        let arguments = match object(arguments) {
            Ok(arguments) => arguments,
            Err(err) => return error(err),
        };
        match name {
            "web_search" => {
                let request = match args::search_request(&arguments, self.web.settings().count) {
                    Ok(request) => request,
                    Err(err) => return error(err),
                };
                let answer = self.web.search(&request).await;
                let value = serde_json::to_value(&answer).unwrap_or(Value::Null);
                if answer.nobody_answered() {
                    CallToolResult::structured_error(value)
                } else {
                    CallToolResult::structured(value)
                }
            }
            "web_fetch" => {
                let fetch = match args::fetch_args(&arguments) {
                    Ok(fetch) => fetch,
                    Err(err) => return error(err),
                };
                match self
                    .web
                    .fetch(&fetch.url, fetch.format, fetch.max_chars)
                    .await
                {
                    Ok(answer) => {
                        let mut result = CallToolResult::structured(
                            serde_json::to_value(&answer).unwrap_or(Value::Null),
                        );
                        result.content = vec![ContentBlock::text(answer.to_text())];
                        result
                    }
                    Err(err) => error(err.to_string()),
                }
            }
            other => error(format!(
                "no tool `{other}`; the tools are web_search and web_fetch"
            )),
        }
    }
}

fn error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// The arguments as an object: missing is empty; a string must hold one.
fn object(arguments: Value) -> Result<Map<String, Value>, String> {
    match arguments {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err("the arguments are a string that is not a JSON object; send an object like {\"query\": \"…\"}".into()),
        },
        _ => Err("the arguments must be a JSON object".into()),
    }
}

impl ServerHandler for SearchTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "crabtalk's web access: web_search (several engines, fused, each engine's health reported) and web_fetch (a page as readable Markdown; public addresses only).",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        tokio::select! {
            result = self.call(&request.name, arguments) => Ok(result.into()),
            () = context.ct.cancelled() => {
                tracing::debug!(tool = %request.name, id = %context.id, "the call was cancelled by its client: its work is dropped");
                // rmcp sends nothing for a cancelled request; this is for
                // the record only.
                Err(McpError::internal_error("the call was cancelled", None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hosts that ask before a tool that acts read these hints.
    #[test]
    fn both_tools_have_a_title_and_only_read_the_open_web() {
        let hints = |name: &str| {
            let tool = tool_list()
                .into_iter()
                .find(|tool| tool.name == name)
                .unwrap_or_else(|| panic!("no tool {name}"));
            assert!(tool.title.is_some(), "{name} has no title");
            let a = tool
                .annotations
                .unwrap_or_else(|| panic!("{name} has no hints"));
            assert!(a.title.is_some() && a.idempotent_hint.is_some(), "{name}");
            (
                a.read_only_hint.expect("readOnlyHint"),
                a.destructive_hint.expect("destructiveHint"),
                a.open_world_hint.expect("openWorldHint"),
            )
        };
        for tool in tool_list() {
            hints(&tool.name);
        }
        assert_eq!(hints("web_search"), (true, false, true));
        assert_eq!(hints("web_fetch"), (true, false, true));
    }
}
