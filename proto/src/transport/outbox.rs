//! [`Outbox`]: the frames waiting for a connection's writer, bounded by
//! bytes.
//!
//! A peer that does not read makes its socket buffers fill up and the
//! writer stop; whatever is queued behind the writer is then memory the
//! peer makes its host spend. The outbox charges every queued message its
//! encoded size against a fixed budget: a sender waits for room (the
//! back-pressure reaches the task that produced the message), and the
//! budget is given back as the writer takes each message. A message larger
//! than the whole budget waits until the queue is empty and then goes
//! alone, so the queue holds at most the budget or one message.
//!
//! When the writer stops for good (its socket failed, or it finished), the
//! outbox closes: waiting senders fail instead of waiting forever.

use std::sync::Arc;

use prost::Message;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// What every queued message is charged besides its payload (the frame
/// header, the queue's own bookkeeping), so even empty messages count.
const PER_MESSAGE: usize = 64;

/// The sending side; clones share the queue and the budget.
pub(crate) struct Outbox<M> {
    queue: mpsc::UnboundedSender<Queued<M>>,
    budget: Arc<Semaphore>,
    capacity: usize,
}

impl<M> Clone for Outbox<M> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            budget: self.budget.clone(),
            capacity: self.capacity,
        }
    }
}

/// Tells whether anything is queued, without keeping the queue open.
#[derive(Clone)]
pub(crate) struct OutboxGauge {
    budget: Arc<Semaphore>,
    capacity: usize,
}

impl OutboxGauge {
    /// Nothing is queued: every message sent has been taken by the writer
    /// (and its bytes are in the writer's buffer).
    pub(crate) fn is_empty(&self) -> bool {
        self.budget.available_permits() >= self.capacity
    }
}

/// A message in the queue, holding its share of the budget until the
/// writer has taken it.
pub(crate) struct Queued<M> {
    pub(crate) message: M,
    _charge: OwnedSemaphorePermit,
}

/// The writer's side. Dropping it closes the outbox.
pub(crate) struct OutboxReceiver<M> {
    queue: mpsc::UnboundedReceiver<Queued<M>>,
    budget: Arc<Semaphore>,
}

/// The writer is gone; nothing more can be sent.
#[derive(Debug)]
pub(crate) struct OutboxClosed;

/// An outbox holding at most `capacity` bytes of messages.
pub(crate) fn outbox<M: Message>(capacity: usize) -> (Outbox<M>, OutboxReceiver<M>) {
    let capacity = capacity.clamp(PER_MESSAGE, u32::MAX as usize);
    let budget = Arc::new(Semaphore::new(capacity));
    let (queue, receiver) = mpsc::unbounded_channel();
    (
        Outbox {
            queue,
            budget: budget.clone(),
            capacity,
        },
        OutboxReceiver {
            queue: receiver,
            budget,
        },
    )
}

impl<M: Message> Outbox<M> {
    fn charge(&self, message: &M) -> u32 {
        // Clamped to the capacity, so a huge message waits for an empty
        // queue instead of forever.
        (message.encoded_len() + PER_MESSAGE).min(self.capacity) as u32
    }

    /// Queues `message`, waiting while the queue is full.
    pub(crate) async fn send(&self, message: M) -> Result<(), OutboxClosed> {
        let charge = self
            .budget
            .clone()
            .acquire_many_owned(self.charge(&message))
            .await
            .map_err(|_| OutboxClosed)?;
        self.queue
            .send(Queued {
                message,
                _charge: charge,
            })
            .map_err(|_| OutboxClosed)
    }

    /// Queues `message` if there is room now; gives it back otherwise.
    pub(crate) fn try_send(&self, message: M) -> Result<(), M> {
        let charge = match self
            .budget
            .clone()
            .try_acquire_many_owned(self.charge(&message))
        {
            Ok(charge) => charge,
            Err(_) => return Err(message),
        };
        self.queue
            .send(Queued {
                message,
                _charge: charge,
            })
            .map_err(|failed| failed.0.message)
    }

    /// A gauge of this outbox that does not keep it open.
    pub(crate) fn gauge(&self) -> OutboxGauge {
        OutboxGauge {
            budget: self.budget.clone(),
            capacity: self.capacity,
        }
    }

    /// Bytes of the budget in use (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn queued_bytes(&self) -> usize {
        self.capacity - self.budget.available_permits()
    }
}

impl<M> OutboxReceiver<M> {
    pub(crate) async fn recv(&mut self) -> Option<Queued<M>> {
        self.queue.recv().await
    }

    pub(crate) fn try_recv(&mut self) -> Option<Queued<M>> {
        self.queue.try_recv().ok()
    }
}

impl<M> Drop for OutboxReceiver<M> {
    fn drop(&mut self) {
        // Senders waiting for room would otherwise wait forever.
        self.budget.close();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::msg::{ServerMessage, StreamChunk, StreamEvent};

    fn chunk(bytes: usize) -> ServerMessage {
        ServerMessage::from(StreamEvent::from(StreamChunk {
            content: "x".repeat(bytes),
        }))
    }

    #[tokio::test]
    async fn a_full_outbox_makes_senders_wait_until_the_writer_takes_messages() {
        let (outbox, mut receiver) = outbox::<ServerMessage>(10_000);
        outbox.send(chunk(4000)).await.unwrap();
        outbox.send(chunk(4000)).await.unwrap();
        assert!(outbox.queued_bytes() > 8000);
        let third = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(chunk(4000)).await }
        });
        tokio::task::yield_now().await;
        assert!(!third.is_finished(), "the third message waits for room");
        assert!(outbox.try_send(chunk(4000)).is_err());
        let first = receiver.recv().await.unwrap();
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(outbox.queued_bytes() <= 10_000);
    }

    #[tokio::test]
    async fn a_message_larger_than_the_budget_goes_alone() {
        let (outbox, mut receiver) = outbox::<ServerMessage>(1000);
        outbox.send(chunk(10)).await.unwrap();
        let big = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(chunk(50_000)).await }
        });
        tokio::task::yield_now().await;
        assert!(!big.is_finished());
        drop(receiver.recv().await.unwrap());
        big.await.unwrap().unwrap();
        assert_eq!(outbox.queued_bytes(), 1000);
    }

    #[tokio::test]
    async fn senders_fail_once_the_writer_is_gone() {
        let (outbox, receiver) = outbox::<ServerMessage>(1000);
        outbox.send(chunk(900)).await.unwrap();
        let waiting = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(chunk(900)).await }
        });
        tokio::task::yield_now().await;
        drop(receiver);
        assert!(waiting.await.unwrap().is_err());
        assert!(outbox.send(chunk(1)).await.is_err());
    }
}
