//! The TCP listener.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::sync::CancellationToken;

use super::BindError;
use super::connection::{Acceptor, Admission, accept_loop};
use crate::Server;

/// How long a client on a listener with a token has to send `Hello`.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP listener with `TCP_NODELAY` on every connection.
///
/// With a token, every client must send `Hello{token}` as its first frame,
/// within the handshake timeout ([`DEFAULT_HANDSHAKE_TIMEOUT`] unless set
/// with [`with_handshake_timeout`](Self::with_handshake_timeout)); a client
/// that does not is answered `ErrorMsg{401}` and disconnected, so a silent
/// peer cannot hold a connection open. Binding a non-loopback address without
/// a token is refused.
pub struct TcpListener {
    listener: tokio::net::TcpListener,
    admission: Admission,
}

impl TcpListener {
    /// Binds `addr` (port 0 picks a free port). An empty token counts as none.
    pub async fn bind(addr: SocketAddr, token: Option<&str>) -> Result<Self, BindError> {
        let token = token.filter(|token| !token.is_empty());
        if token.is_none() && !addr.ip().is_loopback() {
            return Err(BindError::TokenRequired { addr });
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| BindError::Io {
                target: addr.to_string(),
                source,
            })?;
        let admission = match token {
            Some(token) => Admission::Token {
                token: token.into(),
                handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            },
            None => Admission::Open,
        };
        Ok(Self {
            listener,
            admission,
        })
    }

    /// Sets how long a client has to send `Hello` before it is disconnected
    /// (only on a listener with a token; others need no `Hello`).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        if let Admission::Token {
            handshake_timeout, ..
        } = &mut self.admission
        {
            *handshake_timeout = timeout;
        }
        self
    }

    /// The address actually bound (the real port when bound to port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves connections until `shutdown` fires and every connection has
    /// closed.
    pub async fn serve<S: Server>(self, server: Arc<S>, shutdown: CancellationToken) {
        let admission = self.admission.clone();
        accept_loop(&self, server, admission, shutdown).await;
    }
}

impl Acceptor for TcpListener {
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;

    async fn accept(&self) -> std::io::Result<(OwnedReadHalf, OwnedWriteHalf)> {
        let (stream, _) = self.listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(stream.into_split())
    }
}
