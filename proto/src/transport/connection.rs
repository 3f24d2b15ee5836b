//! One server-side connection: its read loop, its request table, its writer.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::admission::{Admission, Waiting, admit, refuse_busy};
use super::outbox::{Outbox, outbox};
use super::throttle::Source;
use super::wire::{ReplyLane, Wire, write_wire};
use crate::Server;
use crate::codec::{FrameError, FrameReader};
use crate::msg::{ClientMessage, ErrorMsg, Pong, ServerMessage, client_message};

/// Bytes of replies queued for a connection's writer before the tasks
/// producing them wait (see `transport::outbox::Outbox`).
pub const OUTBOX_BYTES: usize = 256 * 1024;

/// Requests one connection may have in flight; one more is answered
/// `ErrorMsg{429}`.
pub const MAX_IN_FLIGHT: usize = 1024;

/// How long a closing connection may take to flush what it has queued.
const WRITER_DRAIN: Duration = Duration::from_secs(5);

/// At shutdown, how long requests in flight get to finish (a turn that was
/// just cancelled still has its `StreamEnd` to send) before they are
/// dropped.
pub(crate) const SHUTDOWN_DRAIN: Duration = Duration::from_secs(3);

/// Pause after a failed accept (for example, out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A connection as the accept loop gets it.
pub(crate) struct Accepted<R, W> {
    pub(crate) read: R,
    pub(crate) write: W,
    /// The peer's address, where there is one (TCP).
    pub(crate) peer: Option<IpAddr>,
}

/// A listening socket, as seen by the accept loop.
pub(crate) trait Acceptor {
    /// A connection just accepted, not yet split.
    type Stream: Send + 'static;
    type Read: AsyncRead + Unpin + Send + 'static;
    type Write: AsyncWrite + Unpin + Send + 'static;

    fn accept(&self) -> impl Future<Output = io::Result<(Self::Stream, Option<IpAddr>)>> + Send;

    /// The stream, registered with the runtime this is called on (it was
    /// with the accept loop's).
    fn move_here(stream: Self::Stream) -> io::Result<Self::Stream>;

    fn split(stream: Self::Stream) -> (Self::Read, Self::Write);
}

/// Where a server's connections are served (RFC 0049).
pub trait Placement: Send + Sync + 'static {
    /// The runtime the next accepted connection is served on, its read
    /// loop, writer and requests; `None`: the accept loop's own.
    fn next_connection(&self) -> Option<tokio::runtime::Handle>;
}

/// Accepts connections until `shutdown`, then waits for every connection to
/// close. Each is served where `placement` says.
pub(crate) async fn accept_loop<A: Acceptor, S: Server>(
    acceptor: &A,
    server: Arc<S>,
    admission: Admission,
    shutdown: CancellationToken,
    placement: Option<Arc<dyn Placement>>,
) {
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = acceptor.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let waiting = match &admission {
                    Admission::Open => None,
                    Admission::Token(gate) => match gate.wait_place() {
                        Some(place) => Some(place),
                        None => {
                            connections.spawn(refuse_busy(A::split(stream).1));
                            continue;
                        }
                    },
                };
                let serve = {
                    let (server, admission, shutdown) =
                        (server.clone(), admission.clone(), shutdown.clone());
                    move |stream| {
                        let (read, write) = A::split(stream);
                        let accepted = Accepted { read, write, peer };
                        serve_connection(server, accepted, admission, waiting, shutdown)
                    }
                };
                match placement.as_ref().and_then(|place| place.next_connection()) {
                    Some(runtime) => {
                        let connection = async move {
                            match A::move_here(stream) {
                                Ok(stream) => serve(stream).await,
                                Err(err) => tracing::warn!("cannot serve a connection: {err}"),
                            }
                        };
                        connections.spawn_on(connection, &runtime);
                    }
                    None => {
                        connections.spawn(serve(stream));
                    }
                }
            }
            Err(err) => {
                tracing::warn!("accept failed: {err}");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                }
            }
        }
    }
    connections.close();
    connections.wait().await;
}

/// Serves one connection until the client closes it, it breaks, or
/// `shutdown` fires. Every request task it started is dropped when it ends.
pub(crate) async fn serve_connection<S, R, W>(
    server: Arc<S>,
    accepted: Accepted<R, W>,
    admission: Admission,
    waiting: Option<Waiting>,
    shutdown: CancellationToken,
) where
    S: Server,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (replies, queue) = outbox(OUTBOX_BYTES);
    let wire = Arc::new(Wire::new(accepted.write));
    let writer = tokio::spawn(write_wire(wire.clone(), queue, too_large_reply));
    let requests = Requests::default();
    let mut reader = FrameReader::new(accepted.read);
    let mut shutting_down = false;
    let admitted = match &admission {
        Admission::Open => true,
        Admission::Token(gate) => {
            let source = accepted.peer.map(Source::of);
            tokio::select! {
                biased;
                () = shutdown.cancelled() => false,
                admitted = admit(gate, &mut reader, source, &replies) => admitted,
            }
        }
    };
    // Admitted or not, this connection no longer waits.
    drop(waiting);
    if !admitted {
        close(requests, replies, writer).await;
        return;
    }
    loop {
        let frame = tokio::select! {
            biased;
            () = shutdown.cancelled() => {
                shutting_down = true;
                break;
            }
            frame = reader.read::<ClientMessage>() => frame,
        };
        let message = match frame {
            Ok(message) => message,
            Err(FrameError::Decode(err)) => {
                let error = ErrorMsg::bad_request(format!("undecodable frame: {err}"));
                let _ = replies.send(error.into()).await;
                continue;
            }
            Err(FrameError::TooLarge { len, max }) => {
                let error = ErrorMsg::too_large(format!(
                    "frame of {len} bytes is over the {max}-byte limit; closing the connection"
                ));
                let _ = replies.send(error.into()).await;
                break;
            }
            Err(_) => break,
        };
        let request_id = message.request_id;
        match message.msg {
            Some(client_message::Msg::Hello(_)) => {
                let _ = replies
                    .send(ServerMessage::from(Pong::of_this_server()).answering(request_id))
                    .await;
            }
            Some(client_message::Msg::Cancel(cancel)) => {
                requests.cancel(cancel.request_id);
                let _ = replies
                    .send(ServerMessage::from(Pong::of_this_server()).answering(request_id))
                    .await;
            }
            _ if requests.len() >= MAX_IN_FLIGHT => {
                let error = ErrorMsg::new(
                    ErrorMsg::TOO_MANY_REQUESTS,
                    format!(
                        "{MAX_IN_FLIGHT} requests are already in flight on this connection; wait for some to finish (or cancel them) before sending more"
                    ),
                );
                let _ = replies
                    .send(ServerMessage::from(error).answering(request_id))
                    .await;
            }
            _ => {
                // A turn may write its events from its own task.
                let lane = matches!(message.msg, Some(client_message::Msg::Stream(_)))
                    .then(|| ReplyLane::new(request_id, wire.clone(), replies.gauge()));
                requests.spawn(
                    request_id,
                    lane.clone(),
                    // Started here, in arrival order; driven by its own task.
                    forward(
                        server.clone().dispatch_on(message, lane),
                        request_id,
                        replies.clone(),
                    ),
                )
            }
        }
    }
    if shutting_down {
        // Stop reading, but let what is in flight finish, within reason.
        let _ = tokio::time::timeout(SHUTDOWN_DRAIN, requests.drained()).await;
    }
    close(requests, replies, writer).await;
}

/// Drops what a connection still runs and lets its writer flush, within
/// reason.
async fn close(
    requests: Requests,
    replies: Outbox<ServerMessage>,
    mut writer: tokio::task::JoinHandle<()>,
) {
    requests.abort_all();
    drop(replies);
    if tokio::time::timeout(WRITER_DRAIN, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
}

/// Forwards a request's replies, stamped with its id.
async fn forward(
    mut stream: futures::stream::BoxStream<'static, ServerMessage>,
    request_id: u64,
    replies: Outbox<ServerMessage>,
) {
    while let Some(reply) = stream.next().await {
        if replies.send(reply.answering(request_id)).await.is_err() {
            break;
        }
    }
}

fn too_large_reply(message: &ServerMessage, err: FrameError) -> Option<ServerMessage> {
    let error = ErrorMsg::too_large(format!("the reply could not be sent: {err}"));
    Some(ServerMessage::from(error).answering(message.request_id))
}

/// The requests in flight on one connection.
///
/// Tasks are keyed by an internal slot; `latest` maps a client's request id
/// to the most recent slot that used it, so `Cancel` finds it. A client may
/// reuse an id once its request finished (or even before; the older request
/// then simply can no longer be cancelled by id).
#[derive(Default, Clone)]
struct Requests {
    table: Arc<Mutex<RequestTable>>,
    emptied: Arc<tokio::sync::Notify>,
}

#[derive(Default)]
struct RequestTable {
    next_slot: u64,
    tasks: HashMap<u64, InFlight>,
    latest: HashMap<u64, u64>,
}

/// A request's task, and its lane to close when it ends.
struct InFlight {
    task: AbortHandle,
    lane: Option<ReplyLane>,
}

impl InFlight {
    fn end(self, abort: bool) {
        if let Some(lane) = &self.lane {
            lane.close();
        }
        if abort {
            self.task.abort();
        }
    }
}

impl Requests {
    fn spawn(
        &self,
        request_id: u64,
        lane: Option<ReplyLane>,
        request: impl Future<Output = ()> + Send + 'static,
    ) {
        // The lock is held across the spawn so a task that finishes at once
        // cannot try to remove itself before it is registered.
        let mut table = self.lock();
        let slot = table.next_slot;
        table.next_slot += 1;
        let requests = self.clone();
        let task = tokio::spawn(async move {
            request.await;
            requests.finished(slot, request_id);
        });
        table.tasks.insert(
            slot,
            InFlight {
                task: task.abort_handle(),
                lane,
            },
        );
        if request_id != 0 {
            table.latest.insert(request_id, slot);
        }
    }

    fn finished(&self, slot: u64, request_id: u64) {
        let mut table = self.lock();
        if let Some(request) = table.tasks.remove(&slot) {
            request.end(false);
        }
        if table.latest.get(&request_id) == Some(&slot) {
            table.latest.remove(&request_id);
        }
        if table.tasks.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    /// Resolves once no request is in flight.
    async fn drained(&self) {
        loop {
            let emptied = self.emptied.notified();
            if self.lock().tasks.is_empty() {
                return;
            }
            emptied.await;
        }
    }

    /// How many requests are in flight.
    fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    fn cancel(&self, request_id: u64) {
        let mut table = self.lock();
        if let Some(slot) = table.latest.remove(&request_id)
            && let Some(request) = table.tasks.remove(&slot)
        {
            request.end(true);
        }
    }

    fn abort_all(&self) {
        let mut table = self.lock();
        for (_, request) in table.tasks.drain() {
            request.end(true);
        }
        table.latest.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RequestTable> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
