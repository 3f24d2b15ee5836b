//! One MCP tool server for every component (RFC 0043).
//!
//! A component says what its tools are — for each a [`ToolSpec`] (name,
//! title, description, input schema, what it may do as [`Hints`], what a
//! cancelled call does) and an async handler — and the [`ToolServer`] does
//! the MCP side: `initialize` answers with the program's own name and
//! version ([`this_program!`](crate::this_program)), `tools/list` lists
//! every tool with its annotations, and `tools/call` finds the tool, reads
//! the call's `_meta`, coerces its arguments against the tool's schema
//! (`arguments.rs`), runs the handler and turns its answer into a result:
//! its structured content, or its [`ToolError`] as a result flagged
//! `isError` (an unknown tool is the one JSON-RPC error; see [`ToolError`]).
//!
//! The handlers share one state, handed to each call as an `Arc`:
//!
//! ```no_run
//! use std::sync::Arc;
//! use crabtalk_kit::tool_server::{Hints, Input, OnCancel, ToolCall, ToolError, ToolServer, ToolSpec};
//! use serde_json::{Value, json};
//!
//! struct Clock;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct NowArgs {
//!     /// Minutes to add (default 0).
//!     #[serde(default)]
//!     plus: Option<u32>,
//! }
//!
//! impl Clock {
//!     async fn now(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
//!         let args: NowArgs = call.read()?;
//!         Ok(json!({ "plus": args.plus.unwrap_or(0) }))
//!     }
//! }
//!
//! let server = ToolServer::builder(crabtalk_kit::this_program!(), Clock)
//!     .instructions("What time it is.")
//!     .tool(
//!         ToolSpec {
//!             name: "now",
//!             title: "Tell the time",
//!             description: "The time now, or in `plus` minutes.",
//!             input: Input::of::<NowArgs>(),
//!             hints: Hints { read_only: true, destructive: false, idempotent: false, open_world: false },
//!             on_cancel: OnCancel::Stop,
//!         },
//!         Clock::now,
//!     )
//!     .build();
//! let router = server.router(); // for `Component::serve_mcp`
//! ```

mod arguments;
mod call;
mod error;
mod schema;
mod spec;

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

pub use arguments::fix_string_arguments;
pub use call::{ToolAnswer, ToolCall};
pub use error::ToolError;
pub use spec::{Hints, Input, OnCancel, ToolSpec};

/// Who answers `initialize`: the program's own name and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    /// The package name, e.g. `crabtalk-cron`.
    pub name: &'static str,
    /// The package version.
    pub version: &'static str,
}

/// The [`Program`] of the crate this is written in: its package name and
/// version, from Cargo.
#[macro_export]
macro_rules! this_program {
    () => {
        $crate::tool_server::Program {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
        }
    };
}

type Handler = Box<dyn Fn(ToolCall) -> BoxFuture<'static, CallToolResult> + Send + Sync>;

/// A declared tool: what `tools/list` shows and what `tools/call` runs.
struct Registered {
    tool: Tool,
    on_cancel: OnCancel,
    handler: Handler,
}

/// The component's tools as one rmcp `ServerHandler`, cheap to clone (one
/// per MCP session, all sharing the same tools and state).
#[derive(Clone)]
pub struct ToolServer {
    inner: Arc<Inner>,
}

struct Inner {
    program: Program,
    instructions: Option<String>,
    tools: Vec<Registered>,
}

/// Collects a [`ToolServer`]'s tools around the state `S` their handlers
/// share.
pub struct ToolServerBuilder<S> {
    state: Arc<S>,
    inner: Inner,
}

impl ToolServer {
    /// Starts declaring the tools of `program`, whose handlers share `state`.
    pub fn builder<S: Send + Sync + 'static>(program: Program, state: S) -> ToolServerBuilder<S> {
        ToolServerBuilder {
            state: Arc::new(state),
            inner: Inner {
                program,
                instructions: None,
                tools: Vec::new(),
            },
        }
    }

    /// An `axum` router serving these tools at `/mcp` (see
    /// [`mcp_router`](crate::mcp::mcp_router)), arguments sent as a JSON
    /// string holding the object accepted too
    /// ([`fix_string_arguments`]).
    pub fn router(self) -> axum::Router {
        arguments::accept_string_arguments(crate::mcp::mcp_router(move || self.clone()))
    }

    /// The tools as `tools/list` lists them, in the order declared.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.tools.iter().map(|r| r.tool.clone()).collect()
    }

    /// What `initialize` answers.
    fn config(&self) -> ServerConfig {
        let program = self.inner.program;
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(program.name, program.version));
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// The handler's future for a call of `name`, or the protocol error
    /// for a tool that does not exist (invalid params, as MCP says for an
    /// unknown tool; its message names the tools).
    fn run(
        &self,
        name: &str,
        mut arguments: JsonObject,
        meta: JsonObject,
    ) -> Result<(OnCancel, BoxFuture<'static, CallToolResult>), McpError> {
        let Some(registered) = self.inner.tools.iter().find(|r| r.tool.name == name) else {
            return Err(McpError::invalid_params(
                format!("no tool `{name}`; the tools are {}", self.names()),
                None,
            ));
        };
        arguments::coerce(&mut arguments, &registered.tool.input_schema);
        let call = ToolCall::new(name, arguments, meta);
        Ok((registered.on_cancel, (registered.handler)(call)))
    }

    /// The tools' names as a sentence: `a, b and c`.
    fn names(&self) -> String {
        let names: Vec<&str> = self
            .inner
            .tools
            .iter()
            .map(|r| r.tool.name.as_ref())
            .collect();
        match names.split_last() {
            None => "none".to_owned(),
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }
}

impl<S: Send + Sync + 'static> ToolServerBuilder<S> {
    /// What the server tells a client about itself at `initialize`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner.instructions = Some(instructions.into());
        self
    }

    /// Declares a tool: `spec` says what it is, `handler` runs a call of it
    /// with the shared state.
    pub fn tool<F, Fut, A>(mut self, spec: ToolSpec, handler: F) -> Self
    where
        F: Fn(Arc<S>, ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = A> + Send + 'static,
        A: ToolAnswer,
    {
        let state = self.state.clone();
        let handler: Handler = Box::new(move |call| -> BoxFuture<'static, CallToolResult> {
            let answer = handler(state.clone(), call);
            Box::pin(async move { answer.await.into_result() })
        });
        self.inner.tools.push(Registered {
            tool: spec.tool(),
            on_cancel: spec.on_cancel,
            handler,
        });
        self
    }

    /// The server.
    pub fn build(self) -> ToolServer {
        ToolServer {
            inner: Arc::new(self.inner),
        }
    }
}

/// The call's `_meta`: the request's (where the daemon puts who called),
/// then the params' own over it.
fn call_meta(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> JsonObject {
    let mut meta = context.meta.0.clone();
    if let Some(own) = &request.meta {
        meta.extend(own.0.clone());
    }
    meta.0
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        self.config()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let meta = call_meta(&request, &context);
        let arguments = request.arguments.unwrap_or_default();
        let (on_cancel, answer) = self.run(&request.name, arguments, meta)?;
        if on_cancel == OnCancel::Finish {
            return Ok(answer.await.into());
        }
        // rmcp only signals a cancelled request's token and would let the
        // handler run to its end; this drops it at once.
        tokio::select! {
            result = answer => Ok(result.into()),
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
mod tests;
