//! [`Component`]: what a component's code is handed by the kit's `main`.

use std::path::PathBuf;

use crabtalk_home::{Home, Service};
use serde::de::DeserializeOwned;

use crate::Shutdown;
use crate::config::{self, ConfigError, ConfigFile};
use crate::daemon::DaemonLink;

/// A running component: its home, its service, and the shutdown signal
/// every one of its tasks stops on. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Component {
    home: Home,
    service: Service,
    shutdown: Shutdown,
}

impl Component {
    /// A component of `service` in `home` that stops on `shutdown` (the
    /// kit's `main` makes one that stops on SIGINT/SIGTERM).
    pub fn new(home: Home, service: Service, shutdown: Shutdown) -> Self {
        Self {
            home,
            service,
            shutdown,
        }
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn service(&self) -> &Service {
        &self.service
    }

    /// The signal to stop on; clone it into every task.
    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// `$CRABTALK_HOME/config/<name>.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.home
            .component_config(self.service.name())
            .expect("service names are validated on construction")
    }

    /// The component's config, which must exist (see [`config::load`]).
    pub fn config<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        config::load(&self.config_path())
    }

    /// The component's config, or `T::default()` when there is no file
    /// (see [`config::load_or_default`]).
    pub fn config_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, ConfigError> {
        config::load_or_default(&self.config_path())
    }

    /// The config file's text, for checks that point into it
    /// ([`ConfigFile::error_at_key`]); `None` when there is no file.
    pub fn config_file(&self) -> Result<Option<ConfigFile>, ConfigError> {
        ConfigFile::read(&self.config_path())
    }

    /// A link to the daemon of this home that follows it across restarts
    /// and stops with the component. Call it inside the runtime.
    pub fn daemon(&self) -> DaemonLink {
        DaemonLink::start(self.home.clone(), self.shutdown.clone())
    }

    /// Serves `router` (see [`mcp::mcp_router`](crate::mcp::mcp_router))
    /// at `/mcp` and `/health` on the port announced in
    /// `run/<name>.port`, until shutdown.
    #[cfg(feature = "service")]
    pub async fn serve_mcp(&self, router: axum::Router) -> Result<(), crate::mcp::McpError> {
        crate::mcp::run_mcp(&self.home, &self.service, router, self.shutdown.requested()).await
    }

    /// [`Component::serve_mcp`], with `problems` asked at every
    /// `GET /health` (what `crabup ps` shows as degraded).
    #[cfg(feature = "service")]
    pub async fn serve_mcp_reporting(
        &self,
        router: axum::Router,
        problems: crate::mcp::HealthProblems,
    ) -> Result<(), crate::mcp::McpError> {
        crate::mcp::run_mcp_reporting(
            &self.home,
            &self.service,
            router,
            problems,
            self.shutdown.requested(),
        )
        .await
    }
}
