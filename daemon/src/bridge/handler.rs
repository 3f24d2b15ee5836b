//! [`Bridge`]: the MCP server a host talks to.
//!
//! `tools/list` is the bridge's own tools, then every running component's
//! (the components running when the bridge started are connected first);
//! `tools/call` goes to the one that has the name. Once the host has said
//! it is initialized, a task follows the component connections and sends
//! `notifications/tools/list_changed` whenever the set of tool names
//! changes (a component started, stopped, or changed its tools).
//!
//! The handshake offers the protocol versions with an `initialize`
//! handshake, up to 2025-11-25: the versions the official SDKs and the
//! hosts speak over stdio, and in which a server may ask its client
//! (elicitation) during a call.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crabtalk_home::Home;
use futures::StreamExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::ask::failure;
use super::daemon_client::DaemonConnection;
use super::{Shared, components, own_tools};
use crate::mcp::McpHub;

/// The newest protocol version the bridge speaks.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// What the host is told about the server.
const INSTRUCTIONS: &str = "crabtalk: your own agents, running in the crabtalk daemon on this \
machine. ask_agent sends an agent a message and returns its reply (progress is reported while it \
works; the conversation continues across calls). list_agents, list_conversations, search_sessions, \
recall and remember look into the agents and their memory. The other tools are those of the \
crabtalk components running now (web search, schedules, Telegram…).";

/// The MCP server of one host.
#[derive(Clone)]
pub(crate) struct Bridge {
    shared: Arc<Shared>,
}

impl Bridge {
    /// A bridge to the daemon of `home`, offering the components `hub`
    /// connects to; their tools are listed once `components_settled` is
    /// cancelled.
    pub(crate) fn new(home: Home, hub: Arc<McpHub>, components_settled: CancellationToken) -> Self {
        Self {
            shared: Arc::new(Shared {
                daemon: DaemonConnection::new(home.clone()),
                home,
                hub,
                components_settled,
                host_gone: Arc::new(AtomicBool::new(false)),
            }),
        }
    }

    /// The flag that says the host closed its end.
    pub(super) fn host_gone(&self) -> Arc<AtomicBool> {
        self.shared.host_gone.clone()
    }

    /// The names of every tool offered now.
    fn tool_names(hub: &McpHub) -> BTreeSet<String> {
        components::current(hub)
            .into_iter()
            .map(|offered| offered.name)
            .collect()
    }

    /// Tells `peer` whenever the component tools change, until the host
    /// or the hub is gone.
    async fn follow_components(hub: Arc<McpHub>, peer: Peer<RoleServer>) {
        let mut events = std::pin::pin!(hub.subscribe());
        let mut known = Self::tool_names(&hub);
        while events.next().await.is_some() {
            let now = Self::tool_names(&hub);
            if now == known {
                continue;
            }
            known = now;
            if peer.notify_tool_list_changed().await.is_err() {
                return;
            }
        }
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("crabtalk", crate::server::VERSION)
                .with_title("crabtalk")
                .with_description("Your crabtalk agents and their tools")
                .with_website_url("https://github.com/crabtalk/crabtalk"),
        )
        .with_instructions(INSTRUCTIONS)
        .with_protocol_version(NEWEST_PROTOCOL)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let hub = self.shared.hub.clone();
        tracing::info!(
            home = %self.shared.home.root().display(),
            "an MCP host is connected: {}",
            peer.peer_info()
                .map(|info| format!("{} {}", info.client_info.name, info.client_info.version))
                .unwrap_or_else(|| "unnamed".into())
        );
        tokio::spawn(Self::follow_components(hub, peer));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.shared.components_settled.cancelled().await;
        let mut tools = own_tools::tool_list();
        tools.extend(
            components::current(&self.shared.hub)
                .iter()
                .map(components::Offered::definition),
        );
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if own_tools::NAMES.contains(&name.as_str()) {
            let client = self.shared.daemon.client().await;
            let result = own_tools::call(
                &name,
                request.arguments,
                client,
                &context,
                &self.shared.host_gone,
            )
            .await;
            return Ok(result
                .unwrap_or_else(|| failure(format!("no tool {name}")))
                .into());
        }
        self.shared.components_settled.cancelled().await;
        let agent = self.shared.daemon.default_agent().await;
        let call = components::call(&self.shared.hub, &name, request.arguments, agent);
        let called = tokio::select! {
            called = call => called,
            () = context.ct.cancelled() => {
                // The component is told when its call is dropped.
                return Err(McpError::internal_error("the call was cancelled", None));
            }
        };
        match called {
            Some(Ok(result)) => Ok(result.into()),
            Some(Err(why)) => Ok(failure(why.to_string()).into()),
            None => Err(McpError::invalid_params(
                format!(
                    "no tool {name:?}: the bridge's own tools are {}, and no running crabtalk \
                     component offers one of that name (tools/list shows what there is now)",
                    own_tools::NAMES.join(", ")
                ),
                None,
            )),
        }
    }
}
