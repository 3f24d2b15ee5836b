//! What a peer can make a listener spend: before it is admitted (frame
//! cap, the bounded set of strangers, throttled attempts) and after (the
//! in-flight cap, back-pressure on a peer that does not read, a client
//! stream whose consumer does not read). Real listeners, real sockets.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crabtalk_proto::codec::{FrameError, FrameReader, MAX_FRAME_LEN, encode_frame};
use crabtalk_proto::msg::*;
use crabtalk_proto::{Client, Server};
use crabtalk_proto::{ClientError, STREAM_BUFFER_BYTES};
use crabtalk_proto::{
    MAX_HELLO_FRAME, MAX_IN_FLIGHT, MAX_UNADMITTED, OUTBOX_BYTES, TcpListener, UdsListener,
};
use futures::stream::{self, Stream, StreamExt};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "the-right-token";

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(30), future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A server whose streams are `flood:N` (chunks of N bytes, forever,
/// counting what it produced) and `forever` (one chunk, then nothing).
#[derive(Default)]
struct Flood {
    produced: Arc<AtomicUsize>,
    dropped: std::sync::Mutex<Option<mpsc::UnboundedSender<()>>>,
}

struct DropSignal(Option<mpsc::UnboundedSender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(sender) = &self.0 {
            let _ = sender.send(());
        }
    }
}

impl Server for Flood {
    fn stream(
        &self,
        request: StreamMsg,
    ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
        let signal = DropSignal(self.dropped.lock().unwrap().clone());
        if let Some(size) = request.content.strip_prefix("flood:") {
            let size: usize = size.parse().unwrap();
            let produced = self.produced.clone();
            return stream::repeat_with(move || {
                let _ = &signal;
                produced.fetch_add(size, Ordering::SeqCst);
                Ok(StreamChunk {
                    content: "x".repeat(size),
                }
                .into())
            })
            .boxed();
        }
        stream::iter([Ok(StreamChunk {
            content: "first".into(),
        }
        .into())])
        .chain(stream::pending())
        .map(move |event| {
            let _ = &signal;
            event
        })
        .boxed()
    }
}

impl Flood {
    fn watch_drops(&self) -> mpsc::UnboundedReceiver<()> {
        let (sender, receiver) = mpsc::unbounded_channel();
        *self.dropped.lock().unwrap() = Some(sender);
        receiver
    }
}

struct Served {
    server: Arc<Flood>,
    addr: String,
    _stop: tokio_util::sync::DropGuard,
}

async fn serve(listener: TcpListener) -> Served {
    let addr = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
    let server = Arc::new(Flood::default());
    let stop = CancellationToken::new();
    tokio::spawn(listener.serve(server.clone(), stop.clone()));
    Served {
        server,
        addr,
        _stop: stop.drop_guard(),
    }
}

async fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0".parse().unwrap(), TOKEN)
        .await
        .unwrap()
}

fn frame(message: &ClientMessage) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_frame(message, &mut bytes).unwrap();
    bytes
}

fn hello(token: &str) -> ClientMessage {
    ClientMessage::from(client_message::Msg::Hello(Hello {
        token: token.into(),
    }))
    .with_request_id(1)
}

/// Reads the one answer a refused connection gets, and checks that the
/// connection is closed after it.
async fn refusal(stream: TcpStream) -> ErrorMsg {
    let mut reader = FrameReader::new(stream);
    let reply: ServerMessage = within("the refusal", reader.read()).await.unwrap();
    let after = within("the close", reader.read::<ServerMessage>()).await;
    assert!(
        matches!(after, Err(FrameError::Closed) | Err(FrameError::Io(_))),
        "{after:?}"
    );
    match reply.msg {
        Some(server_message::Msg::Error(error)) => error,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn before_hello_a_large_frame_is_refused_on_its_header_alone() {
    let served = serve(listener().await).await;
    // The 16 MiB frame of the report, announced and never sent.
    let mut stream = TcpStream::connect(&served.addr).await.unwrap();
    stream
        .write_all(&((MAX_FRAME_LEN - 1) as u32).to_be_bytes())
        .await
        .unwrap();
    let error = refusal(stream).await;
    assert_eq!(error.code, 413, "{}", error.message);
    assert!(
        error
            .message
            .contains(&format!("{MAX_HELLO_FRAME}-byte limit before Hello")),
        "{}",
        error.message
    );
    // Just over the cap, too.
    let mut stream = TcpStream::connect(&served.addr).await.unwrap();
    stream
        .write_all(&((MAX_HELLO_FRAME + 1) as u32).to_be_bytes())
        .await
        .unwrap();
    assert_eq!(refusal(stream).await.code, 413);
    // After Hello, the full limit applies again.
    let client = Client::connect_tcp(&served.addr, Some(TOKEN))
        .await
        .unwrap();
    let big = "x".repeat(1024 * 1024);
    let err = client
        .get_agent(GetAgentMsg { name: big })
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Some(501),
        "a large frame after Hello is read: {err}"
    );
}

#[tokio::test]
async fn strangers_are_bounded_and_the_extra_one_is_told_to_come_back() {
    let served = serve(listener().await).await;
    let mut strangers = Vec::new();
    for _ in 0..MAX_UNADMITTED {
        let mut stream = TcpStream::connect(&served.addr).await.unwrap();
        // Half a header each: never a whole frame.
        stream.write_all(&[0, 0]).await.unwrap();
        strangers.push(stream);
    }
    // They are all waiting (the server has read their bytes or will):
    // the next one is refused at once with 503.
    let error = within("the 503", async {
        loop {
            let stream = TcpStream::connect(&served.addr).await.unwrap();
            let error = refusal(stream).await;
            if error.code == 503 {
                return error;
            }
        }
    })
    .await;
    assert!(
        error.message.contains("waiting to say Hello"),
        "{}",
        error.message
    );
    // When strangers leave, a client with the token gets in again.
    strangers.truncate(MAX_UNADMITTED - 4);
    let client = within("a place for an honest client", async {
        loop {
            // Refused ones are told 503 before any request id is known,
            // so the client sees its connection close.
            if let Ok(client) = Client::connect_tcp(&served.addr, Some(TOKEN)).await {
                return client;
            }
        }
    })
    .await;
    within("ping", client.ping()).await.unwrap();
}

#[tokio::test]
async fn each_failed_attempt_makes_the_next_one_from_that_address_wait_longer() {
    let first = Duration::from_millis(60);
    let listener = listener()
        .await
        .with_retry_delays(first, Duration::from_secs(2));
    let served = serve(listener).await;
    let mut waits = Vec::new();
    for _ in 0..5 {
        let asked = tokio::time::Instant::now();
        let err = Client::connect_tcp(&served.addr, Some("guess"))
            .await
            .err()
            .unwrap();
        assert_eq!(err.code(), Some(401), "{err}");
        waits.push(asked.elapsed());
    }
    // Lower bounds only: a slow machine makes every answer later, never
    // earlier. The listener counts from the moment it refused the attempt
    // before, a little before this client saw that refusal and asked
    // again: the way back is allowed for.
    for (n, wait) in waits.iter().enumerate().skip(1) {
        let owed = first * (1 << (n - 1)) - Duration::from_millis(10);
        assert!(
            *wait >= owed,
            "attempt {n} answered after {wait:?}, owed {owed:?}"
        );
    }
    // Many attempts at once are judged one at a time.
    let started = tokio::time::Instant::now();
    let attempts: Vec<_> = (0..3)
        .map(|_| {
            let addr = served.addr.clone();
            tokio::spawn(async move { Client::connect_tcp(&addr, Some("guess")).await.err() })
        })
        .collect();
    for attempt in attempts {
        assert_eq!(attempt.await.unwrap().unwrap().code(), Some(401));
    }
    // After 5, 6 and 7 failures: 16, 32 and (capped) 33 times the first
    // pause.
    let owed = first * 16 + first * 32 + Duration::from_secs(2) - Duration::from_millis(10);
    assert!(started.elapsed() >= owed, "{:?}", started.elapsed());
    // The right token still gets in, after the pause it is owed.
    let client = within(
        "the right token",
        Client::connect_tcp(&served.addr, Some(TOKEN)),
    )
    .await
    .unwrap();
    within("ping", client.ping()).await.unwrap();
}

#[tokio::test]
async fn past_the_in_flight_limit_requests_are_answered_429() {
    let served = serve(listener().await).await;
    let client = Client::connect_tcp(&served.addr, Some(TOKEN))
        .await
        .unwrap();
    let mut open = Vec::new();
    for _ in 0..MAX_IN_FLIGHT {
        let mut stream = client
            .stream(StreamMsg {
                content: "forever".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        within("the first chunk", stream.next())
            .await
            .unwrap()
            .unwrap();
        open.push(stream);
    }
    let err = within("the refusal", client.ping()).await.unwrap_err();
    assert_eq!(err.code(), Some(429), "{err}");
    open.pop();
    within("a ping once a request ended", async {
        loop {
            match client.ping().await {
                Ok(_) => return,
                Err(err) => assert_eq!(err.code(), Some(429), "{err}"),
            }
        }
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_peer_that_does_not_read_stops_its_stream_without_growing_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run").join("s.sock");
    let listener = UdsListener::bind(&socket).await.unwrap();
    let server = Arc::new(Flood::default());
    let stop = CancellationToken::new();
    tokio::spawn(listener.serve(server.clone(), stop.clone()));
    let _stop = stop.drop_guard();

    // A raw peer starts a flood of 4 KiB chunks and never reads.
    let mut peer = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let request = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
        content: "flood:4096".into(),
        ..Default::default()
    }))
    .with_request_id(7);
    peer.write_all(&frame(&request)).await.unwrap();
    // The producer stops once the socket and the outbox are full.
    let settled = within("the flood to stop", async {
        let mut last = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = server.produced.load(Ordering::SeqCst);
            if now > 0 && now == last {
                return now;
            }
            last = now;
        }
    })
    .await;
    let kernel_buffers = 4 * 1024 * 1024;
    assert!(
        settled <= OUTBOX_BYTES + kernel_buffers,
        "{settled} bytes produced for a peer that reads nothing"
    );
    // Another client on the same listener is served meanwhile.
    let other = Client::connect_uds(&socket).await.unwrap();
    within("ping beside the stalled peer", other.ping())
        .await
        .unwrap();
    // Reading resumes the stream.
    let mut reader = FrameReader::new(&mut peer);
    let reply: ServerMessage = within("a frame", reader.read()).await.unwrap();
    assert_eq!(reply.request_id, 7);
}

#[tokio::test]
async fn a_client_stream_nobody_reads_is_ended_and_the_server_told() {
    let served = serve(listener().await).await;
    let mut dropped = served.server.watch_drops();
    let client = Client::connect_tcp(&served.addr, Some(TOKEN))
        .await
        .unwrap();
    let mut stream = client
        .stream(StreamMsg {
            content: "flood:16384".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // Nobody reads: the client's buffer fills, the client cancels.
    within("the server to drop the stream", dropped.recv())
        .await
        .unwrap();
    let mut received = 0;
    let err = loop {
        match within("the buffered chunks", stream.next()).await {
            Some(Ok(_)) => received += 16384,
            Some(Err(err)) => break err,
            None => panic!("the stream ended without saying why"),
        }
    };
    assert!(matches!(err, ClientError::Lagged { .. }), "{err}");
    assert!(err.to_string().contains("not read"), "{err}");
    assert!(received <= STREAM_BUFFER_BYTES, "{received}");
    assert!(stream.next().await.is_none());
    assert_eq!(client.requests_in_flight(), 0);
    within("ping after", client.ping()).await.unwrap();
}

/// One connection that never says a right `Hello`: `bytes` are sent in
/// pieces, then the write side is closed. What comes back is at most one
/// answer (401 or 413), then the close.
async fn unadmitted_session(addr: &str, bytes: &[u8], piece: usize) -> Vec<ServerMessage> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let writing = async {
        for chunk in bytes.chunks(piece.max(1)) {
            if write.write_all(chunk).await.is_err() {
                break;
            }
        }
        let _ = write.shutdown().await;
    };
    let reading = async {
        let mut raw = Vec::new();
        let _ = read.read_to_end(&mut raw).await;
        raw
    };
    let (_, raw) = tokio::join!(writing, reading);
    let mut reader = FrameReader::new(raw.as_slice());
    let mut replies = Vec::new();
    while let Ok(reply) = reader.read::<ServerMessage>().await {
        replies.push(reply);
    }
    replies
}

/// Bytes a stranger might send: garbage, huge headers, wrong tokens, other
/// requests, all mixed.
fn stranger_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        (0u32..=u32::MAX).prop_map(|len| len.to_be_bytes().to_vec()),
        ".{0,40}".prop_map(|token| frame(&hello(&token))),
        Just(frame(&ClientMessage::from(client_message::Msg::Ping(
            Ping::default()
        )))),
        (0usize..3 * MAX_HELLO_FRAME).prop_map(|n| {
            let mut bytes = (n as u32).to_be_bytes().to_vec();
            bytes.extend(std::iter::repeat_n(0x0a, n));
            bytes
        }),
    ];
    prop::collection::vec(piece, 1..4).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_bytes_from_a_stranger_get_it_admitted_or_break_the_listener(
        sessions in prop::collection::vec((stranger_bytes(), 1usize..512), 1..6),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = listener()
                .await
                .with_retry_delays(Duration::ZERO, Duration::ZERO)
                .with_handshake_timeout(Duration::from_millis(500));
            let served = serve(listener).await;
            for (bytes, piece) in &sessions {
                let replies = unadmitted_session(&served.addr, bytes, *piece).await;
                assert!(replies.len() <= 1, "{replies:?}");
                for reply in replies {
                    let code = match reply.msg {
                        Some(server_message::Msg::Error(error)) => error.code,
                        other => panic!("a stranger got {other:?}"),
                    };
                    assert!(code == 401 || code == 413, "{code}");
                }
            }
            let client = Client::connect_tcp(&served.addr, Some(TOKEN)).await.unwrap();
            within("ping after the strangers", client.ping()).await.unwrap();
        });
    }
}
