//! The typed [`Client`]: one method per operation, over UDS or TCP.
//!
//! A client owns one connection with a reader task and a writer task. Every
//! request gets a fresh `request_id`; the reader hands each reply to the
//! request it answers, so a client is cheap to clone and any number of
//! requests — unary calls, turns, subscriptions — can be in flight on it at
//! once.
//!
//! Streaming methods return a [`ReplyStream`], which ends at its terminal
//! (`StreamEnd`, or the first error) and frees its slot; dropping it early
//! sends `Cancel`.
//!
//! Every queue is bounded: requests wait for the writer beyond
//! [`OUTGOING_BYTES`], and each stream buffers at most
//! [`STREAM_BUFFER_BYTES`] of replies its consumer has not taken (past
//! that the stream ends with [`ClientError::Lagged`]).

mod slots;
mod stream;

use std::io;
#[cfg(unix)]
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prost::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

pub use self::slots::STREAM_BUFFER_BYTES;
use self::slots::{Slot, Slots, stream_buffer};
pub use self::stream::{ReplyStream, StreamItem};
use crate::codec::{FrameError, FrameReader, MAX_FRAME_LEN};
use crate::msg::*;
use crate::ops::unary_operations;
use crate::transport::outbox::{Outbox, outbox};
use crate::transport::writer::write_frames;

/// Bytes of requests queued for the writer before callers wait.
pub(crate) const OUTGOING_BYTES: usize = 4 * 1024 * 1024;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {target}: {source}")]
    Connect { target: String, source: io::Error },
    /// The daemon answered with an error.
    #[error("{0}")]
    Server(ErrorMsg),
    #[error("the connection to the daemon closed: {reason}")]
    Closed { reason: String },
    #[error("request of {len} bytes is over the {max}-byte frame limit")]
    TooLarge { len: usize, max: usize },
    #[error("the daemon sent an empty reply")]
    EmptyReply,
    #[error("unexpected reply to {operation}: {reply}")]
    UnexpectedReply {
        operation: &'static str,
        reply: String,
    },
    /// A stream's consumer fell behind: more than `limit` bytes of its
    /// replies were waiting, so the stream was ended.
    #[error(
        "this stream was ended because its replies were not read: more than {limit} bytes were waiting (a turn goes on in the daemon and is saved; its history has the rest)"
    )]
    Lagged { limit: usize },
}

impl ClientError {
    /// The daemon's error code, when the daemon answered with an error.
    pub fn code(&self) -> Option<u32> {
        match self {
            Self::Server(error) => Some(error.code),
            _ => None,
        }
    }

    /// Whether this is a failure to connect because nothing listens at the
    /// target (no socket file, or a refused connection): the daemon is not
    /// running, as opposed to running and failing.
    pub fn is_absent(&self) -> bool {
        matches!(self, Self::Connect { source, .. } if is_absent(source))
    }

    pub(crate) fn unexpected(operation: &'static str, reply: &server_message::Msg) -> Self {
        let mut reply = format!("{reply:?}");
        if let Some((cut, _)) = reply.char_indices().nth(200) {
            reply.truncate(cut);
            reply.push('…');
        }
        Self::UnexpectedReply { operation, reply }
    }
}

/// A connection to a crabtalk server. Clones share the connection.
#[derive(Clone)]
pub struct Client {
    connection: Arc<Connection>,
}

/// The shared half of a client: the writer's queue and the reply slots.
struct Connection {
    outgoing: Outbox<ClientMessage>,
    slots: Arc<Slots>,
    next_request_id: AtomicU64,
    reader: AbortHandle,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The writer ends on its own once `outgoing` is gone.
        self.reader.abort();
    }
}

impl Connection {
    fn next_request_id(&self) -> u64 {
        self.next_request_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn send(&self, message: ClientMessage) -> Result<(), ClientError> {
        let len = message.encoded_len();
        if len > MAX_FRAME_LEN {
            return Err(ClientError::TooLarge {
                len,
                max: MAX_FRAME_LEN,
            });
        }
        self.outgoing
            .send(message)
            .await
            .map_err(|_| self.closed_error())
    }

    fn closed_error(&self) -> ClientError {
        let reason = self
            .slots
            .closed_reason()
            .unwrap_or_else(|| "the client was shut down".into());
        ClientError::Closed { reason }
    }

    /// Sends `Cancel` for `request_id` without waiting (used from `Drop`).
    fn cancel_in_background(&self, request_id: u64) {
        send_cancel(&self.outgoing, request_id);
    }
}

/// Sends `Cancel` for `request_id` without waiting: at once if the queue
/// has room, else from a task (when there is a runtime to run one).
fn send_cancel(outgoing: &Outbox<ClientMessage>, request_id: u64) {
    let cancel = client_message::Msg::Cancel(Cancel { request_id });
    // Request id 0: the Pong that answers it is not awaited.
    if let Err(cancel) = outgoing.try_send(cancel.into())
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        let outgoing = outgoing.clone();
        runtime.spawn(async move { outgoing.send(cancel).await });
    }
}

/// Removes a unary request's slot if the caller stops waiting.
struct SlotGuard<'a> {
    slots: &'a Slots,
    request_id: u64,
    armed: bool,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.slots.remove(self.request_id);
        }
    }
}

impl Client {
    /// Connects to a Unix socket.
    #[cfg(unix)]
    pub async fn connect_uds(path: impl AsRef<Path>) -> Result<Self, ClientError> {
        let path = path.as_ref();
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| ClientError::Connect {
                target: path.display().to_string(),
                source,
            })?;
        let (read, write) = stream.into_split();
        Ok(Self::over(read, write))
    }

    /// Connects over TCP (`host:port`). With a token, sends `Hello` first and
    /// fails if the server refuses it.
    pub async fn connect_tcp(addr: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let connect_error = |source| ClientError::Connect {
            target: addr.to_owned(),
            source,
        };
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(connect_error)?;
        stream.set_nodelay(true).map_err(connect_error)?;
        let (read, write) = stream.into_split();
        let client = Self::over(read, write);
        if let Some(token) = token {
            let hello = client_message::Msg::Hello(Hello {
                token: token.to_owned(),
            });
            client.call(hello).await?;
        }
        Ok(client)
    }

    /// A client over any byte stream (for tests and embedders).
    pub fn over<R, W>(read: R, write: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing, queue) = outbox(OUTGOING_BYTES);
        tokio::spawn(write_frames(queue, write, |_, _| None));
        let slots = Arc::new(Slots::default());
        let reader = tokio::spawn(read_replies(
            FrameReader::new(read),
            slots.clone(),
            outgoing.clone(),
        ));
        Self {
            connection: Arc::new(Connection {
                outgoing,
                slots,
                next_request_id: AtomicU64::new(1),
                reader: reader.abort_handle(),
            }),
        }
    }

    /// Resolves once the connection has closed (the daemon went away, or
    /// the connection failed), with the reason. A client whose connection
    /// closed fails every request; make a new one.
    pub async fn closed(&self) -> String {
        self.connection.slots.closed().await
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.connection.slots.closed_reason().is_some()
    }

    /// How many requests on this connection still have a reply slot: unary
    /// calls awaiting their answer and streams not yet at their terminal.
    /// For tests that check slots are freed.
    #[doc(hidden)]
    pub fn requests_in_flight(&self) -> usize {
        self.connection.slots.len()
    }

    /// Pings the server and returns its versions; a protocol other than this
    /// crate's is logged as a warning.
    pub async fn ping(&self) -> Result<Pong, ClientError> {
        let ping = client_message::Msg::Ping(Ping {
            client_version: crate::VERSION.into(),
        });
        let pong = match self.call(ping).await? {
            server_message::Msg::Pong(pong) => pong,
            other => return Err(ClientError::unexpected("ping", &other)),
        };
        if !pong.protocol.is_empty() && pong.protocol != crate::PROTOCOL {
            tracing::warn!(
                server = %pong.protocol,
                client = crate::PROTOCOL,
                "the daemon speaks another protocol version; some operations may fail"
            );
        }
        Ok(pong)
    }

    /// Runs one turn, streaming its events until `StreamEnd`.
    pub async fn stream(
        &self,
        request: StreamMsg,
    ) -> Result<ReplyStream<StreamEvent>, ClientError> {
        self.open_stream(client_message::Msg::Stream(request)).await
    }

    /// Streams every agent's events until the stream is dropped.
    pub async fn subscribe_events(
        &self,
        request: SubscribeEvents,
    ) -> Result<ReplyStream<AgentEventMsg>, ClientError> {
        self.open_stream(client_message::Msg::SubscribeEvents(request))
            .await
    }

    /// Streams MCP lifecycle events until the stream is dropped.
    pub async fn subscribe_mcp_events(
        &self,
        request: SubscribeMcpEventsMsg,
    ) -> Result<ReplyStream<McpEventMsg>, ClientError> {
        self.open_stream(client_message::Msg::SubscribeMcpEvents(request))
            .await
    }

    /// Sends one request and waits for its one reply.
    async fn call(&self, message: client_message::Msg) -> Result<server_message::Msg, ClientError> {
        let connection = &self.connection;
        let request_id = connection.next_request_id();
        let (waiter, reply) = oneshot::channel();
        connection.slots.register(request_id, Slot::Once(waiter))?;
        let mut guard = SlotGuard {
            slots: &connection.slots,
            request_id,
            armed: true,
        };
        connection
            .send(ClientMessage {
                msg: Some(message),
                request_id,
            })
            .await?;
        let reply = reply.await.map_err(|_| connection.closed_error())?;
        guard.armed = false;
        match reply.msg {
            Some(server_message::Msg::Error(error)) => Err(ClientError::Server(error)),
            Some(reply) => Ok(reply),
            None => Err(ClientError::EmptyReply),
        }
    }

    async fn open_stream<T: StreamItem>(
        &self,
        message: client_message::Msg,
    ) -> Result<ReplyStream<T>, ClientError> {
        let connection = &self.connection;
        let request_id = connection.next_request_id();
        // The one reader task serves every request on the connection, so
        // it never waits for one stream's consumer (a caller that awaits a
        // ping while holding an unread subscription would deadlock); a
        // consumer that lets its buffer fill loses the stream instead.
        let (sender, replies) = stream_buffer();
        connection
            .slots
            .register(request_id, Slot::Stream(sender))?;
        let stream = ReplyStream::new(connection.clone(), request_id, replies);
        connection
            .send(ClientMessage {
                msg: Some(message),
                request_id,
            })
            .await?;
        Ok(stream)
    }
}

macro_rules! define_client_methods {
    ($(
        $(#[$doc:meta])*
        $method:ident($variant:ident, $request:ident) -> $reply:ident($response:ident);
    )*) => {
        impl Client {
            $(
                $(#[$doc])*
                pub async fn $method(&self, request: $request) -> Result<$response, ClientError> {
                    match self.call(client_message::Msg::$variant(request)).await? {
                        server_message::Msg::$reply(reply) => Ok(reply),
                        other => Err(ClientError::unexpected(stringify!($method), &other)),
                    }
                }
            )*
        }
    };
}

unary_operations!(define_client_methods);

/// Whether a connect error means "nothing is listening there".
fn is_absent(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

/// The reader task: routes every reply to its slot until the connection
/// ends, and cancels streams whose consumers fell too far behind.
async fn read_replies<R: AsyncRead + Unpin>(
    mut reader: FrameReader<R>,
    slots: Arc<Slots>,
    outgoing: Outbox<ClientMessage>,
) {
    let reason = loop {
        match reader.read::<ServerMessage>().await {
            Ok(reply) => {
                if let Some(lagging) = slots.deliver(reply) {
                    send_cancel(&outgoing, lagging);
                }
            }
            Err(FrameError::Closed) => break "the daemon closed the connection".to_owned(),
            Err(err) => break err.to_string(),
        }
    };
    slots.close(reason);
}
