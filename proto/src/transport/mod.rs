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
//! - [`TcpListener`]: `TCP_NODELAY`; every listener has a token, loopback
//!   included, and a client that says nothing for the handshake timeout is
//!   disconnected.
//!
//! ## What a peer can make a server spend
//!
//! - Before `Hello` (TCP): frames of at most [`MAX_HELLO_FRAME`] bytes, at
//!   most [`MAX_UNADMITTED`] such connections per listener, the handshake
//!   timeout, and failed attempts answered ever more slowly per source
//!   address (`RETRY_DELAY` doubling up to `MAX_RETRY_DELAY`, a table of
//!   at most `MAX_SOURCES` sources: `throttle.rs`).
//! - After: frames up to the codec's 16 MiB, at most [`MAX_IN_FLIGHT`]
//!   requests at once (`ErrorMsg{429}` beyond), and replies queued for the
//!   writer up to [`OUTBOX_BYTES`] — a peer that does not read makes the
//!   tasks producing its replies wait, which is where the server's own
//!   bounds take over (a turn drops a client that falls too far behind; it
//!   never waits for one).

mod admission;
mod connection;
pub(crate) mod outbox;
mod tcp;
mod throttle;
#[cfg(unix)]
mod uds;
mod wire;
pub(crate) mod writer;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

pub use admission::{MAX_HELLO_FRAME, MAX_UNADMITTED};
pub use connection::{MAX_IN_FLIGHT, OUTBOX_BYTES, Placement};
pub use tcp::TcpListener;
#[cfg(unix)]
pub use uds::UdsListener;
pub use wire::ReplyLane;

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
        "refusing to listen on {addr} without a token: every TCP listener needs one (set [transport] token = \"...\" in config.toml, or leave it out for a random one in run/token)"
    )]
    TokenRequired { addr: SocketAddr },
    #[error("cannot listen on {target}: {source}")]
    Io { target: String, source: io::Error },
}
