//! A conversation's queue and controls: [`TurnTicket`] (turns run in the
//! order they were started), [`RunGuard`] (the running turn's marker and
//! cancellation), [`AskTicket`] (a question waiting for its answer).

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Conversation;

/// Which turn of a conversation may run: tickets are numbered as turns are
/// started; `serving` is the lowest number not yet finished.
#[derive(Default)]
pub(super) struct TurnOrder {
    pub(super) next: u64,
    pub(super) serving: u64,
    /// Finished tickets above `serving` (a turn that gave up its place).
    pub(super) done: std::collections::BTreeSet<u64>,
}

/// A turn's place in its conversation's queue. Turns on one conversation
/// run in the order they were started, not in the order their tasks happen
/// to be scheduled; dropping the ticket lets the next one go.
pub(crate) struct TurnTicket {
    pub(super) conversation: Arc<Conversation>,
    pub(super) number: u64,
}

impl TurnTicket {
    /// Resolves when every turn started before this one has finished.
    pub(crate) async fn wait(&self) {
        loop {
            let changed = self.conversation.order_changed.notified();
            if self.conversation.order.lock().serving == self.number {
                return;
            }
            changed.await;
        }
    }
}

impl Drop for TurnTicket {
    fn drop(&mut self) {
        let mut order = self.conversation.order.lock();
        order.done.insert(self.number);
        loop {
            let serving = order.serving;
            if !order.done.remove(&serving) {
                break;
            }
            order.serving += 1;
        }
        drop(order);
        self.conversation.order_changed.notify_waiters();
    }
}

/// Clears the running-turn marker when the turn ends.
pub(crate) struct RunGuard {
    pub(super) conversation: Arc<Conversation>,
    pub(super) run_id: u64,
    pub(super) cancel: CancellationToken,
}

impl RunGuard {
    /// Resolves when the turn is cancelled.
    pub(crate) async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Why the turn was cancelled.
    pub(crate) fn reason(&self) -> String {
        self.conversation
            .run
            .lock()
            .as_ref()
            .and_then(|control| control.reason.clone())
            .unwrap_or_else(|| "cancelled".into())
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let mut run = self.conversation.run.lock();
        if run
            .as_ref()
            .is_some_and(|control| control.run_id == self.run_id)
        {
            *run = None;
        }
    }
}

/// A question waiting for its answer.
pub(crate) struct AskTicket {
    pub(super) conversation: Arc<Conversation>,
    pub(super) call_id: String,
    pub(super) answer: Option<oneshot::Receiver<String>>,
}

impl AskTicket {
    /// The answer, or `None` if the question was withdrawn.
    pub(crate) async fn answer(mut self) -> Option<String> {
        self.answer.take()?.await.ok()
    }
}

impl Drop for AskTicket {
    fn drop(&mut self) {
        self.conversation
            .asks
            .lock()
            .retain(|ask| ask.call_id != self.call_id);
    }
}
