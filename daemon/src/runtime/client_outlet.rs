//! [`ClientOutlet`]: a turn's events on their way to the client that asked
//! for the turn, in bounded memory.
//!
//! A turn's events wait for the connection in a queue of about
//! [`CLIENT_QUEUE_BYTES`]. When the queue is that full, the turn waits for
//! room before it reads more of the model's reply ([`ClientOutlet::room`]):
//! a client that reads slowly slows its own turn down (back-pressure), and
//! nothing piles up. A client that takes nothing at all for the stall
//! limit (`[conversations] client_stall_secs`) — it stopped reading, and
//! the connection's buffers are full — is dropped from the turn: the
//! queued events are discarded, and what it gets next is an
//! [`Error::Unavailable`] (a 503 on the wire) that says why its stream ended. So is a client whose
//! queue passes [`CLIENT_QUEUE_LIMIT`] between two waits (a burst of large
//! tool results). Either way the turn goes on at full speed, and its
//! history has everything.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crabtalk_proto::msg::StreamEvent;

use super::Error;
use futures::Stream;
use parking_lot::Mutex;
use prost::Message;
use tokio::sync::Notify;

/// Bytes of one turn's events past which the turn waits for its client.
pub(crate) const CLIENT_QUEUE_BYTES: usize = 256 * 1024;

/// Bytes of one turn's events past which the client is dropped at once
/// (only a burst between two waits can get there: parallel tool results).
pub(crate) const CLIENT_QUEUE_LIMIT: usize = 4 * 1024 * 1024;

/// What every queued event is charged besides its size.
const PER_EVENT: usize = 64;

/// The turn's side. Clones share the queue; when the last is dropped the
/// client's stream ends after what is queued.
#[derive(Clone)]
pub(crate) struct ClientOutlet {
    shared: Arc<Shared>,
    _open: Arc<Open>,
}

/// Marks the stream ended when the last outlet goes.
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.state.lock().ended = true;
        self.0.ready.notify_one();
    }
}

struct Shared {
    state: Mutex<State>,
    /// An event was queued (for the reader).
    ready: Notify,
    /// The reader took an event (for a turn waiting for room).
    taken: Notify,
    /// Past this the turn waits for room.
    budget: usize,
    /// Past this the client is dropped at once.
    limit: usize,
}

#[derive(Default)]
struct State {
    events: VecDeque<(StreamEvent, usize)>,
    bytes: usize,
    /// Why the client was dropped, until its stream reads it.
    dropped: Option<Error>,
    /// No more events will come (the turn's outlets are gone, or the
    /// client was dropped).
    ended: bool,
    /// The stream side is gone: nobody reads any more.
    gone: bool,
}

/// The client's side: ends the queue when the request's stream is dropped.
struct Reader(Arc<Shared>);

impl Drop for Reader {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.gone = true;
        state.events.clear();
        state.bytes = 0;
        drop(state);
        // A turn waiting for room goes on at once.
        self.0.taken.notify_one();
        // What the client's stream held is free: give it back when quiet.
        super::release::soon();
    }
}

/// A queue for one turn's events: the turn's outlet and the stream the
/// client's request reads.
pub(crate) fn client_outlet() -> (
    ClientOutlet,
    impl Stream<Item = Result<StreamEvent, Error>> + Send + 'static,
) {
    client_outlet_with(CLIENT_QUEUE_BYTES, CLIENT_QUEUE_LIMIT)
}

pub(super) fn client_outlet_with(
    budget: usize,
    limit: usize,
) -> (
    ClientOutlet,
    impl Stream<Item = Result<StreamEvent, Error>> + Send + 'static,
) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        ready: Notify::new(),
        taken: Notify::new(),
        budget,
        limit,
    });
    let stream = futures::stream::unfold(Reader(shared.clone()), |reader| async move {
        loop {
            let next = {
                let mut state = reader.0.state.lock();
                if let Some((event, size)) = state.events.pop_front() {
                    state.bytes -= size;
                    reader.0.taken.notify_one();
                    Some(Some(Ok(event)))
                } else if let Some(error) = state.dropped.take() {
                    state.ended = true;
                    Some(Some(Err(error)))
                } else if state.ended {
                    Some(None)
                } else {
                    None
                }
            };
            match next {
                Some(Some(item)) => return Some((item, reader)),
                Some(None) => return None,
                None => reader.0.ready.notified().await,
            }
        }
    });
    let outlet = ClientOutlet {
        shared: shared.clone(),
        _open: Arc::new(Open(shared)),
    };
    (outlet, stream)
}

impl ClientOutlet {
    /// Queues `event` for the client; drops the client instead if its
    /// queue would pass the limit. Never waits.
    pub(crate) fn send(&self, event: StreamEvent) {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        if state.gone || state.ended || state.dropped.is_some() {
            return;
        }
        let size = event.encoded_len() + PER_EVENT;
        if state.bytes > 0 && state.bytes + size > shared.limit {
            drop_client(&mut state, format!("more than {} bytes", shared.limit));
        } else {
            state.bytes += size;
            state.events.push_back((event, size));
        }
        drop(state);
        shared.ready.notify_one();
    }

    /// Waits while more than the budget is queued, as long as the client
    /// keeps taking events; a client that takes none for `stall` is dropped
    /// and the wait ends.
    pub(crate) async fn room(&self, stall: Duration) {
        let shared = &self.shared;
        loop {
            {
                let state = shared.state.lock();
                let waiting = !(state.gone || state.ended || state.dropped.is_some());
                if !waiting || state.bytes <= shared.budget {
                    return;
                }
            }
            if tokio::time::timeout(stall, shared.taken.notified())
                .await
                .is_err()
            {
                let mut state = shared.state.lock();
                if !(state.gone || state.ended || state.dropped.is_some()) {
                    drop_client(
                        &mut state,
                        format!("nothing was taken for {} s", stall.as_secs()),
                    );
                }
                drop(state);
                shared.ready.notify_one();
                return;
            }
        }
    }
}

/// Ends the client's part in the turn: what is queued goes, the reason
/// comes next.
fn drop_client(state: &mut State, why: String) {
    state.events.clear();
    state.bytes = 0;
    state.dropped = Some(Error::unavailable(format!(
        "this client stopped reading the turn's events ({why}), so its stream was ended; the turn goes on and is saved (GetConversationHistory shows it)"
    )));
}

#[cfg(test)]
mod tests {
    use crabtalk_proto::msg::{StreamChunk, StreamEnd};
    use futures::StreamExt;

    use super::*;

    fn chunk(n: usize) -> StreamEvent {
        StreamChunk {
            content: "x".repeat(n),
        }
        .into()
    }

    #[tokio::test]
    async fn a_client_that_keeps_up_gets_everything() {
        let (outlet, events) = client_outlet_with(10_000, 40_000);
        let mut events = Box::pin(events);
        for _ in 0..100 {
            outlet.send(chunk(1000));
            assert!(events.next().await.unwrap().is_ok());
        }
        outlet.send(StreamEnd::default().into());
        assert!(events.next().await.unwrap().unwrap().is_end());
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_waits_for_a_slow_reader_and_drops_one_that_reads_nothing() {
        let (outlet, events) = client_outlet_with(10_000, 40_000);
        let mut events = Box::pin(events);
        for _ in 0..15 {
            outlet.send(chunk(1000));
        }
        // Over the budget: the turn waits while the reader takes events.
        let waiting = tokio::spawn({
            let outlet = outlet.clone();
            async move { outlet.room(Duration::from_secs(30)).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        for _ in 0..6 {
            assert!(events.next().await.unwrap().is_ok());
        }
        waiting.await.unwrap();
        // A reader that takes nothing is dropped after the stall limit.
        for _ in 0..10 {
            outlet.send(chunk(1000));
        }
        let started = tokio::time::Instant::now();
        outlet.room(Duration::from_secs(30)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        let error = events.next().await.unwrap().unwrap_err();
        assert!(
            matches!(&error, Error::Unavailable(message) if message.contains("nothing was taken for 30 s")),
            "{error:?}"
        );
        outlet.send(chunk(1));
        drop(outlet);
        assert!(events.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_waiting_for_a_client_that_goes_away_goes_on_at_once() {
        let (outlet, events) = client_outlet_with(10_000, 40_000);
        for _ in 0..15 {
            outlet.send(chunk(1000));
        }
        let waiting = tokio::spawn({
            let outlet = outlet.clone();
            async move {
                let started = tokio::time::Instant::now();
                outlet.room(Duration::from_secs(30)).await;
                started.elapsed()
            }
        });
        tokio::task::yield_now().await;
        drop(events);
        assert_eq!(waiting.await.unwrap(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_client_that_falls_far_behind_gets_the_reason_at_once() {
        let (outlet, events) = client_outlet_with(10_000, 40_000);
        for _ in 0..100 {
            outlet.send(chunk(1000));
        }
        outlet.send(StreamEnd::default().into());
        drop(outlet);
        let items: Vec<_> = events.collect().await;
        // What was queued is discarded: the reason comes at once.
        assert_eq!(items.len(), 1);
        let error = items[0].as_ref().unwrap_err();
        assert!(
            matches!(error, Error::Unavailable(message) if message.contains("stopped reading")),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn one_event_larger_than_the_budget_still_goes_to_a_client_that_keeps_up() {
        let (outlet, events) = client_outlet_with(1000, 4000);
        let mut events = Box::pin(events);
        outlet.send(chunk(50_000));
        assert!(events.next().await.unwrap().is_ok());
        outlet.send(chunk(50_000));
        assert!(events.next().await.unwrap().is_ok());
    }
}
