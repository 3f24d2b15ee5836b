//! The TCP listener.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::sync::CancellationToken;

use super::BindError;
use super::admission::{Admission, TokenGate};
use super::connection::{Acceptor, Placement, accept_loop};
use super::throttle::Delays;
use crate::Server;

/// How long a client has to send `Hello`.
pub(crate) const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP listener with `TCP_NODELAY` on every connection, for clients that
/// know its token.
///
/// Every client, on a loopback address as much as on any other, must send
/// `Hello{token}` as its first frame, within the handshake timeout
/// (10 s unless set with
/// [`with_handshake_timeout`](Self::with_handshake_timeout)); a client
/// that does not is answered `ErrorMsg{401}` and disconnected. Loopback is
/// no boundary: every local user can reach it. Before `Hello` a client may
/// send frames of at most [`MAX_HELLO_FRAME`](crate::MAX_HELLO_FRAME)
/// bytes, at most [`MAX_UNADMITTED`](crate::MAX_UNADMITTED) such
/// connections wait at once, and failed attempts are answered ever more
/// slowly per source address (RFC 0006).
pub struct TcpListener {
    listener: tokio::net::TcpListener,
    token: String,
    handshake_timeout: Duration,
    delays: Delays,
}

impl TcpListener {
    /// Binds `addr` (port 0 picks a free port). A token that is empty or
    /// only whitespace is refused with [`BindError::TokenRequired`].
    pub async fn bind(addr: SocketAddr, token: &str) -> Result<Self, BindError> {
        if token.trim().is_empty() {
            return Err(BindError::TokenRequired { addr });
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| BindError::Io {
                target: addr.to_string(),
                source,
            })?;
        Ok(Self {
            listener,
            token: token.to_owned(),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            delays: Delays::default(),
        })
    }

    /// Sets how long a client has to send `Hello` before it is disconnected.
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Sets the pause after a source's first failed attempt (`first`, then
    /// doubling) and the longest pause (`max`); by default 100 ms and
    /// 5 s.
    pub fn with_retry_delays(mut self, first: Duration, max: Duration) -> Self {
        self.delays = Delays { base: first, max };
        self
    }

    /// The address actually bound (the real port when bound to port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves connections until `shutdown` fires and every connection has
    /// closed.
    pub async fn serve<S: Server>(self, server: Arc<S>, shutdown: CancellationToken) {
        self.serve_where(server, shutdown, None).await;
    }

    /// [`serve`](Self::serve), each connection on the runtime `placement`
    /// names.
    pub async fn serve_placed<S: Server>(
        self,
        server: Arc<S>,
        shutdown: CancellationToken,
        placement: Arc<dyn Placement>,
    ) {
        self.serve_where(server, shutdown, Some(placement)).await;
    }

    async fn serve_where<S: Server>(
        self,
        server: Arc<S>,
        shutdown: CancellationToken,
        placement: Option<Arc<dyn Placement>>,
    ) {
        let gate = TokenGate::new(&self.token, self.handshake_timeout, self.delays);
        let admission = Admission::Token(Arc::new(gate));
        accept_loop(&self, server, admission, shutdown, placement).await;
    }
}

impl Acceptor for TcpListener {
    type Stream = tokio::net::TcpStream;
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;

    async fn accept(&self) -> std::io::Result<(tokio::net::TcpStream, Option<IpAddr>)> {
        let (stream, peer) = self.listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok((stream, Some(peer.ip())))
    }

    fn move_here(stream: tokio::net::TcpStream) -> std::io::Result<tokio::net::TcpStream> {
        tokio::net::TcpStream::from_std(stream.into_std()?)
    }

    fn split(stream: tokio::net::TcpStream) -> (OwnedReadHalf, OwnedWriteHalf) {
        stream.into_split()
    }
}
