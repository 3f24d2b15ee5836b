//! The bridge's connection to the daemon of its home.
//!
//! Made when a tool first needs it and again after the daemon went away:
//! a host starts the bridge when the host starts, which may be before the
//! daemon, and the daemon may restart under it. A call while the daemon is
//! not running fails at once with what to do — a tool call must not hang
//! waiting for a daemon nobody is starting.

use crabtalk_home::Home;
use crabtalk_kit::daemon::ConnectError;
use crabtalk_proto::Client;
use crabtalk_proto::msg::GetStats;
use tokio::sync::Mutex;

/// The daemon client of one bridge.
pub(crate) struct DaemonConnection {
    home: Home,
    current: Mutex<Option<Client>>,
}

impl DaemonConnection {
    pub(crate) fn new(home: Home) -> Self {
        Self {
            home,
            current: Mutex::new(None),
        }
    }

    /// A client of the running daemon, or why there is none (its text is
    /// in words a host can show its user).
    pub(crate) async fn client(&self) -> Result<Client, ConnectError> {
        let mut current = self.current.lock().await;
        if let Some(client) = current.as_ref().filter(|client| !client.is_closed()) {
            return Ok(client.clone());
        }
        *current = None;
        let client = crabtalk_kit::daemon::connect(&self.home).await?;
        *current = Some(client.clone());
        Ok(client)
    }

    /// The daemon's default agent, when the daemon says.
    pub(crate) async fn default_agent(&self) -> Option<String> {
        let client = self.client().await.ok()?;
        client
            .get_stats(GetStats {})
            .await
            .ok()
            .map(|stats| stats.default_agent)
            .filter(|agent| !agent.is_empty())
    }
}
