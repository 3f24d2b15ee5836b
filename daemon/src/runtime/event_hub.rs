//! [`EventHub`]: every turn's events, to every `SubscribeEvents`
//! subscriber, in bounded memory.
//!
//! Each subscriber has its own queue, bounded by a number of events and by
//! their bytes; a subscriber that falls behind loses the oldest events and
//! is told how many by an `EVENTS_DROPPED` event before the next one it
//! gets. Publishing never waits for a subscriber. Events are shared between
//! the queues (one copy each, however many subscribers hold it), and since
//! every queue holds the newest events, all of them together hold at most
//! one budget's worth of events: what any number of subscribers that never
//! read can make the daemon keep is [`SUBSCRIBER_BYTES`] plus a pointer per
//! queued event.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use crabtalk_proto::msg::{AgentEventKind, AgentEventMsg};
use futures::Stream;
use parking_lot::Mutex;
use prost::Message;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::storage::now_rfc3339;

/// Events queued for one subscriber before it starts losing the oldest.
pub(crate) const SUBSCRIBER_BUFFER: usize = 4096;

/// Bytes of events queued for one subscriber before it starts losing the
/// oldest (the newest event is always kept, whatever its size).
pub(crate) const SUBSCRIBER_BYTES: usize = 4 * 1024 * 1024;

/// What every queued event is charged besides its size.
const PER_EVENT: usize = 64;

/// The fan-out to `SubscribeEvents` subscribers.
pub(crate) struct EventHub {
    subscribers: Mutex<Vec<Weak<Subscriber>>>,
    capacity: usize,
    budget: usize,
    closed: CancellationToken,
}

/// One subscriber's queue.
struct Subscriber {
    queue: Mutex<Queue>,
    ready: Notify,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<(Arc<AgentEventMsg>, usize)>,
    bytes: usize,
    /// Events dropped since the subscriber last read.
    dropped: u64,
}

impl EventHub {
    /// A hub whose subscribers each queue at most `capacity` events (and
    /// [`SUBSCRIBER_BYTES`]).
    pub(crate) fn new(capacity: usize) -> Self {
        Self::with_budget(capacity, SUBSCRIBER_BYTES)
    }

    /// A hub with a byte budget of its own.
    pub(crate) fn with_budget(capacity: usize, budget: usize) -> Self {
        Self {
            subscribers: Mutex::new(Vec::new()),
            capacity: capacity.max(1),
            budget,
            closed: CancellationToken::new(),
        }
    }

    /// Ends every subscription (at shutdown).
    pub(crate) fn close(&self) {
        self.closed.cancel();
    }

    /// A subscription: every agent event from now on (it is registered
    /// when this is called, not when the stream is first polled), until the
    /// hub closes or the stream is dropped.
    pub(crate) fn subscribe(&self) -> impl Stream<Item = AgentEventMsg> + Send + 'static {
        let subscriber = Arc::new(Subscriber {
            queue: Mutex::new(Queue::default()),
            ready: Notify::new(),
        });
        self.subscribers.lock().push(Arc::downgrade(&subscriber));
        let state = (subscriber, self.closed.clone());
        futures::stream::unfold(state, |(subscriber, closed)| async move {
            loop {
                if let Some(event) = subscriber.next() {
                    return Some((event, (subscriber, closed)));
                }
                tokio::select! {
                    () = closed.cancelled() => return None,
                    () = subscriber.ready.notified() => {}
                }
            }
        })
    }

    /// Whether any subscription is open.
    pub(super) fn has_subscribers(&self) -> bool {
        let mut subscribers = self.subscribers.lock();
        subscribers.retain(|subscriber| subscriber.strong_count() > 0);
        !subscribers.is_empty()
    }

    /// Queues `event` for every subscriber; never waits.
    pub(super) fn publish(&self, event: AgentEventMsg) {
        let mut subscribers = self.subscribers.lock();
        subscribers.retain(|subscriber| subscriber.strong_count() > 0);
        if subscribers.is_empty() {
            return;
        }
        let size = event.encoded_len() + PER_EVENT;
        let event = Arc::new(event);
        for subscriber in subscribers.iter().filter_map(Weak::upgrade) {
            subscriber.push(event.clone(), size, self.capacity, self.budget);
        }
    }

    /// How many subscriptions are open (for tests).
    #[cfg(test)]
    pub(crate) fn subscribers(&self) -> usize {
        let mut subscribers = self.subscribers.lock();
        subscribers.retain(|subscriber| subscriber.strong_count() > 0);
        subscribers.len()
    }
}

impl Subscriber {
    fn push(&self, event: Arc<AgentEventMsg>, size: usize, capacity: usize, budget: usize) {
        let mut queue = self.queue.lock();
        queue.events.push_back((event, size));
        queue.bytes += size;
        while queue.events.len() > 1 && (queue.events.len() > capacity || queue.bytes > budget) {
            if let Some((_, dropped)) = queue.events.pop_front() {
                queue.bytes -= dropped;
                queue.dropped += 1;
            }
        }
        drop(queue);
        self.ready.notify_one();
    }

    /// The next event for this subscriber: the drop marker first, if
    /// events were lost.
    fn next(&self) -> Option<AgentEventMsg> {
        let mut queue = self.queue.lock();
        if queue.dropped > 0 {
            let missed = std::mem::take(&mut queue.dropped);
            return Some(AgentEventMsg {
                kind: AgentEventKind::EventsDropped as i32,
                content: format!(
                    "{missed} events were dropped because this subscriber fell behind"
                ),
                timestamp: now_rfc3339(),
                ..Default::default()
            });
        }
        let (event, size) = queue.events.pop_front()?;
        queue.bytes -= size;
        drop(queue);
        Some(Arc::unwrap_or_clone(event))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn text(content: &str) -> AgentEventMsg {
        AgentEventMsg {
            content: content.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_by_bytes_loses_the_oldest() {
        let hub = EventHub::with_budget(1000, 10_000);
        let mut events = Box::pin(hub.subscribe());
        for i in 0..10 {
            hub.publish(text(&format!("{i}{}", "x".repeat(3000))));
        }
        let marker = events.next().await.unwrap();
        assert_eq!(marker.kind, AgentEventKind::EventsDropped as i32);
        assert!(marker.content.starts_with("7 events"), "{}", marker.content);
        let rest: Vec<char> = events
            .take(3)
            .map(|e| e.content.chars().next().unwrap())
            .collect()
            .await;
        assert_eq!(rest, ['7', '8', '9']);
    }

    #[tokio::test]
    async fn the_newest_event_is_kept_whatever_its_size_and_dropped_streams_leave() {
        let hub = EventHub::with_budget(10, 100);
        let mut events = Box::pin(hub.subscribe());
        hub.publish(text(&"y".repeat(5000)));
        assert_eq!(events.next().await.unwrap().content.len(), 5000);
        assert_eq!(hub.subscribers(), 1);
        drop(events);
        hub.publish(text("after"));
        assert_eq!(hub.subscribers(), 0);
    }

    #[tokio::test]
    async fn closing_the_hub_ends_subscriptions() {
        let hub = EventHub::new(4);
        let mut events = Box::pin(hub.subscribe());
        hub.close();
        assert!(events.next().await.is_none());
    }
}
