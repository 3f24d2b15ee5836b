//! Serving a component's MCP tools to the daemon.
//!
//! A component binds `127.0.0.1:0`, announces the port it got in
//! `$CRABTALK_HOME/run/<name>.port` (port, `pid=`, `started_at=`, written
//! atomically), and serves an `axum` router in which [`mcp_router`] mounts
//! the `rmcp` streamable-HTTP service at `/mcp`, plus `GET /health` (the
//! path is reserved). The daemon finds it by scanning `run/*.port`.
//!
//! At shutdown the port file is removed first — nobody new connects —
//! then open connections get [`SHUTDOWN_GRACE`] to finish; long-lived
//! streams (an MCP client's SSE stream never ends on its own) are cut after
//! it, so a stopped component is gone within a second. A crash leaves the
//! file behind; readers tell it is stale by its pid or its silent port.
//!
//! ```no_run
//! # use crabtalk_home::{Home, Service};
//! # use crabtalk_kit::{Shutdown, mcp::{mcp_router, run_mcp}};
//! # #[derive(Clone, Default)] struct MyTools;
//! # impl rmcp::ServerHandler for MyTools {}
//! # async fn example() -> anyhow::Result<()> {
//! let service = Service::new("search", "crabtalk-search", "meta-search")?;
//! let shutdown = Shutdown::on_signals()?;
//! run_mcp(&Home::from_env()?, &service, mcp_router(MyTools::default), shutdown.requested()).await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crabtalk_home::{Home, PortFile, Service};

pub use crate::health::HealthProblems;
pub use crate::string_arguments::{accept_string_arguments, fix_string_arguments};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

/// How long open connections may take to finish after shutdown begins.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(750);

/// Why a component could not serve.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    #[error("cannot write the port file {path}: {source}", path = path.display())]
    PortFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// An `axum` router with the MCP service made by `factory` (one handler per
/// session) mounted at `/mcp`. Merge it with more routes if needed.
pub fn mcp_router<S, F>(factory: F) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new().nest_service("/mcp", service)
}

/// Serves `router` for `service` until `shutdown` completes, announcing it
/// in the port file meanwhile.
pub async fn run_mcp(
    home: &Home,
    service: &Service,
    router: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpError> {
    serve(home, service, router, None, shutdown).await
}

/// Like [`run_mcp`], with the component's own problems in `GET /health`.
pub async fn run_mcp_reporting(
    home: &Home,
    service: &Service,
    router: axum::Router,
    problems: HealthProblems,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpError> {
    serve(home, service, router, Some(problems), shutdown).await
}

async fn serve(
    home: &Home,
    service: &Service,
    router: axum::Router,
    problems: Option<HealthProblems>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpError> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(McpError::Bind)?;
    let port = listener.local_addr().map_err(McpError::Bind)?.port();
    let router = crate::health::with_health_route(router, service.name(), problems);
    let port_file = PortFileGuard::write(&service.port_file(home), port)?;
    tracing::info!(
        service = service.name(),
        port,
        "serving MCP at http://127.0.0.1:{port}/mcp"
    );

    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, router).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = stopping_tx.send(());
    });
    let mut server = tokio::spawn(async move { server.await });
    tokio::select! {
        joined = &mut server => {
            drop(port_file);
            return joined_result(joined);
        }
        Ok(()) = stopping_rx => {}
    }
    // Gone from discovery before draining, so nobody new connects.
    drop(port_file);
    tracing::info!(service = service.name(), "shutting down");
    match tokio::time::timeout(SHUTDOWN_GRACE, &mut server).await {
        Ok(joined) => joined_result(joined),
        Err(_) => {
            server.abort();
            Ok(())
        }
    }
}

fn joined_result(
    joined: Result<std::io::Result<()>, tokio::task::JoinError>,
) -> Result<(), McpError> {
    match joined {
        Ok(result) => result.map_err(McpError::Serve),
        Err(err) => Err(McpError::Serve(std::io::Error::other(err))),
    }
}

/// Removes the port file when dropped, if it is still this process's.
struct PortFileGuard {
    path: PathBuf,
}

impl PortFileGuard {
    fn write(path: &Path, port: u16) -> Result<Self, McpError> {
        PortFile::for_this_process(port)
            .write(path)
            .map_err(|source| McpError::PortFile {
                path: path.to_owned(),
                source,
            })?;
        Ok(Self {
            path: path.to_owned(),
        })
    }
}

impl Drop for PortFileGuard {
    fn drop(&mut self) {
        // A newer instance may have replaced the file; leave that one.
        if PortFile::read(&self.path).is_ok_and(|f| f.pid == Some(std::process::id())) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Empty;
    impl rmcp::ServerHandler for Empty {}

    #[tokio::test]
    async fn the_port_file_exists_while_serving_and_is_removed_after() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let service = Service::new("probe", "crabtalk-probe", "test").unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = {
            let home = home.clone();
            let service = service.clone();
            tokio::spawn(async move {
                run_mcp(&home, &service, mcp_router(|| Empty), async {
                    let _ = stopped.await;
                })
                .await
            })
        };
        let path = service.port_file(&home);
        let file = crabtalk_testkit::within("the port file", async {
            loop {
                if let Ok(file) = PortFile::read(&path) {
                    return file;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert_eq!(file.pid, Some(std::process::id()));
        assert!(file.started_at.is_some());
        let port = file.port;
        let health = tokio::task::spawn_blocking(move || {
            crabtalk_command::health::check(port, crabtalk_command::health::HEALTH_TIMEOUT)
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(health, crabtalk_home::Health::of_this_process("probe"));
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
        assert!(!path.exists());
    }
}
