//! The daemon's side of one MCP connection: who it says it is, and what it
//! does with what a server tells it unasked.
//!
//! A server whose tools change sends `notifications/tools/list_changed`;
//! the handler wakes the connection's task, which lists the tools again.
//! The handshake offers `2025-11-25`, the newest protocol version with an
//! `initialize` handshake, in which servers send that notification as is.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::Notify;

/// The handler of one connection.
pub(super) struct DaemonClient {
    tools_changed: Arc<Notify>,
}

impl DaemonClient {
    /// A handler that signals `tools_changed` when the server's tools change.
    pub(super) fn new(tools_changed: Arc<Notify>) -> Self {
        Self { tools_changed }
    }
}

impl ClientHandler for DaemonClient {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("crabtalkd", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
