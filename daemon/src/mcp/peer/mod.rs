//! One MCP server connection, kept alive by its own task.
//!
//! The task connects (starting the command over stdio, or opening the
//! streamable-HTTP endpoint), lists the tools, and then serves the
//! connection until it ends:
//!
//! - `notifications/tools/list_changed` from the server: the tools are
//!   listed again, and offered from the next turn on;
//! - a call that finds the connection broken (a dead HTTP server answers
//!   nothing): the connection is marked lost at once — its tools are no
//!   longer offered — and dropped;
//! - the connection ending by itself (a stdio server exited): what is left
//!   of its process group is killed and the exit status and last stderr
//!   line are recorded.
//!
//! Then it waits ([`Backoff`]) and connects again, counting restarts. Every
//! change is published as an MCP event. Stopping the peer closes the
//! connection and ends a stdio server in order (see [`super::stdio`]).

use std::sync::Arc;
use std::time::Duration;

use crabtalk_proto::msg::{McpEventKind, McpEventMsg, McpStatus};
use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, JsonObject, PingRequest,
};
use rmcp::service::{Peer as Connection, RoleClient};
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod supervisor;

use self::supervisor::Supervisor;
use super::Origin;
use super::backoff::RestartPolicy;
use super::caller::Caller;
use super::failure::call_failure;
use super::stderr::StderrTail;
use crate::hook::ToolOutput;
use crate::storage::now_rfc3339;

/// Why a call of a server's tool brought no result of the server's; the
/// text is what the model (or the bridge's host) reads. `tool` is the
/// tool's qualified name (`server__tool`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CallError {
    #[error("the MCP server {server} is not connected ({status}); try again later")]
    NotConnected { server: String, status: String },
    #[error(
        "{tool} did not answer within {secs} s ([mcp] call_timeout_secs); the call was cancelled"
    )]
    TimedOut { tool: String, secs: u64 },
    /// The connection broke; it is being made again.
    #[error("{tool} failed: {failure}; the daemon is connecting to {server} again")]
    ConnectionLost {
        tool: String,
        failure: String,
        server: String,
    },
    /// The connection failed on this reply but still answers (a reply
    /// over the HTTP limit).
    #[error(
        "{tool} failed: its reply was lost, though the server still answers (over HTTP the \
         daemon reads replies of at most 16 MiB); {failure}"
    )]
    ReplyLost { tool: String, failure: String },
    /// The server answered the call with an error, or the call failed
    /// (in [`call_failure`]'s words).
    #[error("{tool} failed: {failure}")]
    Failed { tool: String, failure: String },
}

/// A tool of a server.
#[derive(Debug, Clone)]
pub(crate) struct RemoteTool {
    /// The name the server knows it by.
    pub name: String,
    /// The name agents call it by: `server__tool`, safe for every provider.
    pub qualified: String,
    pub description: String,
    pub schema: serde_json::Value,
    /// The tool as the server listed it (title, annotations, output
    /// schema), for those who offer it on as it is (`crabtalkd mcp`).
    pub listed: Arc<rmcp::model::Tool>,
}

/// Where a connection is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Connecting,
    Connected,
    Failed(String),
    /// It was connected, and the connection ended (why).
    Disconnected(String),
}

impl Status {
    pub(crate) fn wire(&self) -> McpStatus {
        match self {
            Self::Connecting => McpStatus::Connecting,
            Self::Connected => McpStatus::Connected,
            Self::Failed(_) => McpStatus::Failed,
            Self::Disconnected(_) => McpStatus::Disconnected,
        }
    }

    /// Why it is not connected, if it is not.
    pub(crate) fn error(&self) -> &str {
        match self {
            Self::Failed(error) | Self::Disconnected(error) => error,
            Self::Connecting | Self::Connected => "",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connecting => f.write_str("connecting"),
            Self::Connected => f.write_str("connected"),
            Self::Failed(error) => write!(f, "failed: {error}"),
            Self::Disconnected(error) => write!(f, "disconnected: {error}"),
        }
    }
}

/// How a peer connects and behaves.
#[derive(Clone)]
pub(super) struct PeerSettings {
    pub connect_timeout: Duration,
    pub restart: RestartPolicy,
    /// The environment a command gets on top of the daemon's.
    pub env: std::collections::BTreeMap<String, String>,
}

/// One server.
pub(super) struct Peer {
    /// The namespace of its tools (`name__tool`).
    pub name: String,
    pub origin: Origin,
    state: Mutex<State>,
    stderr: Arc<StderrTail>,
    /// Stops the task (and so the connection).
    stop: CancellationToken,
    /// A call found the connection broken; the task drops it.
    broken: Arc<Notify>,
    task: Mutex<Option<JoinHandle<()>>>,
}

struct State {
    status: Status,
    tools: Vec<RemoteTool>,
    connection: Option<Connection<RoleClient>>,
    /// Which connection `connection` is: a call that fails reports the
    /// connection it used, and only that one is dropped.
    epoch: u64,
    restarts: u32,
}

impl Peer {
    /// Starts a peer and its task.
    pub(super) fn start(
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
                epoch: 0,
                restarts: 0,
            }),
            stderr: Arc::new(StderrTail::default()),
            stop: CancellationToken::new(),
            broken: Arc::new(Notify::new()),
            task: Mutex::new(None),
        });
        let supervisor = Supervisor {
            peer: Arc::downgrade(&peer),
            broken: peer.broken.clone(),
            settings,
            events,
            owners,
            stop: peer.stop.clone(),
        };
        *peer.task.lock() = Some(tokio::spawn(supervisor.run()));
        peer
    }

    /// Stops the task; the connection closes and a command is ended in the
    /// background.
    pub(super) fn stop(&self) {
        self.stop.cancel();
        let mut state = self.state.lock();
        state.connection = None;
        state.tools.clear();
        state.status = Status::Disconnected("stopped".into());
        drop(state);
        crate::mcp::tools_changed();
    }

    /// Tells subscribers that this server was stopped on purpose (its
    /// component is gone, no agent declares it), and why: the connection
    /// closes without an event of its own.
    pub(super) fn announce_stopped(&self, events: &broadcast::Sender<McpEventMsg>, reason: &str) {
        self.publish(
            events,
            Event {
                kind: McpEventKind::Disconnected,
                tools: Vec::new(),
                error: reason,
                owners: "",
                retry_in: None,
            },
        );
    }

    /// Stops the task and waits until the connection is closed and a
    /// command's processes are gone.
    pub(super) async fn shut_down(&self) {
        self.stop();
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Ends the task at once (its connection and processes are dropped,
    /// which kills them).
    pub(super) fn abort(&self) {
        if let Some(task) = self.task.lock().take() {
            task.abort();
        }
    }

    pub(super) fn status(&self) -> Status {
        self.state.lock().status.clone()
    }

    pub(super) fn tools(&self) -> Vec<RemoteTool> {
        self.state.lock().tools.clone()
    }

    pub(super) fn restarts(&self) -> u32 {
        self.state.lock().restarts
    }

    /// The last line the server wrote to stderr.
    pub(super) fn last_stderr(&self) -> Option<String> {
        self.stderr.last_line()
    }

    /// Calls `tool` for `caller` with a timeout; every failure is an error
    /// result.
    pub(super) async fn call(
        &self,
        tool: &RemoteTool,
        arguments: Option<JsonObject>,
        caller: &Caller,
        timeout: Duration,
    ) -> ToolOutput {
        match self.call_result(tool, arguments, caller, timeout).await {
            Ok(result) => render(result),
            Err(failure) => ToolOutput::error(failure.to_string()),
        }
    }

    /// Calls `tool` for `caller` with a timeout: the server's own result,
    /// or what went wrong.
    pub(super) async fn call_result(
        &self,
        tool: &RemoteTool,
        arguments: Option<JsonObject>,
        caller: &Caller,
        timeout: Duration,
    ) -> Result<CallToolResult, CallError> {
        let (connection, epoch) = {
            let state = self.state.lock();
            match &state.connection {
                Some(connection) => (connection.clone(), state.epoch),
                None => {
                    return Err(CallError::NotConnected {
                        server: self.name.clone(),
                        status: state.status.to_string(),
                    });
                }
            }
        };
        let mut params = CallToolRequestParams::new(tool.name.clone());
        params.meta = Some(caller.meta());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let tool = tool.qualified.clone();
        match tokio::time::timeout(timeout, connection.call_tool(params)).await {
            Err(_) => Err(CallError::TimedOut {
                tool,
                secs: timeout.as_secs(),
            }),
            Ok(Err(err)) => {
                let failure = call_failure(&err);
                if failure.connection_lost && !still_answers(&connection).await {
                    self.lose(epoch, &failure.message);
                    return Err(CallError::ConnectionLost {
                        tool,
                        failure: failure.message,
                        server: self.name.clone(),
                    });
                }
                if failure.connection_lost {
                    return Err(CallError::ReplyLost {
                        tool,
                        failure: failure.message,
                    });
                }
                Err(CallError::Failed {
                    tool,
                    failure: failure.message,
                })
            }
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// Marks connection `epoch` lost (if it is still the current one): its
    /// tools are withdrawn now, and the task drops it.
    fn lose(&self, epoch: u64, reason: &str) {
        let mut state = self.state.lock();
        if state.epoch != epoch || state.connection.is_none() {
            return;
        }
        state.connection = None;
        state.tools.clear();
        state.status = Status::Disconnected(reason.to_owned());
        drop(state);
        crate::mcp::tools_changed();
        tracing::warn!("MCP server {}: {reason}", self.name);
        self.broken.notify_one();
    }

    /// Whether connection `epoch` was marked lost by a call.
    fn is_lost(&self, epoch: u64) -> bool {
        let state = self.state.lock();
        state.epoch == epoch && state.connection.is_none()
    }

    fn set(&self, status: Status) {
        self.state.lock().status = status;
    }

    /// Records a new connection; returns its epoch.
    fn connected(&self, tools: Vec<RemoteTool>, connection: Connection<RoleClient>) -> u64 {
        let mut state = self.state.lock();
        state.epoch += 1;
        state.status = Status::Connected;
        state.tools = tools;
        state.connection = Some(connection);
        let epoch = state.epoch;
        drop(state);
        crate::mcp::tools_changed();
        epoch
    }

    fn disconnected(&self, status: Status) {
        let mut state = self.state.lock();
        state.status = status;
        state.tools.clear();
        state.connection = None;
        drop(state);
        crate::mcp::tools_changed();
    }

    /// A reason with the last stderr line, if the server wrote one.
    fn with_stderr(&self, reason: String) -> String {
        match self.stderr.last_line() {
            Some(line) => format!("{reason}; its last stderr line: {line}"),
            None => reason,
        }
    }

    fn log_stderr(&self) {
        let lines = self.stderr.lines();
        if !lines.is_empty() {
            tracing::warn!(
                "MCP server {} stderr (last {} lines):\n  {}",
                self.name,
                lines.len(),
                lines.join("\n  ")
            );
        }
    }

    fn publish(&self, events: &broadcast::Sender<McpEventMsg>, event: Event<'_>) {
        let restarts = self.restarts();
        let _ = events.send(McpEventMsg {
            kind: event.kind as i32,
            name: self.name.clone(),
            tools: event.tools,
            error: event.error.to_owned(),
            timestamp: now_rfc3339(),
            agent: event.owners.to_owned(),
            retry_in_ms: event.retry_in.map_or(0, |pause| pause.as_millis() as u64),
            restarts,
        });
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// An MCP event about to be published.
struct Event<'a> {
    kind: McpEventKind,
    tools: Vec<String>,
    error: &'a str,
    owners: &'a str,
    retry_in: Option<Duration>,
}

/// How long a server gets to answer a ping after a call failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a connection on which a call just failed still answers a ping:
/// over HTTP one request can fail (a reply too large to read) while the
/// connection is fine.
async fn still_answers(connection: &Connection<RoleClient>) -> bool {
    if connection.is_transport_closed() {
        return false;
    }
    let ping = connection.send_request(ClientRequest::PingRequest(PingRequest::default()));
    matches!(tokio::time::timeout(PROBE_TIMEOUT, ping).await, Ok(Ok(_)))
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
