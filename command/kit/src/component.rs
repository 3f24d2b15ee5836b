//! [`Component`]: what a component's code is handed by the kit's `main`.

use std::path::PathBuf;

use crabtalk_home::{Home, Service};
use serde::de::DeserializeOwned;

use crate::config::{self, ConfigError, ConfigFile};
use crate::daemon::DaemonLink;
use crate::{Problems, Shutdown};

/// A running component: its home, its service, the shutdown signal every
/// one of its tasks stops on, and its problems. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Component {
    home: Home,
    service: Service,
    shutdown: Shutdown,
    problems: Problems,
}

impl Component {
    /// A component of `service` in `home` that stops on `shutdown` (the
    /// kit's `main` makes one that stops on SIGINT/SIGTERM).
    pub fn new(home: Home, service: Service, shutdown: Shutdown) -> Self {
        Self {
            home,
            service,
            shutdown,
            problems: Problems::default(),
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

    /// What is wrong with the component now: its parts record and clear
    /// problems here, and [`Component::serve_mcp`]'s `GET /health` lists
    /// them. Clone it into the parts.
    pub fn problems(&self) -> &Problems {
        &self.problems
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
    /// at `/mcp`, and `GET /health` with the component's
    /// [`problems`](Component::problems), on the port announced in
    /// `run/<name>.port`, until shutdown.
    #[cfg(feature = "service")]
    pub async fn serve_mcp(&self, router: axum::Router) -> Result<(), crate::mcp::McpError> {
        crate::mcp::run_mcp_reporting(
            &self.home,
            &self.service,
            router,
            self.problems.clone(),
            self.shutdown.requested(),
        )
        .await
    }
}
