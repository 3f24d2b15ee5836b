//! Where a client's reader task delivers replies: one slot per request in
//! flight, keyed by `request_id`.
//!
//! The reader task serves every request of the connection, so it never
//! waits for one consumer: a stream's replies wait in that stream's own
//! buffer. The buffer is bounded — [`STREAM_BUFFER_BYTES`] of replies not
//! yet taken — and a stream whose consumer lets it fill up is ended
//! instead of growing: its consumer gets [`ClientError::Lagged`](super::ClientError::Lagged)
//! after what was buffered, and the server is told to stop sending.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use prost::Message;
use tokio::sync::{mpsc, oneshot, watch};

use super::ClientError;
use crate::msg::ServerMessage;

/// Replies one stream may hold that its consumer has not taken yet.
pub const STREAM_BUFFER_BYTES: usize = 8 * 1024 * 1024;

/// What each buffered reply is charged besides its size, so that a flood
/// of tiny replies is bounded too.
const PER_REPLY: usize = 64;

/// A request waiting for replies.
pub(super) enum Slot {
    /// Request/response: the first reply completes it.
    Once(oneshot::Sender<ServerMessage>),
    /// A stream: replies until the stream's owner says it is done.
    Stream(StreamBuffer),
}

/// What a stream's consumer receives.
pub(super) enum Delivery {
    /// A reply, and what it was charged.
    Reply(Box<ServerMessage>, usize),
    /// The buffer overflowed; nothing follows.
    Lagged,
}

/// The sending side of one stream's bounded buffer.
pub(super) struct StreamBuffer {
    sender: mpsc::UnboundedSender<Delivery>,
    queued: Arc<AtomicUsize>,
}

/// The receiving side: gives each reply's charge back as it is taken.
pub(super) struct StreamReceiver {
    receiver: mpsc::UnboundedReceiver<Delivery>,
    queued: Arc<AtomicUsize>,
}

/// A new stream buffer.
pub(super) fn stream_buffer() -> (StreamBuffer, StreamReceiver) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    (
        StreamBuffer {
            sender,
            queued: queued.clone(),
        },
        StreamReceiver { receiver, queued },
    )
}

/// How a delivery to a stream went.
enum Delivered {
    Kept,
    /// The consumer is gone.
    Gone,
    /// The buffer was full; the stream is ended.
    Overflowed,
}

impl StreamBuffer {
    fn deliver(&self, reply: ServerMessage) -> Delivered {
        let charge = reply.encoded_len() + PER_REPLY;
        let queued = self.queued.load(Ordering::Acquire);
        // A reply larger than the whole buffer still goes when it is empty.
        if queued > 0 && queued + charge > STREAM_BUFFER_BYTES {
            let _ = self.sender.send(Delivery::Lagged);
            return Delivered::Overflowed;
        }
        self.queued.fetch_add(charge, Ordering::AcqRel);
        match self.sender.send(Delivery::Reply(Box::new(reply), charge)) {
            Ok(()) => Delivered::Kept,
            Err(_) => Delivered::Gone,
        }
    }
}

impl StreamReceiver {
    pub(super) fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Delivery>> {
        let polled = self.receiver.poll_recv(cx);
        if let std::task::Poll::Ready(Some(Delivery::Reply(_, charge))) = &polled {
            self.queued.fetch_sub(*charge, Ordering::AcqRel);
        }
        polled
    }

    pub(super) fn close(&mut self) {
        self.receiver.close();
    }
}

/// The slots of one connection, and why it closed once it has.
pub(super) struct Slots {
    state: Mutex<State>,
    /// Flips to `true` once, when the connection closes.
    closed_signal: watch::Sender<bool>,
}

impl Default for Slots {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            closed_signal: watch::Sender::new(false),
        }
    }
}

#[derive(Default)]
struct State {
    open: HashMap<u64, Slot>,
    closed: Option<String>,
}

impl Slots {
    /// Registers a slot; fails with the close reason once the connection is
    /// closed.
    pub(super) fn register(&self, request_id: u64, slot: Slot) -> Result<(), ClientError> {
        let mut state = self.lock();
        if let Some(reason) = &state.closed {
            return Err(ClientError::Closed {
                reason: reason.clone(),
            });
        }
        state.open.insert(request_id, slot);
        Ok(())
    }

    pub(super) fn remove(&self, request_id: u64) {
        self.lock().open.remove(&request_id);
    }

    /// Hands a reply to its request. Replies for requests nobody waits for
    /// any more (a dropped stream, say) are discarded. Returns the request
    /// id of a stream that this reply overflowed: it is ended, and the
    /// server should be told to stop.
    pub(super) fn deliver(&self, reply: ServerMessage) -> Option<u64> {
        let mut state = self.lock();
        let request_id = reply.request_id;
        match state.open.remove(&request_id) {
            Some(Slot::Once(waiter)) => {
                let _ = waiter.send(reply);
            }
            Some(Slot::Stream(stream)) => match stream.deliver(reply) {
                Delivered::Kept => {
                    state.open.insert(request_id, Slot::Stream(stream));
                }
                Delivered::Gone => {}
                Delivered::Overflowed => return Some(request_id),
            },
            None => tracing::trace!(request_id, "reply for a request nobody waits for"),
        }
        None
    }

    /// Marks the connection closed and wakes every waiter (their channels
    /// close).
    pub(super) fn close(&self, reason: String) {
        let mut state = self.lock();
        state.closed.get_or_insert(reason);
        state.open.clear();
        drop(state);
        self.closed_signal.send_replace(true);
    }

    /// Resolves once [`Slots::close`] has run, with the reason.
    pub(super) async fn closed(&self) -> String {
        let mut signal = self.closed_signal.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = signal.wait_for(|closed| *closed).await;
        self.closed_reason().unwrap_or_default()
    }

    /// How many requests wait for replies.
    pub(super) fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// Why the connection closed, if it has.
    pub(super) fn closed_reason(&self) -> Option<String> {
        self.lock().closed.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
