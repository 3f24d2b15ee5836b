//! `crabtalkd mcp`: crabtalk as an MCP server over stdio, for MCP hosts
//! (Claude Desktop, Claude Code, Cursor, Zed, the MCP inspector). RFC 0022.
//!
//! A host starts `crabtalkd mcp` as a child and speaks newline-delimited
//! JSON-RPC on its stdin and stdout. The process is a bridge, not a daemon:
//! it connects to the daemon already running for `CRABTALK_HOME` as a
//! client — the Unix socket, else TCP with `run/token` — and takes no lock,
//! opens no memory, writes no file. Many hosts may run a bridge each at
//! the same time; each is just one more client of the one daemon.
//!
//! What a host gets:
//!
//! - `ask_agent` (`ask.rs`): a turn on the daemon, its text and tool calls
//!   streamed as MCP progress notifications, the reply as the result. The
//!   host's `notifications/cancelled` kills the turn (`KillMsg`). A
//!   question the agent asks (`ask_user`) becomes an MCP elicitation when
//!   the host declared it can answer one (`questions.rs`); else the result
//!   says what the agent asked.
//! - `list_agents`, `list_conversations`, `search_sessions`, `recall` and
//!   `remember` (`own_tools.rs`), through the protocol operations of the
//!   same names.
//! - Every running component's tools under their own names (`web_search`,
//!   `cron_add`, `telegram_send`, …) (`components.rs`): found in
//!   `run/*.port` by the daemon's own discovery and connected with the
//!   owner's token, exactly as the daemon connects to them. A component
//!   that is not running has no tools listed; when components come and go
//!   the host is sent `notifications/tools/list_changed`.
//!
//! Everything a host does through the bridge is done as the owner of the
//! home: the bridge runs as that user and reads that user's socket and
//! token. Adding it to a host hands the host the owner's agents
//! (`docs/src/guide/security.md`).
//!
//! Logging goes to stderr (stdout is the protocol).

mod ask;
mod components;
mod daemon_client;
mod handler;
mod own_tools;
mod progress;
mod questions;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use crabtalk_home::Home;
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::config::DaemonConfig;
use crate::mcp::discovery::Discovery;
use crate::mcp::{McpHub, McpSettings};

pub(crate) use self::handler::Bridge;

/// The conversation `ask_agent` talks in when the host names none: the
/// sender `mcp` of the agent.
pub(crate) const DEFAULT_CONVERSATION: &str = "mcp";

/// The longest the first `tools/list` waits for the components running at
/// start (less when `[mcp] connect_timeout_secs` is less): a component on
/// this machine answers in milliseconds, and a host must not wait on one
/// that hangs (the MCP SDKs give up on a request after about a minute, the
/// doctor's check after 15 s). A slower one's tools come later, with
/// `notifications/tools/list_changed`.
const FIRST_LIST_PATIENCE: Duration = Duration::from_secs(5);

/// Serves MCP on stdin/stdout until the host closes stdin or `stop`.
pub async fn run(home: Home, stop: CancellationToken) -> anyhow::Result<()> {
    // The components' HTTP client (rmcp over reqwest) needs a TLS provider
    // installed before it is built, as in the daemon.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let settings = settings(&home);
    let patience = settings.connect_timeout.min(FIRST_LIST_PATIENCE);
    let hub = McpHub::new(settings);
    // The components running now are connected before the first
    // `tools/list` is answered: a host that lists once and never follows
    // `notifications/tools/list_changed` (the inspector's CLI, some hosts)
    // still sees their tools. The handshake does not wait for them, and
    // the list waits at most FIRST_LIST_PATIENCE.
    let mut discovery = Discovery::new(home.run_dir());
    hub.set_components(discovery.scan());
    let settled = CancellationToken::new();
    tokio::spawn({
        let hub = hub.clone();
        let settled = settled.clone();
        async move {
            hub.settled(patience).await;
            settled.cancel();
        }
    });
    let discovery_stop = stop.child_token();
    let discovery = tokio::spawn(discovery.watch(hub.clone(), discovery_stop.clone()));
    let bridge = Bridge::new(home, hub.clone(), settled);
    let host_gone = bridge.host_gone();
    let stdin = EofWatch {
        inner: tokio::io::stdin(),
        gone: host_gone,
    };
    let served = bridge
        .serve_with_ct((stdin, tokio::io::stdout()), stop.child_token())
        .await;
    let result = match served {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .context("the MCP session with the host failed"),
        // The host went away (or we were stopped) before it said hello.
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
            Ok(())
        }
        Err(err) => Err(anyhow::anyhow!(
            "the MCP handshake with the host failed: {err}"
        )),
    };
    discovery_stop.cancel();
    let _ = discovery.await;
    hub.shutdown().await;
    result
}

/// How the bridge's connections to components behave: `[mcp]` of the
/// home's `config.toml` when it can be read, else the defaults. A broken
/// file is the daemon's to report; the bridge still serves.
fn settings(home: &Home) -> McpSettings {
    let mcp = DaemonConfig::load(&home.config_file())
        .map(|config| config.mcp)
        .unwrap_or_default();
    McpSettings::from(&mcp)
}

/// Shared by every request of one host.
pub(crate) struct Shared {
    pub(crate) home: Home,
    pub(crate) hub: Arc<McpHub>,
    /// Cancelled once the components found at start are connected (or
    /// failed, or [`FIRST_LIST_PATIENCE`] passed).
    pub(crate) components_settled: CancellationToken,
    pub(crate) daemon: daemon_client::DaemonConnection,
    /// Set when the host closed our stdin: calls cancelled after it were
    /// not cancelled by the host, which is gone.
    pub(crate) host_gone: Arc<AtomicBool>,
}

/// The host's end of stdin, noting when it is closed.
///
/// When the host goes away, rmcp cancels the calls still running; that is
/// not the host asking to stop a turn. A turn whose caller merely went
/// away runs to its end and is kept in its conversation, as it is when any
/// client disconnects (RFC 0003); only `notifications/cancelled` kills it.
struct EofWatch<R> {
    inner: R,
    gone: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(result) = &polled
            && (result.is_err() || buf.filled().len() == before)
        {
            self.gone.store(true, Ordering::Release);
        }
        polled
    }
}
