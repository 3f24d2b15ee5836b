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
//!
//! When the transport offers the request's [`ReplyLane`], an event with
//! nothing of its turn ahead of it (the queue empty, and the last event
//! taken already gone on towards the socket) is written straight to the
//! socket from the turn's task, if the socket takes it at once: no task
//! is woken for it. The turn's end always goes through the queue, so the
//! stream sees it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crabtalk_proto::ReplyLane;
use crabtalk_proto::msg::{ServerMessage, StreamEvent, server_message};

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

/// An event sent sooner than this after the previous one goes through the
/// queue, with its burst, rather than through the lane. So does a turn's
/// first event.
const LANE_GAP: Duration = Duration::from_millis(1);

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
    /// The request's own way to the socket, where the transport gave one.
    lane: Option<Box<dyn Lane>>,
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
    /// The stream handed out an event and has not been polled since: that
    /// event may not have reached the connection's queue yet, so nothing
    /// may overtake it through the lane.
    handed: bool,
    /// When the turn sent its previous event.
    last_sent: Option<Instant>,
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
/// `lane`, where the transport offers one, lets events skip the queue.
pub(crate) fn client_outlet(
    lane: Option<ReplyLane>,
) -> (
    ClientOutlet,
    impl Stream<Item = Result<StreamEvent, Error>> + Send + 'static,
) {
    let lane = lane.map(|lane| Box::new(lane) as Box<dyn Lane>);
    client_outlet_with(CLIENT_QUEUE_BYTES, CLIENT_QUEUE_LIMIT, lane)
}

/// Where an event may skip the queue: the request's [`ReplyLane`].
pub(super) trait Lane: Send + Sync {
    /// Writes `message` now; `false` if it did not.
    fn try_send(&self, message: &mut ServerMessage) -> bool;
}

impl Lane for ReplyLane {
    fn try_send(&self, message: &mut ServerMessage) -> bool {
        ReplyLane::try_send(self, message)
    }
}

pub(super) fn client_outlet_with(
    budget: usize,
    limit: usize,
    lane: Option<Box<dyn Lane>>,
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
        lane,
    });
    let stream = futures::stream::unfold(Reader(shared.clone()), |reader| async move {
        loop {
            let next = {
                let mut state = reader.0.state.lock();
                // Polled again: what it handed out last is on its way.
                state.handed = false;
                if let Some((event, size)) = state.events.pop_front() {
                    state.bytes -= size;
                    state.handed = true;
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
        // An event close behind the previous one is part of a burst: the
        // queue's writer sends a burst in one write, where the lane would
        // make one write (and one wake-up of the client) per event. The
        // turn's first event (its start) goes through the queue too: with a
        // model that answers at once it is the head of the turn's one burst,
        // and taking the lane cost more context switches than it saved
        // (RFC 0046, "Measured").
        let now = Instant::now();
        let lone = state
            .last_sent
            .is_some_and(|last| now.saturating_duration_since(last) >= LANE_GAP);
        state.last_sent = Some(now);
        let event = match &shared.lane {
            Some(lane) if lone && state.events.is_empty() && !state.handed && !event.is_end() => {
                let mut message = ServerMessage::from(server_message::Msg::Stream(event));
                if lane.try_send(&mut message) {
                    return;
                }
                match message.msg {
                    Some(server_message::Msg::Stream(event)) => event,
                    _ => unreachable!("the message was made from the event just above"),
                }
            }
            _ => event,
        };
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
        let (outlet, events) = client_outlet_with(10_000, 40_000, None);
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
        let (outlet, events) = client_outlet_with(10_000, 40_000, None);
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
        let (outlet, events) = client_outlet_with(10_000, 40_000, None);
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
        let (outlet, events) = client_outlet_with(10_000, 40_000, None);
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

    /// A lane that takes what it is given while `open`.
    #[derive(Clone, Default)]
    struct TestLane {
        open: Arc<std::sync::atomic::AtomicBool>,
        taken: Arc<Mutex<Vec<String>>>,
    }

    impl TestLane {
        fn set_open(&self, open: bool) {
            self.open.store(open, std::sync::atomic::Ordering::SeqCst);
        }

        fn taken(&self) -> Vec<String> {
            self.taken.lock().clone()
        }
    }

    impl Lane for TestLane {
        fn try_send(&self, message: &mut ServerMessage) -> bool {
            if !self.open.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            let Some(server_message::Msg::Stream(event)) = &message.msg else {
                panic!("{message:?}");
            };
            self.taken.lock().push(text(event));
            true
        }
    }

    fn text(event: &StreamEvent) -> String {
        match &event.event {
            Some(crabtalk_proto::msg::stream_event::Event::Chunk(chunk)) => chunk.content.clone(),
            Some(crabtalk_proto::msg::stream_event::Event::End(_)) => "end".into(),
            other => panic!("{other:?}"),
        }
    }

    async fn take<S: Stream<Item = Result<StreamEvent, Error>> + Unpin>(events: &mut S) -> String {
        text(&events.next().await.unwrap().unwrap())
    }

    fn said(content: &str) -> StreamEvent {
        StreamChunk {
            content: content.into(),
        }
        .into()
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_skips_the_queue_only_with_nothing_of_its_turn_ahead() {
        let lane = TestLane::default();
        lane.set_open(true);
        let (outlet, events) = client_outlet_with(10_000, 40_000, Some(Box::new(lane.clone())));
        let mut events = Box::pin(events);
        let pause = || tokio::time::advance(Duration::from_millis(2));

        // The turn's first event goes through the queue.
        outlet.send(said("start"));
        assert!(lane.taken().is_empty());
        assert_eq!(take(&mut events).await, "start");
        assert!(futures::poll!(events.next()).is_pending());
        // After a pause, with nothing ahead of it, an event takes the lane.
        pause().await;
        outlet.send(said("a"));
        assert_eq!(lane.taken(), ["a"]);
        // The lane refuses (the socket is full): queued.
        pause().await;
        lane.set_open(false);
        outlet.send(said("b"));
        // The lane would take it, but "b" is queued ahead.
        pause().await;
        lane.set_open(true);
        outlet.send(said("c"));
        assert_eq!(take(&mut events).await, "b");
        assert_eq!(take(&mut events).await, "c");
        // The queue is empty, but "c" was just handed out and may not have
        // reached the connection yet: "d" must not overtake it.
        pause().await;
        outlet.send(said("d"));
        assert_eq!(lane.taken(), ["a"]);
        assert_eq!(take(&mut events).await, "d");
        // Polled again, the stream has nothing in hand.
        assert!(futures::poll!(events.next()).is_pending());
        pause().await;
        outlet.send(said("e"));
        assert_eq!(lane.taken(), ["a", "e"]);
        // Close behind "e", "f" is part of a burst: the queue's writer
        // sends a burst in one write.
        outlet.send(said("f"));
        assert_eq!(lane.taken(), ["a", "e"]);
        assert_eq!(take(&mut events).await, "f");
        // The end always goes through the stream, which must see it.
        assert!(futures::poll!(events.next()).is_pending());
        pause().await;
        outlet.send(StreamEnd::default().into());
        assert_eq!(take(&mut events).await, "end");
        assert_eq!(lane.taken(), ["a", "e"]);
    }

    #[tokio::test]
    async fn one_event_larger_than_the_budget_still_goes_to_a_client_that_keeps_up() {
        let (outlet, events) = client_outlet_with(1000, 4000, None);
        let mut events = Box::pin(events);
        outlet.send(chunk(50_000));
        assert!(events.next().await.unwrap().is_ok());
        outlet.send(chunk(50_000));
        assert!(events.next().await.unwrap().is_ok());
    }
}
