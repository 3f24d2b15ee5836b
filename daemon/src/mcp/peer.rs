//! One MCP server connection, kept alive by its own task.
//!
//! The task connects (spawning the command over stdio, or opening the
//! streamable-HTTP endpoint), lists the tools, then waits for the connection
//! to end; when it does, it reconnects with a growing pause. Each change is
//! published as an MCP event. Stopping the peer aborts the task, which drops
//! the connection and, for a command, kills the process.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crabtalk_proto::msg::{McpEventKind, McpEventMsg, McpStatus};
use parking_lot::Mutex;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject};
use rmcp::service::{Peer as Connection, RoleClient};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use super::Origin;
use crate::storage::now_rfc3339;
use crate::tools::ToolOutput;

/// The first pause before reconnecting; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// A tool of a server.
#[derive(Debug, Clone)]
pub struct RemoteTool {
    /// The name the server knows it by.
    pub name: String,
    /// The name agents call it by: `server__tool`, safe for every provider.
    pub qualified: String,
    pub description: String,
    pub schema: serde_json::Value,
}

/// Where a connection is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Connecting,
    Connected,
    Failed(String),
    Disconnected,
}

impl Status {
    pub fn wire(&self) -> McpStatus {
        match self {
            Self::Connecting => McpStatus::Connecting,
            Self::Connected => McpStatus::Connected,
            Self::Failed(_) => McpStatus::Failed,
            Self::Disconnected => McpStatus::Disconnected,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connecting => f.write_str("connecting"),
            Self::Connected => f.write_str("connected"),
            Self::Failed(error) => write!(f, "failed: {error}"),
            Self::Disconnected => f.write_str("disconnected"),
        }
    }
}

/// How a peer connects and behaves.
#[derive(Clone)]
pub struct PeerSettings {
    pub connect_timeout: Duration,
    /// The environment a command gets on top of the daemon's.
    pub env: BTreeMap<String, String>,
}

/// One server.
pub struct Peer {
    /// The namespace of its tools (`name__tool`).
    pub name: String,
    pub origin: Origin,
    state: Mutex<State>,
    supervisor: Mutex<Option<AbortHandle>>,
}

struct State {
    status: Status,
    tools: Vec<RemoteTool>,
    connection: Option<Connection<RoleClient>>,
}

impl Peer {
    /// Starts a peer and its task.
    pub fn start(
        name: String,
        origin: Origin,
        settings: PeerSettings,
        events: broadcast::Sender<McpEventMsg>,
        owners: String,
    ) -> Arc<Self> {
        let peer = Arc::new(Self {
            name,
            origin,
            state: Mutex::new(State {
                status: Status::Connecting,
                tools: Vec::new(),
                connection: None,
            }),
            supervisor: Mutex::new(None),
        });
        let task = tokio::spawn(supervise(Arc::downgrade(&peer), settings, events, owners));
        *peer.supervisor.lock() = Some(task.abort_handle());
        peer
    }

    /// Stops the task; the connection (and a spawned command) goes with it.
    pub fn stop(&self) {
        if let Some(task) = self.supervisor.lock().take() {
            task.abort();
        }
        let mut state = self.state.lock();
        state.connection = None;
        state.status = Status::Disconnected;
    }

    pub fn status(&self) -> Status {
        self.state.lock().status.clone()
    }

    pub fn tools(&self) -> Vec<RemoteTool> {
        self.state.lock().tools.clone()
    }

    /// Calls `tool` with a timeout; every failure is an error result.
    pub async fn call(
        &self,
        tool: &RemoteTool,
        arguments: Option<JsonObject>,
        timeout: Duration,
    ) -> ToolOutput {
        let connection = {
            let state = self.state.lock();
            match &state.connection {
                Some(connection) => connection.clone(),
                None => {
                    return ToolOutput::error(format!(
                        "the MCP server {} is not connected ({}); try again later",
                        self.name, state.status
                    ));
                }
            }
        };
        let mut params = CallToolRequestParams::new(tool.name.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        match tokio::time::timeout(timeout, connection.call_tool(params)).await {
            Err(_) => ToolOutput::error(format!(
                "{} did not answer within {} s ([mcp] call_timeout_secs); the call was cancelled",
                tool.qualified,
                timeout.as_secs()
            )),
            Ok(Err(err)) => ToolOutput::error(format!("{} failed: {err}", tool.qualified)),
            Ok(Ok(result)) => render(result),
        }
    }

    fn set(
        &self,
        status: Status,
        tools: Option<Vec<RemoteTool>>,
        connection: Option<Connection<RoleClient>>,
    ) {
        let mut state = self.state.lock();
        state.status = status;
        if let Some(tools) = tools {
            state.tools = tools;
        }
        state.connection = connection;
    }
}

/// The text a model reads for a tool result.
fn render(result: CallToolResult) -> ToolOutput {
    let mut parts = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[image: {}, {} bytes of base64]",
                image.mime_type,
                image.data.len()
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio: {}, {} bytes of base64]",
                audio.mime_type,
                audio.data.len()
            ),
            ContentBlock::Resource(resource) => match &resource.resource {
                rmcp::model::ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[{uri}]\n{text}")
                }
                rmcp::model::ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[{uri}: {} bytes of base64]", blob.len())
                }
                _ => "[a resource of a kind this daemon does not show]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource: {}]", link.uri),
            _ => "[content of a kind this daemon does not show]".to_owned(),
        });
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error.unwrap_or(false) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

/// `[A-Za-z0-9_-]`, at most `max` bytes: what every provider accepts in a
/// tool name.
pub fn sanitize(name: &str, max: usize) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(max);
    out
}

/// Tool names are at most 64 bytes for OpenAI-style providers.
const MAX_TOOL_NAME: usize = 64;

fn remote_tools(server: &str, tools: Vec<rmcp::model::Tool>) -> Vec<RemoteTool> {
    let prefix = sanitize(server, 24);
    tools
        .into_iter()
        .map(|tool| {
            let name = tool.name.to_string();
            let qualified = sanitize(&format!("{prefix}__{name}"), MAX_TOOL_NAME);
            RemoteTool {
                description: format!("[{server}] {}", tool.description.as_deref().unwrap_or("")),
                schema: serde_json::Value::Object((*tool.input_schema).clone()),
                qualified,
                name,
            }
        })
        .collect()
}

type Running = rmcp::service::RunningService<RoleClient, ()>;

async fn connect(origin: &Origin, settings: &PeerSettings) -> Result<Running, String> {
    match origin {
        Origin::Declared(config) => match (&config.command, &config.url) {
            (Some(command), _) => {
                let mut process = tokio::process::Command::new(command);
                process
                    .args(&config.args)
                    .envs(&settings.env)
                    .envs(&config.env);
                let (transport, _) = rmcp::transport::TokioChildProcess::builder(process)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|err| format!("cannot start {command}: {err}"))?;
                ().serve(transport)
                    .await
                    .map_err(|err| format!("the MCP handshake with {command} failed: {err}"))
            }
            (None, Some(url)) => {
                let mut transport_config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(auth) = &config.auth {
                    transport_config =
                        transport_config.auth_header(auth.trim_start_matches("Bearer ").to_owned());
                }
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::from_config(transport_config);
                ().serve(transport)
                    .await
                    .map_err(|err| format!("the MCP handshake with {url} failed: {err}"))
            }
            (None, None) => Err("the server has neither a command nor a url".into()),
        },
        Origin::Component { port, .. } => {
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!(
                "http://127.0.0.1:{port}/mcp"
            ));
            ().serve(transport)
                .await
                .map_err(|err| format!("the MCP handshake on port {port} failed: {err}"))
        }
    }
}

async fn supervise(
    peer: Weak<Peer>,
    settings: PeerSettings,
    events: broadcast::Sender<McpEventMsg>,
    owners: String,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let Some(this) = peer.upgrade() else { return };
        this.set(Status::Connecting, None, None);
        publish(
            &events,
            &this,
            McpEventKind::Connecting,
            Vec::new(),
            "",
            &owners,
        );
        let connected = tokio::time::timeout(settings.connect_timeout, async {
            let running = connect(&this.origin, &settings).await?;
            let tools = running
                .list_all_tools()
                .await
                .map_err(|err| format!("tools/list failed: {err}"))?;
            Ok::<_, String>((running, tools))
        })
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer within {} s",
                settings.connect_timeout.as_secs()
            ))
        });
        match connected {
            Ok((running, tools)) => {
                let tools = remote_tools(&this.name, tools);
                let names = tools.iter().map(|tool| tool.name.clone()).collect();
                this.set(Status::Connected, Some(tools), Some(running.peer().clone()));
                publish(&events, &this, McpEventKind::Connected, names, "", &owners);
                tracing::info!("MCP server {} connected", this.name);
                backoff = FIRST_BACKOFF;
                drop(this);
                let quit = running.waiting().await;
                let Some(this) = peer.upgrade() else { return };
                tracing::warn!("MCP server {} disconnected ({quit:?})", this.name);
                this.set(Status::Disconnected, Some(Vec::new()), None);
                publish(
                    &events,
                    &this,
                    McpEventKind::Disconnected,
                    Vec::new(),
                    "the connection ended",
                    &owners,
                );
            }
            Err(error) => {
                tracing::warn!("MCP server {}: {error}", this.name);
                this.set(Status::Failed(error.clone()), Some(Vec::new()), None);
                publish(
                    &events,
                    &this,
                    McpEventKind::Failed,
                    Vec::new(),
                    &error,
                    &owners,
                );
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn publish(
    events: &broadcast::Sender<McpEventMsg>,
    peer: &Peer,
    kind: McpEventKind,
    tools: Vec<String>,
    error: &str,
    owners: &str,
) {
    let _ = events.send(McpEventMsg {
        kind: kind as i32,
        name: peer.name.clone(),
        tools,
        error: error.to_owned(),
        timestamp: now_rfc3339(),
        agent: owners.to_owned(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_safe_for_every_provider() {
        assert_eq!(sanitize("web search.v2", 64), "web_search_v2");
        let tools = remote_tools(
            "my server",
            vec![rmcp::model::Tool::new(
                "look up",
                "finds",
                Arc::new(serde_json::Map::new()),
            )],
        );
        assert_eq!(tools[0].qualified, "my_server__look_up");
        assert_eq!(tools[0].name, "look up");
        assert_eq!(sanitize(&"x".repeat(100), 64).len(), 64);
    }
}
