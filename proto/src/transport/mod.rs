//! Listeners that feed connections into a [`Server`](crate::Server).
//!
//! Each accepted connection gets one read loop and one writer task. The read
//! loop decodes [`ClientMessage`](crate::msg::ClientMessage)s and spawns one
//! task per request, which runs [`Server::dispatch`](crate::Server::dispatch)
//! and forwards every reply, stamped with the request's `request_id`, to the
//! writer. Requests on one connection therefore run concurrently and their
//! replies interleave; clients tell them apart by `request_id`.
//!
//! Two messages belong to the connection rather than to the server:
//! `Hello{token}` (required first on listeners that have a token) and
//! `Cancel{request_id}` (drops that request's task). When a client closes
//! its connection, every task it started is dropped at once. When the server
//! shuts down, connections stop reading and give the requests in flight a
//! few seconds to finish (so a reply being written is not lost), then drop
//! the rest; a server should end its never-ending streams (subscriptions)
//! itself when it shuts down.
//!
//! - [`UdsListener`]: `run/crabtalk.sock`, mode 0600, refuses to replace a
//!   socket that another server still answers on, removes a stale one.
//! - [`TcpListener`]: `TCP_NODELAY`; a non-loopback address requires a token,
//!   and a client of a listener with a token that says nothing for the
//!   handshake timeout is disconnected.

mod connection;
mod tcp;
#[cfg(unix)]
mod uds;
pub(crate) mod writer;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

pub use tcp::{DEFAULT_HANDSHAKE_TIMEOUT, TcpListener};
#[cfg(unix)]
pub use uds::UdsListener;

/// Default TCP address of the daemon.
pub const DEFAULT_TCP_ADDR: &str = "127.0.0.1:6688";

/// Why a listener could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(
        "another crabtalk daemon is already answering on {path}; stop it first (crabup daemon stop)"
    )]
    AlreadyRunning { path: PathBuf },
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket { path: PathBuf },
    #[error(
        "refusing to listen on {addr} without a token: set [transport] token = \"...\" in config.toml, or listen on a loopback address"
    )]
    TokenRequired { addr: SocketAddr },
    #[error("cannot listen on {target}: {source}")]
    Io { target: String, source: io::Error },
}
