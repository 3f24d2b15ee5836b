//! Where a client's reader task delivers replies: one slot per request in
//! flight, keyed by `request_id`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::{mpsc, oneshot, watch};

use crate::msg::ServerMessage;

/// A request waiting for replies.
pub(super) enum Slot {
    /// Request/response: the first reply completes it.
    Once(oneshot::Sender<ServerMessage>),
    /// A stream: replies until the stream's owner says it is done.
    Stream(mpsc::UnboundedSender<ServerMessage>),
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
    pub(super) fn register(&self, request_id: u64, slot: Slot) -> Result<(), String> {
        let mut state = self.lock();
        if let Some(reason) = &state.closed {
            return Err(reason.clone());
        }
        state.open.insert(request_id, slot);
        Ok(())
    }

    pub(super) fn remove(&self, request_id: u64) {
        self.lock().open.remove(&request_id);
    }

    /// Hands a reply to its request. Replies for requests nobody waits for
    /// any more (a dropped stream, say) are discarded.
    pub(super) fn deliver(&self, reply: ServerMessage) {
        let mut state = self.lock();
        let request_id = reply.request_id;
        match state.open.remove(&request_id) {
            Some(Slot::Once(waiter)) => {
                let _ = waiter.send(reply);
            }
            Some(Slot::Stream(stream)) => {
                if stream.send(reply).is_ok() {
                    state.open.insert(request_id, Slot::Stream(stream));
                }
            }
            None => tracing::trace!(request_id, "reply for a request nobody waits for"),
        }
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
