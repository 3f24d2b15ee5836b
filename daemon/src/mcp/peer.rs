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

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crabtalk_proto::msg::{McpEventKind, McpEventMsg, McpStatus};
use parking_lot::Mutex;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, JsonObject, PingRequest,
};
use rmcp::service::{Peer as Connection, RoleClient, RunningService};
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Origin;
use super::backoff::{Backoff, RestartPolicy};
use super::caller::Caller;
use super::client::DaemonClient;
use super::failure::{call_failure, connect_failure};
use super::names::qualify_all;
use super::stderr::StderrTail;
use super::stdio::{Launch, StdioProcess};
use crate::hook::ToolOutput;
use crate::storage::now_rfc3339;

/// A tool of a server.
#[derive(Debug, Clone)]
pub struct RemoteTool {
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
pub enum Status {
    Connecting,
    Connected,
    Failed(String),
    /// It was connected, and the connection ended (why).
    Disconnected(String),
}

impl Status {
    pub fn wire(&self) -> McpStatus {
        match self {
            Self::Connecting => McpStatus::Connecting,
            Self::Connected => McpStatus::Connected,
            Self::Failed(_) => McpStatus::Failed,
            Self::Disconnected(_) => McpStatus::Disconnected,
        }
    }

    /// Why it is not connected, if it is not.
    pub fn error(&self) -> &str {
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
            Err(failure) => ToolOutput::error(failure),
        }
    }

    /// Calls `tool` for `caller` with a timeout: the server's own result,
    /// or what went wrong, in words.
    pub(super) async fn call_result(
        &self,
        tool: &RemoteTool,
        arguments: Option<JsonObject>,
        caller: &Caller,
        timeout: Duration,
    ) -> Result<CallToolResult, String> {
        let (connection, epoch) = {
            let state = self.state.lock();
            match &state.connection {
                Some(connection) => (connection.clone(), state.epoch),
                None => {
                    return Err(format!(
                        "the MCP server {} is not connected ({}); try again later",
                        self.name, state.status
                    ));
                }
            }
        };
        let mut params = CallToolRequestParams::new(tool.name.clone());
        params.meta = Some(caller.meta());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        match tokio::time::timeout(timeout, connection.call_tool(params)).await {
            Err(_) => Err(format!(
                "{} did not answer within {} s ([mcp] call_timeout_secs); the call was cancelled",
                tool.qualified,
                timeout.as_secs()
            )),
            Ok(Err(err)) => {
                let failure = call_failure(&err);
                if failure.connection_lost && !still_answers(&connection).await {
                    self.lose(epoch, &failure.message);
                    return Err(format!(
                        "{} failed: {}; the daemon is connecting to {} again",
                        tool.qualified, failure.message, self.name
                    ));
                }
                if failure.connection_lost {
                    return Err(format!(
                        "{} failed: its reply was lost, though the server still answers (over \
                         HTTP the daemon reads replies of at most 16 MiB); {}",
                        tool.qualified, failure.message
                    ));
                }
                Err(format!("{} failed: {}", tool.qualified, failure.message))
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
        state.epoch
    }

    fn disconnected(&self, status: Status) {
        let mut state = self.state.lock();
        state.status = status;
        state.tools.clear();
        state.connection = None;
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

/// A live connection: the rmcp service, and the process behind a stdio one.
struct Live {
    running: RunningService<RoleClient, DaemonClient>,
    process: Option<StdioProcess>,
    tools_changed: Arc<Notify>,
}

/// How a connection ended.
enum Ending {
    /// The peer was stopped.
    Stopped,
    /// It ended by itself or broke (why).
    Lost(String),
}

/// The task of one peer.
struct Supervisor {
    peer: Weak<Peer>,
    broken: Arc<Notify>,
    settings: PeerSettings,
    events: broadcast::Sender<McpEventMsg>,
    owners: String,
    stop: CancellationToken,
}

impl Supervisor {
    async fn run(self) {
        let mut backoff = Backoff::new(self.settings.restart);
        let mut first = true;
        loop {
            let Some(peer) = self.peer.upgrade() else {
                return;
            };
            if !first {
                peer.state.lock().restarts += 1;
            }
            first = false;
            peer.set(Status::Connecting);
            peer.publish(&self.events, self.event(McpEventKind::Connecting));
            let attempt = tokio::select! {
                () = self.stop.cancelled() => return,
                attempt = tokio::time::timeout(self.settings.connect_timeout, self.connect(&peer)) => attempt,
            };
            let attempt = attempt.unwrap_or_else(|_| {
                Err(format!(
                    "no answer within {} s ([mcp] connect_timeout_secs)",
                    self.settings.connect_timeout.as_secs()
                ))
            });
            let pause = match attempt {
                Ok((live, tools)) => {
                    let names: Vec<String> = tools.iter().map(|tool| tool.name.clone()).collect();
                    let epoch = peer.connected(tools, live.running.peer().clone());
                    tracing::info!("MCP server {} connected", peer.name);
                    peer.publish(
                        &self.events,
                        Event {
                            tools: names,
                            ..self.event(McpEventKind::Connected)
                        },
                    );
                    drop(peer);
                    let since = Instant::now();
                    let ending = self.serve(live, epoch).await;
                    let Some(peer) = self.peer.upgrade() else {
                        return;
                    };
                    let reason = match ending {
                        Ending::Stopped => return,
                        Ending::Lost(reason) => peer.with_stderr(reason),
                    };
                    let pause = backoff.pause_after(Some(since.elapsed()));
                    tracing::warn!(
                        "MCP server {} disconnected: {reason}; connecting again in {} ms",
                        peer.name,
                        pause.as_millis()
                    );
                    peer.log_stderr();
                    peer.disconnected(Status::Disconnected(reason.clone()));
                    peer.publish(
                        &self.events,
                        Event {
                            error: &reason,
                            retry_in: Some(pause),
                            ..self.event(McpEventKind::Disconnected)
                        },
                    );
                    pause
                }
                Err(error) => {
                    let error = peer.with_stderr(error);
                    let pause = backoff.pause_after(None);
                    tracing::warn!(
                        "MCP server {}: {error}; trying again in {} ms",
                        peer.name,
                        pause.as_millis()
                    );
                    peer.log_stderr();
                    peer.disconnected(Status::Failed(error.clone()));
                    peer.publish(
                        &self.events,
                        Event {
                            error: &error,
                            retry_in: Some(pause),
                            ..self.event(McpEventKind::Failed)
                        },
                    );
                    pause
                }
            };
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    fn event(&self, kind: McpEventKind) -> Event<'_> {
        Event {
            kind,
            tools: Vec::new(),
            error: "",
            owners: &self.owners,
            retry_in: None,
        }
    }

    /// Connects and lists the tools.
    async fn connect(&self, peer: &Peer) -> Result<(Live, Vec<RemoteTool>), String> {
        let tools_changed = Arc::new(Notify::new());
        let client = DaemonClient::new(tools_changed.clone());
        let (running, process) = match &peer.origin {
            Origin::Declared(config) => match (&config.command, &config.url) {
                (Some(command), _) => {
                    let launch = Launch {
                        command,
                        args: &config.args,
                        env: [&self.settings.env, &config.env],
                    };
                    let spawned = StdioProcess::spawn(&launch, &peer.name, peer.stderr.clone())?;
                    let mut process = spawned.process;
                    match client.serve((spawned.stdout, spawned.stdin)).await {
                        Ok(running) => (running, Some(process)),
                        Err(err) => {
                            let status = process.reap().await;
                            let exited = status
                                .map(|status| format!("; the process exited ({status})"))
                                .unwrap_or_default();
                            return Err(format!(
                                "the MCP handshake with {command} failed: {}{exited}",
                                connect_failure(&err)
                            ));
                        }
                    }
                }
                (None, Some(url)) => {
                    let mut transport_config =
                        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    if let Some(auth) = &config.auth {
                        transport_config = transport_config
                            .auth_header(auth.trim_start_matches("Bearer ").to_owned());
                    }
                    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
                        transport_config,
                    );
                    let running = client.serve(transport).await.map_err(|err| {
                        format!(
                            "the MCP handshake with {url} failed: {}",
                            connect_failure(&err)
                        )
                    })?;
                    (running, None)
                }
                (None, None) => return Err("the server has neither a command nor a url".into()),
            },
            Origin::Component {
                port, port_file, ..
            } => {
                // The owner's token, read at every connect: a component
                // admits nobody else, and follows the file when it changes.
                let token_file = super::component_token_file(port_file);
                let token = match crabtalk_home::token::TokenFile::inspect(&token_file) {
                    crabtalk_home::token::TokenFile::Usable(token) => token,
                    _ => {
                        return Err(format!(
                            "no usable token in {} to present to the component",
                            token_file.display()
                        ));
                    }
                };
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        format!("http://127.0.0.1:{port}/mcp"),
                    )
                    .auth_header(token),
                );
                let running = client.serve(transport).await.map_err(|err| {
                    format!(
                        "the MCP handshake on port {port} failed: {}",
                        connect_failure(&err)
                    )
                })?;
                (running, None)
            }
        };
        let mut live = Live {
            running,
            process,
            tools_changed,
        };
        match list_tools(&peer.name, live.running.peer()).await {
            Ok(tools) => Ok((live, tools)),
            Err(error) => {
                let exited = live
                    .close()
                    .await
                    .map(|status| format!("; the process exited ({status})"))
                    .unwrap_or_default();
                Err(format!("{error}{exited}"))
            }
        }
    }

    /// Serves a connection until it ends.
    async fn serve(&self, live: Live, epoch: u64) -> Ending {
        let Live {
            running,
            mut process,
            tools_changed,
        } = live;
        let connection = running.peer().clone();
        let cancel = running.cancellation_token();
        let quit = running.waiting();
        tokio::pin!(quit);
        let broken = async {
            loop {
                let notified = self.broken.notified();
                let lost = self.peer.upgrade().is_none_or(|peer| peer.is_lost(epoch));
                if lost {
                    return;
                }
                notified.await;
            }
        };
        tokio::pin!(broken);
        loop {
            tokio::select! {
                _ = &mut quit => {
                    break Ending::Lost(match process.as_mut() {
                        Some(process) => match process.reap().await {
                            Some(status) => format!("the server process exited ({status})"),
                            None => "the server closed its output".to_owned(),
                        },
                        None => "the server ended the connection".to_owned(),
                    });
                }
                () = &mut broken => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(super::stdio::EXIT_GRACE, &mut quit).await;
                    if let Some(process) = process.as_mut() {
                        process.stop().await;
                    }
                    let reason = self
                        .peer
                        .upgrade()
                        .map(|peer| peer.status().error().to_owned())
                        .unwrap_or_default();
                    break Ending::Lost(reason);
                }
                () = tools_changed.notified() => self.refresh_tools(&connection, epoch).await,
                () = self.stop.cancelled() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(super::stdio::EXIT_GRACE, &mut quit).await;
                    if let Some(process) = process.as_mut() {
                        process.stop().await;
                    }
                    break Ending::Stopped;
                }
            }
        }
    }

    /// Lists the tools again after the server said they changed.
    async fn refresh_tools(&self, connection: &Connection<RoleClient>, epoch: u64) {
        let Some(peer) = self.peer.upgrade() else {
            return;
        };
        let listed = tokio::time::timeout(
            self.settings.connect_timeout,
            list_tools(&peer.name, connection),
        )
        .await
        .unwrap_or_else(|_| Err("tools/list did not answer".into()));
        match listed {
            Ok(tools) => {
                let names: Vec<String> = tools.iter().map(|tool| tool.name.clone()).collect();
                {
                    let mut state = peer.state.lock();
                    if state.epoch != epoch || state.connection.is_none() {
                        return;
                    }
                    state.tools = tools;
                }
                tracing::info!(
                    "MCP server {}: its tools changed ({})",
                    peer.name,
                    names.join(", ")
                );
                peer.publish(
                    &self.events,
                    Event {
                        tools: names,
                        ..self.event(McpEventKind::Connected)
                    },
                );
            }
            Err(error) => tracing::warn!(
                "MCP server {} said its tools changed, but listing them failed: {error}",
                peer.name
            ),
        }
    }
}

impl Live {
    /// Closes a connection that is not being served yet; for a stdio
    /// server, says how its process exited.
    async fn close(&mut self) -> Option<std::process::ExitStatus> {
        let _ = self
            .running
            .close_with_timeout(super::stdio::EXIT_GRACE)
            .await;
        self.process.as_mut()?.stop().await
    }
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

/// Every tool of the server, named for agents.
async fn list_tools(
    server: &str,
    connection: &Connection<RoleClient>,
) -> Result<Vec<RemoteTool>, String> {
    let tools = connection
        .list_all_tools()
        .await
        .map_err(|err| format!("tools/list failed: {}", call_failure(&err).message))?;
    let names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
    let qualified = qualify_all(server, &names);
    Ok(tools
        .into_iter()
        .zip(qualified)
        .map(|(tool, qualified)| RemoteTool {
            description: format!("[{server}] {}", tool.description.as_deref().unwrap_or("")),
            schema: serde_json::Value::Object((*tool.input_schema).clone()),
            qualified,
            name: tool.name.to_string(),
            listed: Arc::new(tool),
        })
        .collect())
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
