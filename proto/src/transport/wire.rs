//! A server connection's socket, written by its writer task or, when
//! nothing waits ahead, straight from the task that made a reply
//! ([`ReplyLane`]).
//!
//! Every reply normally goes through the connection's
//! [`Outbox`](super::outbox) to the writer task. For a streamed turn that
//! is a hand-over per piece of the model's reply, and on a multi-threaded
//! runtime each hand-over that makes a second task ready wakes another
//! worker (see `docs/src/benchmarks.md`, "Why each piece of a streamed
//! reply wakes both workers"). A [`ReplyLane`] lets the task producing a
//! request's events write one to the socket itself, without waking
//! anyone, when the socket takes it at once and nothing is queued ahead:
//! no bytes left in the wire's buffer and an empty outbox. Otherwise the
//! event goes the usual way. Keeping the order of one request's events is
//! the caller's part: it may only use the lane while none of its earlier
//! events are still on their way to the outbox.
//!
//! On a single-threaded runtime (the daemon's serving threads, RFC 0049)
//! the writer, woken for a reply, first lets the thread's other ready
//! tasks run. A turn handed the model's reply a piece at a time queues
//! the whole burst meanwhile, and the writer sends it in one write, one
//! wake-up of the client, where it would otherwise write each piece
//! alone. On a multi-threaded runtime it writes at once: a task that
//! yields there waits on its own worker, which may have lost its core
//! (RFC 0001, "Alternatives").

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWrite;
use tokio::runtime::RuntimeFlavor;
use tokio::sync::Notify;

use super::outbox::{OutboxGauge, OutboxReceiver};
use crate::codec::{FrameError, RETAINED_BUFFER, WRITE_HIGH_WATER, encode_frame};
use crate::msg::ServerMessage;

/// The socket's write side and the bytes on their way into it.
pub(crate) struct Wire<W> {
    state: Mutex<WireState<W>>,
    /// A lane left the rest of a frame in the buffer for the writer.
    leftover: Notify,
}

struct WireState<W> {
    /// `None` once the writer is done (the socket is closed then, even
    /// while lanes still hold the wire).
    socket: Option<W>,
    /// Encoded frames; the bytes from `sent` on are not in the socket yet.
    buf: Vec<u8>,
    sent: usize,
}

impl<W> WireState<W> {
    fn pending(&self) -> bool {
        self.sent < self.buf.len()
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.sent = 0;
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf = Vec::new();
        }
    }
}

impl<W: AsyncWrite + Unpin> WireState<W> {
    /// Writes what the buffer holds; `Pending` once the socket is full.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(socket) = self.socket.as_mut() else {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        };
        while self.sent < self.buf.len() {
            match Pin::new(&mut *socket).poll_write(cx, &self.buf[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let flushed = Pin::new(socket).poll_flush(cx);
        self.clear();
        flushed
    }
}

impl<W> Wire<W> {
    pub(crate) fn new(socket: W) -> Self {
        Self {
            state: Mutex::new(WireState {
                socket: Some(socket),
                buf: Vec::new(),
                sent: 0,
            }),
            leftover: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, WireState<W>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<W: AsyncWrite + Unpin> Wire<W> {
    async fn send(&self) -> io::Result<()> {
        poll_fn(|cx| self.lock().poll_send(cx)).await
    }

    /// Writes `message` now if the socket takes it and nothing is waiting
    /// ahead of it; `false` if it was not written at all. When the socket
    /// takes only part of the frame, the rest is the writer's to send and
    /// the message counts as written.
    ///
    /// `open` is read under the wire's lock: a request cancelled before
    /// its cancellation is answered writes nothing after that answer.
    fn try_write(&self, message: &ServerMessage, outbox: &OutboxGauge, open: &AtomicBool) -> bool {
        let mut state = self.lock();
        if state.socket.is_none()
            || state.pending()
            || !outbox.is_empty()
            || !open.load(Ordering::Acquire)
        {
            return false;
        }
        state.clear();
        if encode_frame(message, &mut state.buf).is_err() {
            // Too large: the writer answers 413 in its place.
            state.clear();
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match state.poll_send(&mut cx) {
            Poll::Ready(Ok(())) => true,
            Poll::Pending if state.sent == 0 => {
                state.clear();
                false
            }
            Poll::Pending => {
                drop(state);
                self.leftover.notify_one();
                true
            }
            // The writer meets the same error and ends the connection.
            Poll::Ready(Err(_)) => {
                state.clear();
                false
            }
        }
    }
}

/// The writer task of a server connection: writes every reply from
/// `queue`, and what a lane could not, until every sender is gone or the
/// socket fails. A reply too large for a frame is passed to `oversize`,
/// which may offer a replacement.
pub(crate) async fn write_wire<W: AsyncWrite + Unpin>(
    wire: Arc<Wire<W>>,
    mut queue: OutboxReceiver<ServerMessage>,
    oversize: impl Fn(&ServerMessage, FrameError) -> Option<ServerMessage>,
) {
    // However the writer ends, aborted included, the socket goes with it:
    // lanes of turns still running must not keep the connection open.
    let _release = Release(&wire);
    let one_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::CurrentThread);
    loop {
        let first = tokio::select! {
            biased;
            queued = queue.recv() => match queued {
                Some(queued) => Some(queued),
                None => break,
            },
            () = wire.leftover.notified() => None,
        };
        if one_thread && first.is_some() {
            // Let the tasks ready on this thread run first: the producer
            // of a burst (a turn handed the model's reply a piece at a
            // time) queues the rest of it, and the burst goes in one
            // write, one wake-up of the client, instead of one a piece.
            // The message taken still counts in the outbox meanwhile, so
            // no lane overtakes it.
            tokio::task::yield_now().await;
        }
        {
            let mut state = wire.lock();
            let mut next = first;
            loop {
                if let Some(queued) = next.take() {
                    encode_or_replace(&mut state.buf, &queued.message, &oversize);
                    // Its share of the outbox goes back now that its bytes
                    // are in the buffer, ahead of anything a lane writes.
                    drop(queued);
                }
                if state.buf.len() - state.sent >= WRITE_HIGH_WATER {
                    break;
                }
                match queue.try_recv() {
                    Some(queued) => next = Some(queued),
                    None => break,
                }
            }
        }
        if wire.send().await.is_err() {
            return;
        }
    }
    if wire.send().await.is_ok() {
        let socket = wire.lock().socket.take();
        if let Some(mut socket) = socket {
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut socket).await;
        }
    }
}

/// Drops the wire's socket, and what it still held for it.
struct Release<'a, W>(&'a Wire<W>);

impl<W> Drop for Release<'_, W> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.socket = None;
        state.buf = Vec::new();
        state.sent = 0;
    }
}

fn encode_or_replace(
    buf: &mut Vec<u8>,
    message: &ServerMessage,
    oversize: &impl Fn(&ServerMessage, FrameError) -> Option<ServerMessage>,
) {
    let start = buf.len();
    if let Err(err) = encode_frame(message, buf) {
        buf.truncate(start);
        if let Some(replacement) = oversize(message, err)
            && encode_frame(&replacement, buf).is_err()
        {
            buf.truncate(start);
        }
    }
}

/// A request's way onto its connection's socket from its own task (see
/// the module's documentation). Cloning is cheap.
#[derive(Clone)]
pub struct ReplyLane {
    request_id: u64,
    /// Cleared when the request ends or is cancelled.
    open: Arc<AtomicBool>,
    wire: Arc<dyn DirectWrite>,
}

trait DirectWrite: Send + Sync {
    fn try_write(&self, message: &ServerMessage, open: &AtomicBool) -> bool;
}

struct ConnectionWire<W> {
    wire: Arc<Wire<W>>,
    outbox: OutboxGauge,
}

impl<W: AsyncWrite + Unpin + Send> DirectWrite for ConnectionWire<W> {
    fn try_write(&self, message: &ServerMessage, open: &AtomicBool) -> bool {
        self.wire.try_write(message, &self.outbox, open)
    }
}

impl ReplyLane {
    pub(crate) fn new<W: AsyncWrite + Unpin + Send + 'static>(
        request_id: u64,
        wire: Arc<Wire<W>>,
        outbox: OutboxGauge,
    ) -> Self {
        Self {
            request_id,
            open: Arc::new(AtomicBool::new(true)),
            wire: Arc::new(ConnectionWire { wire, outbox }),
        }
    }

    /// Closes the lane for good: the request ended or was cancelled.
    pub(crate) fn close(&self) {
        self.open.store(false, Ordering::Release);
    }

    /// Writes `message`, as a reply to this lane's request (its
    /// `request_id` is set), straight to the socket if nothing is waiting
    /// ahead of it and the socket takes it now. `false` if it was not
    /// written: it must then go the usual way (the operation's stream), and
    /// so must every later message of the request until that one has left
    /// the stream.
    pub fn try_send(&self, message: &mut ServerMessage) -> bool {
        message.request_id = self.request_id;
        self.wire.try_write(message, &self.open)
    }
}

impl std::fmt::Debug for ReplyLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyLane")
            .field("request_id", &self.request_id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::DuplexStream;

    use super::*;
    use crate::codec::FrameReader;
    use crate::msg::{StreamChunk, StreamEvent, server_message};
    use crate::transport::outbox::outbox;

    fn chunk(content: &str) -> ServerMessage {
        ServerMessage::from(server_message::Msg::Stream(StreamEvent::from(
            StreamChunk {
                content: content.into(),
            },
        )))
    }

    fn content(message: &ServerMessage) -> String {
        match &message.msg {
            Some(server_message::Msg::Stream(event)) => match &event.event {
                Some(crate::msg::stream_event::Event::Chunk(chunk)) => chunk.content.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    fn no_replacement(_: &ServerMessage, _: FrameError) -> Option<ServerMessage> {
        None
    }

    async fn next(reader: &mut FrameReader<DuplexStream>) -> ServerMessage {
        tokio::time::timeout(Duration::from_secs(20), reader.read())
            .await
            .expect("a frame in time")
            .unwrap()
    }

    #[tokio::test]
    async fn a_lane_waits_behind_what_the_connection_has_queued() {
        let (socket, peer) = tokio::io::duplex(64 * 1024);
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let wire = Arc::new(Wire::new(socket));
        let lane = ReplyLane::new(3, wire.clone(), replies.gauge());
        replies.try_send(chunk("queued").answering(3)).unwrap();
        // The queued reply has not reached the socket: the lane must not
        // overtake it.
        assert!(!lane.try_send(&mut chunk("later")));
        let writer = tokio::spawn(write_wire(wire.clone(), queue, no_replacement));
        let mut reader = FrameReader::new(peer);
        assert_eq!(content(&next(&mut reader).await), "queued");
        // Nothing is waiting any more: the lane writes at once.
        assert!(lane.try_send(&mut chunk("direct")));
        let direct = next(&mut reader).await;
        assert_eq!(
            (direct.request_id, content(&direct).as_str()),
            (3, "direct")
        );
        drop((replies, lane));
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn what_the_socket_takes_only_part_of_the_writer_finishes() {
        // A socket that takes 100 bytes before its reader reads.
        let (socket, peer) = tokio::io::duplex(100);
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let wire = Arc::new(Wire::new(socket));
        let lane = ReplyLane::new(5, wire.clone(), replies.gauge());
        let big = "y".repeat(1000);
        // Part of it went: it counts as written, and the rest is the
        // writer's.
        assert!(lane.try_send(&mut chunk(&big)));
        // With bytes left over, the next one waits for the queue.
        assert!(!lane.try_send(&mut chunk("after")));
        replies.try_send(chunk("after").answering(5)).unwrap();
        let writer = tokio::spawn(write_wire(wire.clone(), queue, no_replacement));
        let mut reader = FrameReader::new(peer);
        let first = next(&mut reader).await;
        assert_eq!((first.request_id, content(&first)), (5, big));
        assert_eq!(content(&next(&mut reader).await), "after");
        drop((replies, lane));
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_closed_lane_and_a_finished_writer_take_nothing() {
        let (socket, _peer) = tokio::io::duplex(64 * 1024);
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let wire = Arc::new(Wire::new(socket));
        let lane = ReplyLane::new(1, wire.clone(), replies.gauge());
        let other = ReplyLane::new(2, wire.clone(), replies.gauge());
        lane.close();
        assert!(!lane.try_send(&mut chunk("cancelled")));
        assert!(other.try_send(&mut chunk("open")));
        // Once the writer is done, the socket is gone even while lanes
        // still hold the wire.
        drop(replies);
        write_wire(wire.clone(), queue, no_replacement).await;
        assert!(wire.lock().socket.is_none());
        assert!(!other.try_send(&mut chunk("too late")));
    }

    /// A socket that counts the writes it is given.
    struct Counted {
        inner: DuplexStream,
        writes: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl AsyncWrite for Counted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.writes.fetch_add(1, Ordering::SeqCst);
            Pin::new(&mut self.inner).poll_write(cx, buf)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// Sixteen pieces handed from one task to another a piece at a time,
    /// as hyper hands a turn the model's reply, each queued for the
    /// client as it comes: how many writes the writer makes of them.
    async fn writes_for_a_burst() -> usize {
        let (inner, peer) = tokio::io::duplex(64 * 1024);
        let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let socket = Counted {
            inner,
            writes: writes.clone(),
        };
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let wire = Arc::new(Wire::new(socket));
        let writer = tokio::spawn(write_wire(wire, queue, no_replacement));
        let (pieces, mut handed) = tokio::sync::mpsc::channel::<String>(1);
        let feeder = tokio::spawn(async move {
            for n in 0..16 {
                pieces.send(format!("piece {n}")).await.unwrap();
            }
        });
        let turn = tokio::spawn(async move {
            while let Some(piece) = handed.recv().await {
                replies.try_send(chunk(&piece).answering(1)).unwrap();
            }
        });
        let mut reader = FrameReader::new(peer);
        for n in 0..16 {
            assert_eq!(content(&next(&mut reader).await), format!("piece {n}"));
        }
        feeder.await.unwrap();
        turn.await.unwrap();
        writer.await.unwrap();
        writes.load(Ordering::SeqCst)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn on_one_thread_a_burst_handed_over_piece_by_piece_is_one_write() {
        assert_eq!(writes_for_a_burst().await, 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_lane_does_not_overtake_what_the_writer_holds_back() {
        let (socket, peer) = tokio::io::duplex(64 * 1024);
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let wire = Arc::new(Wire::new(socket));
        let lane = ReplyLane::new(4, wire.clone(), replies.gauge());
        replies.try_send(chunk("first").answering(4)).unwrap();
        let writer = tokio::spawn(write_wire(wire.clone(), queue, no_replacement));
        // The writer takes "first" and waits for the thread's other tasks:
        // "first" still counts as queued, so the lane refuses "second".
        tokio::task::yield_now().await;
        let mut second = chunk("second");
        if !lane.try_send(&mut second) {
            replies.try_send(second.answering(4)).unwrap();
        }
        let mut reader = FrameReader::new(peer);
        assert_eq!(content(&next(&mut reader).await), "first");
        assert_eq!(content(&next(&mut reader).await), "second");
        drop((replies, lane));
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn an_aborted_writer_lets_the_socket_go() {
        // Nobody reads the peer: the writer waits on a full socket.
        let (socket, mut peer) = tokio::io::duplex(16);
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let wire = Arc::new(Wire::new(socket));
        let lane = ReplyLane::new(1, wire.clone(), replies.gauge());
        replies.try_send(chunk(&"z".repeat(1000))).unwrap();
        let writer = tokio::spawn(write_wire(wire.clone(), queue, no_replacement));
        tokio::task::yield_now().await;
        writer.abort();
        let _ = writer.await;
        // The lane still holds the wire, but the socket is closed: the
        // peer reads what was written, then the end.
        assert!(!lane.try_send(&mut chunk("after")));
        let mut received = Vec::new();
        let read = tokio::io::AsyncReadExt::read_to_end(&mut peer, &mut received);
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .expect("the end of the stream: the socket was dropped")
            .unwrap();
        assert!(received.len() <= 16);
    }
}
