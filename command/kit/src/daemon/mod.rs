//! Reaching the daemon of a `CRABTALK_HOME`.
//!
//! The wire crate connects to a socket path or a TCP address; this module
//! knows where the daemon of a home listens and what it asks for:
//!
//! - on Unix, the socket `run/crabtalk.sock` first — it needs no token;
//! - else the TCP port in `run/crabtalk.port`, with `Hello{token}` as the
//!   first frame, the token read from `run/token` (the daemon writes the
//!   token it accepts there at every start: `[transport] token`, or the
//!   random one it keeps; the file is 0600, so only the daemon's user can
//!   read it). A client elsewhere is given the token and passes it itself,
//!   see [`Endpoint`].
//!
//! [`connect`] does that once and says plainly when the daemon is not
//! running. [`DaemonLink`] keeps a connection for a component's whole life:
//! it waits for the daemon to come up, reconnects with backoff after it
//! restarts, and re-subscribes every stream the component follows.

mod backoff;
mod connection;
mod follow;
mod link;

use std::path::PathBuf;

use crabtalk_home::{Home, PortFile, PortFileError};
use crabtalk_proto::Client;
use crabtalk_proto::ClientError;

pub use backoff::Backoff;
pub use follow::{Followed, Following, Subscription};
pub use link::{DaemonLink, LinkClosed};

/// Why the daemon could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "crabtalkd is not running for {home}: nothing answers at {socket} and there is no live \
         port file at {port_file}. Start it with `crabup daemon start` (or `crabtalkd run`)",
        home = home.display(), socket = socket.display(), port_file = port_file.display()
    )]
    NotRunning {
        home: PathBuf,
        socket: PathBuf,
        port_file: PathBuf,
    },
    #[error(transparent)]
    PortFile(#[from] PortFileError),
    #[error("cannot read the daemon's token {path}: {source}", path = path.display())]
    Token {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl ConnectError {
    /// Whether the daemon is simply not there (yet): worth waiting for.
    pub fn is_not_running(&self) -> bool {
        matches!(self, Self::NotRunning { .. })
    }
}

/// Where a daemon listens, and how to be let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket (no token).
    Socket(PathBuf),
    /// `host:port`, with the token to send in `Hello` if there is one.
    Tcp { addr: String, token: Option<String> },
}

impl Endpoint {
    /// Connects to this endpoint.
    pub async fn connect(&self) -> Result<Client, ClientError> {
        match self {
            #[cfg(unix)]
            Self::Socket(path) => Client::connect_uds(path).await,
            #[cfg(not(unix))]
            Self::Socket(path) => Err(ClientError::Connect {
                target: path.display().to_string(),
                source: std::io::Error::from(std::io::ErrorKind::Unsupported),
            }),
            Self::Tcp { addr, token } => Client::connect_tcp(addr, token.as_deref()).await,
        }
    }
}

/// The token a local client sends over TCP: `run/token`, trimmed; `None`
/// when there is no such file.
pub fn read_token(home: &Home) -> Result<Option<String>, ConnectError> {
    let path = home.token_file();
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_owned()).filter(|token| !token.is_empty())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConnectError::Token { path, source }),
    }
}

/// Connects to the daemon of `home`: its Unix socket first, then the TCP
/// port in its port file (with the token from `run/token`).
pub async fn connect(home: &Home) -> Result<Client, ConnectError> {
    let socket = home.socket_path();
    let port_file = home.daemon_port_file();
    #[cfg(unix)]
    match Client::connect_uds(&socket).await {
        Ok(client) => return Ok(client),
        Err(err) if err.is_absent() => {}
        Err(err) => return Err(err.into()),
    }
    let not_running = || ConnectError::NotRunning {
        home: home.root().to_owned(),
        socket: socket.clone(),
        port_file: port_file.clone(),
    };
    let port = match PortFile::read(&port_file) {
        Ok(file) => file.port,
        Err(err) if err.is_missing() => return Err(not_running()),
        Err(err) => return Err(err.into()),
    };
    let endpoint = Endpoint::Tcp {
        addr: format!("127.0.0.1:{port}"),
        token: read_token(home)?,
    };
    match endpoint.connect().await {
        Err(err) if err.is_absent() => Err(not_running()),
        other => Ok(other?),
    }
}
