//! A streamed request's `ReplyLane` over a real Unix socket: events written
//! straight from the producing task arrive whole, in order, on the right
//! request; the lane refuses when the socket is full, and once its request
//! is cancelled. (That it waits behind the connection's queue is tested
//! beside the wire, in `transport::wire`.)

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crabtalk_proto::codec::{FrameReader, encode_frame};
use crabtalk_proto::msg::*;
use crabtalk_proto::{Client, ReplyLane, Server, UdsListener};
use futures::stream::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(20), future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A server whose turns write through the lane while it takes them, and
/// through the stream from the first refusal on (as the daemon does).
///
/// `StreamMsg.content` is `N:SIZE`: N chunks of SIZE bytes, each starting
/// with its number, then `StreamEnd`. `probe` sends one chunk, waits until
/// the test says `probe_now`, and reports whether the lane then takes a
/// second one.
#[derive(Default)]
struct LaneServer {
    stats: Arc<Stats>,
}

#[derive(Default)]
struct Stats {
    /// Chunks the lane took.
    through_lane: AtomicUsize,
    /// The first refusal of a `N:SIZE` turn: the chunk's number.
    refused: Mutex<Option<usize>>,
    refusal: Notify,
    /// What the lane said after `probe`'s cancellation: `true` if it took
    /// the chunk.
    probed: Mutex<Option<mpsc::UnboundedSender<bool>>>,
    probe_now: Notify,
}

fn chunk(n: usize, size: usize) -> StreamEvent {
    let mut content = format!("{n}:");
    content.extend(std::iter::repeat_n('x', size.saturating_sub(content.len())));
    StreamChunk { content }.into()
}

fn as_reply(event: StreamEvent) -> ServerMessage {
    ServerMessage::from(server_message::Msg::Stream(event))
}

impl Server for LaneServer {
    fn stream(
        &self,
        request: StreamMsg,
    ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
        self.stream_on(request, None)
    }

    fn stream_on(
        &self,
        request: StreamMsg,
        lane: Option<ReplyLane>,
    ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
        let lane = lane.expect("the transport offers a Stream request its lane");
        let (events, queued) = mpsc::unbounded_channel::<Result<StreamEvent, ErrorMsg>>();
        let this = self.stats.clone();
        if request.content == "probe" {
            let report = this.probed.lock().unwrap().clone();
            let _ = events.send(Ok(chunk(0, 8)));
            tokio::spawn(async move {
                this.probe_now.notified().await;
                let taken = lane.try_send(&mut as_reply(chunk(1, 8)));
                if let Some(report) = report {
                    let _ = report.send(taken);
                }
                drop(events);
            });
            return futures::stream::unfold(queued, |mut queued| async move {
                let event = queued.recv().await?;
                Some((event, queued))
            })
            .boxed();
        }
        let (count, size) = request.content.split_once(':').unwrap();
        let (count, size): (usize, usize) = (count.parse().unwrap(), size.parse().unwrap());
        tokio::spawn(async move {
            let mut fallen_back = false;
            for n in 0..count {
                let event = chunk(n, size);
                if !fallen_back {
                    let mut message = as_reply(event);
                    if lane.try_send(&mut message) {
                        this.through_lane.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    fallen_back = true;
                    *this.refused.lock().unwrap() = Some(n);
                    this.refusal.notify_one();
                    let Some(server_message::Msg::Stream(event)) = message.msg else {
                        panic!("the lane gives back what it was given");
                    };
                    let _ = events.send(Ok(event));
                    continue;
                }
                let _ = events.send(Ok(event));
            }
            let _ = events.send(Ok(StreamEnd::default().into()));
        });
        futures::stream::unfold(queued, |mut queued| async move {
            let event = queued.recv().await?;
            Some((event, queued))
        })
        .boxed()
    }
}

struct Served {
    stats: Arc<Stats>,
    socket: std::path::PathBuf,
    _shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

async fn serve() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run").join("crabtalk.sock");
    let listener = UdsListener::bind(&socket).await.unwrap();
    let server = Arc::new(LaneServer::default());
    let stats = server.stats.clone();
    let shutdown = CancellationToken::new();
    tokio::spawn(listener.serve(server, shutdown.clone()));
    Served {
        stats,
        socket,
        _shutdown: shutdown,
        _dir: dir,
    }
}

fn stream_request(id: u64, content: &str) -> Vec<u8> {
    let request = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
        agent: "crab".into(),
        content: content.into(),
        ..Default::default()
    }))
    .with_request_id(id);
    let mut bytes = Vec::new();
    encode_frame(&request, &mut bytes).unwrap();
    bytes
}

/// The chunk numbers of request `id` until its `StreamEnd`.
async fn read_turn(
    reader: &mut FrameReader<tokio::net::unix::OwnedReadHalf>,
    id: u64,
) -> Vec<usize> {
    let mut numbers = Vec::new();
    loop {
        let reply: ServerMessage = reader.read().await.unwrap();
        assert_eq!(reply.request_id, id, "{reply:?}");
        match reply.msg {
            Some(server_message::Msg::Stream(event)) => match event.event.unwrap() {
                stream_event::Event::Chunk(chunk) => {
                    let (n, _) = chunk.content.split_once(':').unwrap();
                    numbers.push(n.parse().unwrap());
                }
                stream_event::Event::End(_) => return numbers,
                other => panic!("unexpected event {other:?}"),
            },
            other => panic!("unexpected reply {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_turn_goes_all_through_the_lane() {
    let served = serve().await;
    let client = Client::connect_uds(&served.socket).await.unwrap();
    let mut events = client
        .stream(StreamMsg {
            agent: "crab".into(),
            content: "20:40".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut numbers = Vec::new();
    while let Some(event) = within("the turn's events", events.next()).await {
        if let Some(stream_event::Event::Chunk(chunk)) = event.unwrap().event {
            numbers.push(
                chunk
                    .content
                    .split_once(':')
                    .unwrap()
                    .0
                    .parse::<usize>()
                    .unwrap(),
            );
        }
    }
    assert_eq!(numbers, (0..20).collect::<Vec<_>>());
    // Nothing waited ahead of any chunk, and the socket had room for all.
    assert_eq!(served.stats.through_lane.load(Ordering::SeqCst), 20);
    assert_eq!(*served.stats.refused.lock().unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_socket_makes_the_lane_refuse_and_what_it_began_arrives_whole() {
    let served = serve().await;
    let stream = UnixStream::connect(&served.socket).await.unwrap();
    let (read, mut write) = stream.into_split();
    // 64 chunks of 100 kB: far more than the socket's buffers hold while
    // nobody reads.
    write
        .write_all(&stream_request(7, "64:100000"))
        .await
        .unwrap();
    within("the lane to refuse", served.stats.refusal.notified()).await;
    let refused_at = served.stats.refused.lock().unwrap().unwrap();
    assert!(refused_at > 0 && refused_at < 64, "refused at {refused_at}");
    // Every chunk arrives, whole and in order: the lane's and the
    // stream's, and the one the socket took only part of.
    let mut reader = FrameReader::new(read);
    let numbers = within("the whole turn", read_turn(&mut reader, 7)).await;
    assert_eq!(numbers, (0..64).collect::<Vec<_>>());
    assert_eq!(served.stats.through_lane.load(Ordering::SeqCst), refused_at);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_s_lane_takes_nothing_more() {
    let served = serve().await;
    let (report, mut reports) = mpsc::unbounded_channel();
    *served.stats.probed.lock().unwrap() = Some(report);
    let stream = UnixStream::connect(&served.socket).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut reader = FrameReader::new(read);
    write.write_all(&stream_request(1, "probe")).await.unwrap();
    let first: ServerMessage = within("the first chunk", reader.read()).await.unwrap();
    assert_eq!(first.request_id, 1);
    // Cancel request 1, and wait for the answer: nothing is queued for
    // the connection any more, so only the cancellation can stop the lane.
    let cancel = ClientMessage::from(client_message::Msg::Cancel(Cancel { request_id: 1 }))
        .with_request_id(2);
    let mut bytes = Vec::new();
    encode_frame(&cancel, &mut bytes).unwrap();
    write.write_all(&bytes).await.unwrap();
    let answer: ServerMessage = within("the cancellation's answer", reader.read())
        .await
        .unwrap();
    assert_eq!(answer.request_id, 2, "{answer:?}");
    served.stats.probe_now.notify_one();
    let taken = within("the probe's report", reports.recv()).await.unwrap();
    assert!(
        !taken,
        "the lane took a chunk after its request was cancelled"
    );
}
