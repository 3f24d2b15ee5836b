//! `crabtalkd mcp` run as an MCP host runs it: the real binary as a child,
//! an rmcp client on its stdin and stdout ([`BridgeProcess`]), and a host
//! ([`TestHost`]) that records what the bridge tells it unasked — progress,
//! tool list changes — and answers its elicitations as scripted.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, Request, ServerResult, Tool,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RequestHandle, RoleClient,
    RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::TestDaemon;

/// Something the bridge told the host unasked.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    /// `notifications/progress`.
    Progress {
        token: String,
        progress: f64,
        message: String,
    },
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// An elicitation, with its message and form.
    Asked { message: String, schema: Value },
}

#[derive(Default)]
struct Record {
    events: Mutex<Vec<HostEvent>>,
    changed: Notify,
}

/// The host's side of one connection.
#[derive(Clone)]
pub struct TestHost {
    record: Arc<Record>,
    /// The form content it accepts an elicitation with; `None`: it
    /// declares no elicitation capability.
    answer: Option<Value>,
    protocol: ProtocolVersion,
}

impl Default for TestHost {
    fn default() -> Self {
        Self {
            record: Arc::default(),
            answer: None,
            protocol: ProtocolVersion::V_2025_06_18,
        }
    }
}

impl TestHost {
    /// A host that cannot answer elicitations, speaking 2025-06-18.
    pub fn new() -> Self {
        Self::default()
    }

    /// A host that declares elicitation and accepts every form with
    /// `content`.
    pub fn answering(content: Value) -> Self {
        Self {
            answer: Some(content),
            ..Self::default()
        }
    }

    /// The protocol version it asks for.
    pub fn speaking(mut self, protocol: ProtocolVersion) -> Self {
        self.protocol = protocol;
        self
    }

    /// Everything recorded so far.
    pub fn events(&self) -> Vec<HostEvent> {
        self.record.events.lock().unwrap().clone()
    }

    /// The progress messages of the call whose token is `token`.
    pub fn progress(&self, token: &str) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                HostEvent::Progress {
                    token: of, message, ..
                } if of == token => Some(message),
                _ => None,
            })
            .collect()
    }

    /// Waits until `done` holds for the recorded events.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[HostEvent]) -> bool) {
        crate::within(what, self.until(done)).await
    }

    /// Ends once `done` holds for the recorded events (however long that
    /// takes: the callers bound it).
    async fn until(&self, done: impl Fn(&[HostEvent]) -> bool) {
        loop {
            let changed = self.record.changed.notified();
            if done(&self.record.events.lock().unwrap()) {
                return;
            }
            changed.await;
        }
    }

    fn push(&self, event: HostEvent) {
        self.record.events.lock().unwrap().push(event);
        self.record.changed.notify_waiters();
    }
}

impl ClientHandler for TestHost {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = match self.answer {
            Some(_) => serde_json::from_value(json!({"elicitation": {"form": {}}}))
                .expect("client capabilities"),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(
            capabilities,
            Implementation::new("crabtalk-test-host", "1.0"),
        )
        .with_protocol_version(self.protocol.clone())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.push(HostEvent::Progress {
            token: token_text(&params.progress_token),
            progress: params.progress,
            message: params.message.unwrap_or_default(),
        });
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.push(HostEvent::ToolsChanged);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        self.push(HostEvent::Asked {
            message: request["message"].as_str().unwrap_or_default().to_owned(),
            schema: request["requestedSchema"].clone(),
        });
        Ok(match &self.answer {
            Some(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

/// `crabtalkd mcp` for `home`, with an rmcp client on its stdio.
pub struct BridgeProcess {
    pub client: RunningService<RoleClient, TestHost>,
    pub host: TestHost,
    child: tokio::process::Child,
    log: PathBuf,
}

impl BridgeProcess {
    /// Starts `binary mcp` with `CRABTALK_HOME=home` and says hello as
    /// `host`. Its stderr goes to `bridge-<pid>.log` in the home.
    pub async fn start(binary: &Path, home: &Path, host: TestHost) -> Self {
        let log = home.join(format!("bridge-{}.log", std::process::id()));
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("open the bridge's log");
        let mut child = tokio::process::Command::new(binary)
            .arg("mcp")
            .arg("-v")
            .env("CRABTALK_HOME", home)
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {} mcp: {err}", binary.display()));
        let stdout = child.stdout.take().expect("the bridge's stdout");
        let stdin = child.stdin.take().expect("the bridge's stdin");
        let client = crate::within(
            "the MCP handshake with the bridge",
            host.clone().serve((stdout, stdin)),
        )
        .await
        .unwrap_or_else(|err| {
            panic!(
                "the MCP handshake with the bridge failed: {err}\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        Self {
            client,
            host,
            child,
            log,
        }
    }

    /// [`BridgeProcess::start`] for the home of `daemon` (running or not),
    /// with the `crabtalkd` built alongside the test.
    pub async fn for_daemon(daemon: &TestDaemon, host: TestHost) -> Self {
        Self::start(&crate::daemon_binary(), daemon.path(), host).await
    }

    /// The bridge's stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `done` holds for what the host recorded; a timeout
    /// shows the bridge's log.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[HostEvent]) -> bool) {
        let waited = tokio::time::timeout(crate::PATIENCE, self.host.until(done)).await;
        assert!(
            waited.is_ok(),
            "timed out after {:?} waiting for {what}; the host saw {:?}; the bridge's log:\n{}",
            crate::PATIENCE,
            self.host.events(),
            self.log()
        );
    }

    /// The tools offered now.
    pub async fn tools(&self) -> Vec<Tool> {
        crate::within("tools/list", self.client.peer().list_all_tools())
            .await
            .unwrap_or_else(|err| panic!("tools/list failed: {err}\n{}", self.log()))
    }

    /// Calls `name` with `arguments` and waits for the result.
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        crate::within(&format!("{name} to answer"), self.client.call_tool(params))
            .await
            .unwrap_or_else(|err| panic!("{name} failed: {err}\n{}", self.log()))
    }

    /// Starts a call to `name` that the test can cancel; the handle knows
    /// the call's progress token.
    pub async fn start_call(&self, name: &str, arguments: Value) -> RequestHandle<RoleClient> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        self.client
            .peer()
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .unwrap_or_else(|err| panic!("{name} was not sent: {err}"))
    }

    /// The result a started call answered with.
    pub async fn finish_call(&self, handle: RequestHandle<RoleClient>) -> CallToolResult {
        let answer = crate::within("the call to answer", handle.await_response())
            .await
            .unwrap_or_else(|err| panic!("the call failed: {err}\n{}", self.log()));
        match answer {
            ServerResult::CallToolResult(result) => result,
            other => panic!("not a tool result: {other:?}"),
        }
    }

    /// The progress token of a started call, as [`HostEvent::Progress`]
    /// records it.
    pub fn token_of(handle: &RequestHandle<RoleClient>) -> String {
        token_text(&handle.progress_token)
    }

    /// Closes the connection (the bridge's stdin) and waits for the
    /// bridge to exit; its exit status.
    pub async fn close(mut self) -> std::process::ExitStatus {
        let _ = self.client.cancel().await;
        crate::within("the bridge to exit", self.child.wait())
            .await
            .expect("wait for the bridge")
    }
}

/// A progress token as text: a string token as it is, a number in decimal.
fn token_text(token: &ProgressToken) -> String {
    match serde_json::to_value(token) {
        Ok(Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The text of a result's text blocks, one per line.
pub fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    value["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
