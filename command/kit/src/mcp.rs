//! Serving a component's MCP tools to the daemon.
//!
//! A component binds `127.0.0.1:0`, announces the port it got in
//! `$CRABTALK_HOME/run/<name>.port` (port, `pid=`, `started_at=`, written
//! atomically), and serves an `axum` router in which [`mcp_router`] mounts
//! the `rmcp` streamable-HTTP service at `/mcp`, plus `GET /health` (the
//! path is reserved). The daemon finds it by scanning `run/*.port`.
//!
//! Only the owner's processes get past the door: every request but a bare
//! `GET /health` needs the token in `run/token` as `Authorization: Bearer`,
//! and requests from web pages of other origins are refused
//! (the kit's access layer); the sessions a caller can open are capped
//! ([`CappedSessions`]). The owner's programs connect with
//! [`owner_client_config`].
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

use crate::Problems;

pub use crate::sessions::{CappedSessions, MAX_SESSIONS};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

/// How long open connections may take to finish after shutdown begins.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(750);

/// Why a component could not serve.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    #[error("no credential for callers: {0}")]
    Token(#[from] crabtalk_home::token::TokenError),
    #[error("cannot write the port file {path}: {source}", path = path.display())]
    PortFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// An `axum` router with the MCP service made by `factory` (one handler per
/// session) mounted at `/mcp`, keeping at most [`MAX_SESSIONS`] sessions.
/// Merge it with more routes if needed.
pub fn mcp_router<S, F>(factory: F) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    mcp_router_with_sessions(factory, Arc::new(CappedSessions::default()))
}

/// [`mcp_router`], keeping its sessions in `sessions` (to choose the cap,
/// or to watch how many are open).
pub fn mcp_router_with_sessions<S, F>(factory: F, sessions: Arc<CappedSessions>) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        sessions,
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new().nest_service("/mcp", service)
}

/// Where a component that announced `port` serves MCP.
pub fn component_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// How one of the owner's programs reaches the component that announced
/// `port` in `home`: its URL, with the owner's token from `run/token`.
/// Give it to `rmcp`'s `StreamableHttpClientTransport::from_config`.
pub fn owner_client_config(
    home: &Home,
    port: u16,
) -> Result<StreamableHttpClientTransportConfig, crabtalk_home::token::TokenError> {
    let token = crabtalk_home::token::read_token(home)?;
    Ok(StreamableHttpClientTransportConfig::with_uri(component_url(port)).auth_header(token))
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

/// Like [`run_mcp`], with the component's own problems listed in
/// `GET /health`.
pub async fn run_mcp_reporting(
    home: &Home,
    service: &Service,
    router: axum::Router,
    problems: Problems,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpError> {
    serve(home, service, router, Some(problems), shutdown).await
}

async fn serve(
    home: &Home,
    service: &Service,
    router: axum::Router,
    problems: Option<Problems>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpError> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(McpError::Bind)?;
    let port = listener.local_addr().map_err(McpError::Bind)?.port();
    // The token callers must send; made here when the daemon never ran.
    crabtalk_home::token::ensure_token(home)?;
    let credential = Arc::new(crate::access::Credential::of(home));
    let router = crate::health::with_health_route(router, service.name(), problems).layer(
        axum::middleware::from_fn_with_state(credential, crate::access::guard),
    );
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
        let token = crabtalk_home::token::read_token(&home).unwrap();
        let health = tokio::task::spawn_blocking(move || {
            crabtalk_command::health::check(
                port,
                Some(&token),
                crabtalk_command::health::HEALTH_TIMEOUT,
            )
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
