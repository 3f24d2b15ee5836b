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
//! session closed) is dropped at once: both tools are declared
//! [`OnCancel::Stop`], so the kit's tool server races the call against the
//! request's cancellation (rmcp alone would let it run to its end).
//! Dropping a fetch stops the page being made readable at its next look
//! at its budget (RFC 0063).

pub(crate) mod args;

use std::sync::Arc;

use crabtalk_kit::tool_server::{
    Hints, Input, OnCancel, ToolCall, ToolError, ToolServer, ToolSpec,
};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::config::EngineId;
use crate::web::{MAX_CHARS_LIMIT, Web};

/// What the tools share: the web, and the count of calls under way.
pub(crate) struct SearchTools {
    web: Arc<Web>,
    busy: crate::burst::Busy,
}

/// Both tools only read the public web, and say so to hosts that offer
/// them (`crabtalkd mcp`).
const READS_THE_WEB: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};

/// The tools, served as one MCP server. A call its client cancels is
/// dropped at once (RFC 0063): nothing is left half done by a read.
pub(crate) fn server(web: Arc<Web>) -> ToolServer {
    let engines: Vec<&str> = EngineId::ALL.iter().map(|e| e.name()).collect();
    let tools = SearchTools {
        web,
        busy: crate::burst::Busy::default(),
    };
    ToolServer::builder(crabtalk_kit::this_program!(), tools)
        .instructions("crabtalk's web access: web_search (several engines, fused, each engine's health reported) and web_fetch (a page as readable Markdown; public addresses only).")
        .tool(
            ToolSpec {
                name: "web_search",
                title: "Search the web",
                description: "Search the web: several engines at once, results fused and de-duplicated. Each result lists the engines that found it and at which rank; `engines` in the answer says how each engine did (ok, no_results, rate_limited, blocked, timeout, error, suspended, disabled) — when engines are failing, say so rather than concluding nothing exists. Use web_fetch to read a result.",
                input: Input::schema(json!({
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
                hints: READS_THE_WEB,
                on_cancel: OnCancel::Stop,
            },
            SearchTools::search,
        )
        .tool(
            ToolSpec {
                name: "web_fetch",
                title: "Read a web page",
                description: "Read a web page (http or https, public addresses only) as Markdown or plain text: the main content, with its title and final URL after redirects. Long pages are cut at max_chars, and the answer says so.",
                input: Input::schema(json!({
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "description": "The page's http(s) URL."},
                        "max_chars": {"type": "integer", "minimum": 1, "maximum": MAX_CHARS_LIMIT, "description": "The most characters of content returned (default 50000)."},
                        "format": {"type": "string", "enum": ["markdown", "text"], "description": "markdown (default) or text."}
                    },
                    "required": ["url"],
                    "additionalProperties": false
                })),
                hints: READS_THE_WEB,
                on_cancel: OnCancel::Stop,
            },
            SearchTools::fetch,
        )
        .build()
}

impl SearchTools {
    async fn search(self: Arc<Self>, call: ToolCall) -> Result<CallToolResult, ToolError> {
        // Freed memory goes back to the system when the last call ends.
        let _busy = self.busy.enter();
        let request = args::search_request(call.arguments(), self.web.settings().count)?;
        let answer = self.web.search(&request).await;
        let value = serde_json::to_value(&answer).unwrap_or(Value::Null);
        Ok(if answer.nobody_answered() {
            CallToolResult::structured_error(value)
        } else {
            CallToolResult::structured(value)
        })
    }

    async fn fetch(self: Arc<Self>, call: ToolCall) -> Result<CallToolResult, ToolError> {
        let _busy = self.busy.enter();
        let fetch = args::fetch_args(call.arguments())?;
        let answer = self
            .web
            .fetch(&fetch.url, fetch.format, fetch.max_chars)
            .await
            .map_err(ToolError::failed)?;
        let mut result =
            CallToolResult::structured(serde_json::to_value(&answer).unwrap_or(Value::Null));
        result.content = vec![ContentBlock::text(answer.to_text())];
        Ok(result)
    }
}
