//! The task that keeps one peer's connection alive: it connects (a
//! command over stdio or a streamable-HTTP endpoint), lists the tools,
//! serves the connection until it ends or a call finds it broken, then
//! waits ([`Backoff`]) and connects again, publishing every change.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Weak};
use std::time::Instant;

use crabtalk_proto::msg::{McpEventKind, McpEventMsg};
use rmcp::ServiceExt;
use rmcp::service::{Peer as Connection, RoleClient, RunningService};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::{Event, Peer, PeerSettings, RemoteTool, Status};
use crate::mcp::Origin;
use crate::mcp::backoff::Backoff;
use crate::mcp::client::DaemonClient;
use crate::mcp::failure::{call_failure, connect_failure};
use crate::mcp::names::qualify_all;
use crate::mcp::stdio::{Launch, SpawnError, StdioProcess};

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

/// Why connecting to a server failed; the text is what its status, its
/// event and the log say.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConnectError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The server's half of the handshake failed (in
    /// [`connect_failure`]'s words); with how its process exited, for a
    /// stdio server that did.
    #[error("the MCP handshake {endpoint} failed: {failure}{}", exit_note(.exited))]
    Handshake {
        endpoint: Endpoint,
        failure: String,
        exited: Option<ExitStatus>,
    },
    #[error("the server has neither a command nor a url")]
    NoEndpoint,
    /// The component's owner token file is missing or unusable.
    #[error("no usable token in {} to present to the component", token_file.display())]
    NoToken { token_file: PathBuf },
    #[error("{source}{}", exit_note(.exited))]
    ListTools {
        source: ListToolsError,
        exited: Option<ExitStatus>,
    },
    #[error("no answer within {secs} s ([mcp] connect_timeout_secs)")]
    TimedOut { secs: u64 },
}

/// What a handshake was with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Endpoint {
    Command(String),
    Url(String),
    /// A component's port on 127.0.0.1.
    Port(u16),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Command(command) => write!(f, "with {command}"),
            Self::Url(url) => write!(f, "with {url}"),
            Self::Port(port) => write!(f, "on port {port}"),
        }
    }
}

/// `; the process exited (<status>)`, or nothing.
fn exit_note(status: &Option<ExitStatus>) -> String {
    status
        .map(|status| format!("; the process exited ({status})"))
        .unwrap_or_default()
}

/// Why listing a server's tools failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ListToolsError {
    /// The call failed, in [`call_failure`]'s words.
    #[error("tools/list failed: {0}")]
    Failed(String),
    #[error("tools/list did not answer")]
    NoAnswer,
}

/// The task of one peer.
pub(super) struct Supervisor {
    pub(super) peer: Weak<Peer>,
    pub(super) broken: Arc<Notify>,
    pub(super) settings: PeerSettings,
    pub(super) events: broadcast::Sender<McpEventMsg>,
    pub(super) owners: String,
    pub(super) stop: CancellationToken,
}

impl Supervisor {
    pub(super) async fn run(self) {
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
                Err(ConnectError::TimedOut {
                    secs: self.settings.connect_timeout.as_secs(),
                })
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
                    let error = peer.with_stderr(error.to_string());
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
    async fn connect(&self, peer: &Peer) -> Result<(Live, Vec<RemoteTool>), ConnectError> {
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
                            return Err(ConnectError::Handshake {
                                endpoint: Endpoint::Command(command.clone()),
                                failure: connect_failure(&err),
                                exited: process.reap().await,
                            });
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
                    let running =
                        client
                            .serve(transport)
                            .await
                            .map_err(|err| ConnectError::Handshake {
                                endpoint: Endpoint::Url(url.clone()),
                                failure: connect_failure(&err),
                                exited: None,
                            })?;
                    (running, None)
                }
                (None, None) => return Err(ConnectError::NoEndpoint),
            },
            Origin::Component {
                port, port_file, ..
            } => {
                // The owner's token, read at every connect: a component
                // admits nobody else, and follows the file when it changes.
                let token_file = crate::mcp::component_token_file(port_file);
                let token = match crabtalk_home::token::TokenFile::inspect(&token_file) {
                    crabtalk_home::token::TokenFile::Usable(token) => token,
                    _ => return Err(ConnectError::NoToken { token_file }),
                };
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        format!("http://127.0.0.1:{port}/mcp"),
                    )
                    .auth_header(token),
                );
                let running =
                    client
                        .serve(transport)
                        .await
                        .map_err(|err| ConnectError::Handshake {
                            endpoint: Endpoint::Port(*port),
                            failure: connect_failure(&err),
                            exited: None,
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
            Err(source) => Err(ConnectError::ListTools {
                source,
                exited: live.close().await,
            }),
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
                    let _ = tokio::time::timeout(crate::mcp::stdio::EXIT_GRACE, &mut quit).await;
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
                    let _ = tokio::time::timeout(crate::mcp::stdio::EXIT_GRACE, &mut quit).await;
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
        .unwrap_or(Err(ListToolsError::NoAnswer));
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
                crate::mcp::tools_changed();
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
            .close_with_timeout(crate::mcp::stdio::EXIT_GRACE)
            .await;
        self.process.as_mut()?.stop().await
    }
}

/// Every tool of the server, named for agents.
async fn list_tools(
    server: &str,
    connection: &Connection<RoleClient>,
) -> Result<Vec<RemoteTool>, ListToolsError> {
    let tools = connection
        .list_all_tools()
        .await
        .map_err(|err| ListToolsError::Failed(call_failure(&err).message))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_failed_connect_says_with_what_and_how_the_process_ended() {
        use std::os::unix::process::ExitStatusExt;
        let handshake = ConnectError::Handshake {
            endpoint: Endpoint::Command("calc-server".into()),
            failure: "the server closed the connection during the handshake (initialize)".into(),
            exited: Some(ExitStatus::from_raw(3 << 8)),
        };
        assert_eq!(
            handshake.to_string(),
            "the MCP handshake with calc-server failed: the server closed the connection \
             during the handshake (initialize); the process exited (exit status: 3)"
        );
        let port = ConnectError::Handshake {
            endpoint: Endpoint::Port(4001),
            failure: "the server refused the handshake: no".into(),
            exited: None,
        };
        assert_eq!(
            port.to_string(),
            "the MCP handshake on port 4001 failed: the server refused the handshake: no"
        );
        let listing = ConnectError::ListTools {
            source: ListToolsError::NoAnswer,
            exited: None,
        };
        assert_eq!(listing.to_string(), "tools/list did not answer");
    }
}
