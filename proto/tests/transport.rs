//! The transports end to end: a small test `Server` behind real Unix and TCP
//! listeners, driven by the real `Client` (and by raw sockets where the test
//! needs to send what a well-behaved client never would).

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crabtalk_proto::ClientError;
use crabtalk_proto::codec::{FrameError, FrameReader, MAX_FRAME_LEN, encode_frame};
use crabtalk_proto::msg::*;
use crabtalk_proto::{BindError, TcpListener, UdsListener};
use crabtalk_proto::{Client, Server};
use futures::stream::{self, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Generous bound for anything a test waits on; never a fixed sleep.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(20), future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// The test server. `StreamMsg.content` is a small script:
/// - `count:N` streams N chunks, then `StreamEnd`;
/// - `gate:NAME` streams one chunk, waits until the test opens gate NAME,
///   then ends;
/// - `fail:N` streams N chunks, then fails with `ErrorMsg{503}`;
/// - `forever` streams one chunk and then nothing, and reports on `dropped`
///   when the server drops the stream.
struct TestServer {
    gates: Mutex<HashMap<String, Arc<Notify>>>,
    dropped: Mutex<Option<mpsc::UnboundedSender<()>>>,
    /// `PublishEventMsg` payloads, to `SubscribeEvents` subscribers.
    events: tokio::sync::broadcast::Sender<AgentEventMsg>,
}

impl Default for TestServer {
    fn default() -> Self {
        Self {
            gates: Mutex::default(),
            dropped: Mutex::default(),
            events: tokio::sync::broadcast::channel(16).0,
        }
    }
}

impl TestServer {
    fn gate(&self, name: &str) -> Arc<Notify> {
        self.gates
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    fn watch_drops(&self) -> mpsc::UnboundedReceiver<()> {
        let (sender, receiver) = mpsc::unbounded_channel();
        *self.dropped.lock().unwrap() = Some(sender);
        receiver
    }
}

/// Reports when dropped.
struct DropSignal(Option<mpsc::UnboundedSender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(sender) = &self.0 {
            let _ = sender.send(());
        }
    }
}

fn chunk(content: impl Into<String>) -> Result<StreamEvent, ErrorMsg> {
    Ok(StreamChunk {
        content: content.into(),
    }
    .into())
}

fn end(agent: &str) -> Result<StreamEvent, ErrorMsg> {
    Ok(StreamEnd {
        agent: agent.into(),
        ..Default::default()
    }
    .into())
}

impl Server for TestServer {
    async fn publish_event(&self, request: PublishEventMsg) -> Result<Pong, ErrorMsg> {
        let _ = self.events.send(AgentEventMsg {
            content: request.payload,
            ..Default::default()
        });
        Ok(Pong::default())
    }

    fn subscribe_events(
        &self,
        _: SubscribeEvents,
    ) -> impl Stream<Item = Result<AgentEventMsg, ErrorMsg>> + Send + 'static {
        // Subscribed now, when the request is dispatched, not when the
        // stream is first polled.
        let receiver = self.events.subscribe();
        stream::unfold(receiver, |mut receiver| async move {
            let event = receiver.recv().await.ok()?;
            Some((Ok(event), receiver))
        })
    }

    async fn list_agents(&self, _: ListAgentsMsg) -> Result<AgentList, ErrorMsg> {
        Ok(AgentList {
            agents: vec![AgentInfo {
                name: "crab".into(),
                ..Default::default()
            }],
        })
    }

    async fn get_agent(&self, request: GetAgentMsg) -> Result<AgentInfo, ErrorMsg> {
        Err(ErrorMsg::not_found(format!(
            "agent {:?} not found",
            request.name
        )))
    }

    fn stream(
        &self,
        request: StreamMsg,
    ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
        let agent = request.agent.clone();
        let script = request.content;
        if let Some(n) = script.strip_prefix("count:") {
            let n: usize = n.parse().unwrap();
            let chunks = (0..n).map(|i| chunk(i.to_string()));
            return stream::iter(chunks)
                .chain(stream::iter([end(&agent)]))
                .boxed();
        }
        if let Some(n) = script.strip_prefix("fail:") {
            let n: usize = n.parse().unwrap();
            let chunks = (0..n).map(|i| chunk(i.to_string()));
            let failure = Err(ErrorMsg::unavailable("the scripted turn failed"));
            return stream::iter(chunks).chain(stream::iter([failure])).boxed();
        }
        if let Some(name) = script.strip_prefix("gate:") {
            let gate = self.gate(name);
            let name = name.to_owned();
            let rest = stream::once(async move {
                gate.notified().await;
                end(&agent)
            });
            return stream::iter([chunk(name)]).chain(rest).boxed();
        }
        let signal = DropSignal(self.dropped.lock().unwrap().clone());
        stream::iter([chunk("first")])
            .chain(stream::pending())
            .map(move |event| {
                let _ = &signal;
                event
            })
            .boxed()
    }
}

/// The transports the shared test bodies run over.
#[derive(Clone, Copy, Debug)]
enum Transport {
    Uds,
    Tcp,
}

/// Where a running test server listens.
enum Endpoint {
    Uds(PathBuf),
    Tcp(String),
}

type RawRead = Box<dyn AsyncRead + Unpin + Send>;
type RawWrite = Box<dyn AsyncWrite + Unpin + Send>;

struct Running {
    server: Arc<TestServer>,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
    endpoint: Endpoint,
}

impl Running {
    /// The socket of a server on a Unix socket.
    fn socket(&self) -> &std::path::Path {
        match &self.endpoint {
            Endpoint::Uds(path) => path,
            Endpoint::Tcp(addr) => panic!("served over TCP at {addr}, not a socket"),
        }
    }

    /// A connection that bypasses the `Client`, for sending what a
    /// well-behaved client never would (or for vanishing abruptly).
    async fn raw_connection(&self) -> (RawRead, RawWrite) {
        match &self.endpoint {
            Endpoint::Uds(path) => {
                let (read, write) = tokio::net::UnixStream::connect(path)
                    .await
                    .unwrap()
                    .into_split();
                (Box::new(read), Box::new(write))
            }
            Endpoint::Tcp(addr) => {
                let (read, write) = tokio::net::TcpStream::connect(addr.as_str())
                    .await
                    .unwrap()
                    .into_split();
                (Box::new(read), Box::new(write))
            }
        }
    }

    /// Like [`Running::raw_connection`], already admitted: over TCP it has
    /// said `Hello` with the token and read the answer.
    async fn admitted_raw_connection(&self) -> (FrameReader<RawRead>, RawWrite) {
        let (read, mut write) = self.raw_connection().await;
        let mut reader = FrameReader::new(read);
        let Endpoint::Tcp(_) = &self.endpoint else {
            return (reader, write);
        };
        let hello = ClientMessage::from(client_message::Msg::Hello(Hello {
            token: TOKEN.into(),
        }));
        let mut frame = Vec::new();
        encode_frame(&hello, &mut frame).unwrap();
        write.write_all(&frame).await.unwrap();
        let pong: ServerMessage = within("the answer to Hello", reader.read()).await.unwrap();
        assert!(
            matches!(pong.msg, Some(server_message::Msg::Pong(_))),
            "{pong:?}"
        );
        (reader, write)
    }

    /// Checks that nothing accepts connections at the endpoint any more.
    async fn assert_nothing_listens(&self) {
        match &self.endpoint {
            Endpoint::Uds(path) => {
                assert!(!path.exists(), "the socket file is removed");
            }
            Endpoint::Tcp(addr) => {
                let refused = tokio::net::TcpStream::connect(addr.as_str())
                    .await
                    .expect_err("the TCP listener is closed");
                assert_eq!(
                    refused.kind(),
                    std::io::ErrorKind::ConnectionRefused,
                    "{refused}"
                );
                let err = Client::connect_tcp(addr, Some(TOKEN))
                    .await
                    .err()
                    .expect("the client cannot connect either");
                assert!(matches!(err, ClientError::Connect { .. }), "{err}");
            }
        }
        // The client tells "nothing listens" apart from other failures the
        // same way for both.
        let err = match &self.endpoint {
            Endpoint::Uds(path) => Client::connect_uds(path).await.err(),
            Endpoint::Tcp(addr) => Client::connect_tcp(addr, Some(TOKEN)).await.err(),
        }
        .expect("nothing listens any more");
        assert!(err.is_absent(), "{err}");
    }
}

/// `run/crabtalk.sock` under `dir`, where the daemon puts its socket.
fn socket_in(dir: &std::path::Path) -> PathBuf {
    dir.join("run").join("crabtalk.sock")
}

/// Starts the test server on `transport` and connects a client to it.
async fn serve(transport: Transport) -> (Running, Client) {
    match transport {
        Transport::Uds => serve_uds().await,
        Transport::Tcp => {
            let (running, addr) = serve_tcp(TOKEN, "127.0.0.1:0").await;
            let client = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
            (running, client)
        }
    }
}

async fn serve_uds() -> (Running, Client) {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(dir.path());
    let listener = UdsListener::bind(&socket).await.unwrap();
    let server = Arc::new(TestServer::default());
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(listener.serve(server.clone(), shutdown.clone()));
    let client = Client::connect_uds(&socket).await.unwrap();
    (
        Running {
            server,
            shutdown,
            served,
            _dir: dir,
            endpoint: Endpoint::Uds(socket),
        },
        client,
    )
}

/// The token of the test TCP listeners.
const TOKEN: &str = "s3cret";

async fn serve_tcp(token: &str, addr: &str) -> (Running, String) {
    let listener = TcpListener::bind(addr.parse().unwrap(), token)
        .await
        .unwrap();
    serve_tcp_listener(listener)
}

fn serve_tcp_listener(listener: TcpListener) -> (Running, String) {
    let dir = tempfile::tempdir().unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = Arc::new(TestServer::default());
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(listener.serve(server.clone(), shutdown.clone()));
    let addr = format!("127.0.0.1:{port}");
    (
        Running {
            server,
            shutdown,
            served,
            _dir: dir,
            endpoint: Endpoint::Tcp(addr.clone()),
        },
        addr,
    )
}

/// Turns `async fn name(transport: Transport)` test bodies into one test per
/// transport: `name::uds` and `name::tcp`.
macro_rules! on_every_transport {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test]
            async fn uds() {
                super::$name(Transport::Uds).await
            }

            #[tokio::test]
            async fn tcp() {
                super::$name(Transport::Tcp).await
            }
        }
    )*};
}

on_every_transport! {
    two_streams_and_a_ping_share_one_connection,
    client_disconnect_mid_stream_frees_the_server_task,
    shutdown_closes_listeners_and_connections,
    a_stream_ending_on_an_error_frees_its_slot,
}

async fn stream_texts(client: &Client, script: &str) -> (Vec<String>, bool) {
    let request = StreamMsg {
        agent: "crab".into(),
        content: script.into(),
        ..Default::default()
    };
    let mut events = client.stream(request).await.unwrap();
    let mut texts = Vec::new();
    let mut ended = false;
    while let Some(event) = events.next().await {
        match event.unwrap().event.unwrap() {
            stream_event::Event::Chunk(chunk) => texts.push(chunk.content),
            stream_event::Event::End(_) => ended = true,
            other => panic!("unexpected event {other:?}"),
        }
    }
    (texts, ended)
}

#[tokio::test]
async fn ping_and_unary_calls_over_uds() {
    let (running, client) = serve_uds().await;
    let pong = within("ping", client.ping()).await.unwrap();
    assert_eq!(pong.protocol, crabtalk_proto::PROTOCOL);
    let agents = within("list_agents", client.list_agents(ListAgentsMsg {}))
        .await
        .unwrap();
    assert_eq!(agents.agents[0].name, "crab");
    let missing = client
        .get_agent(GetAgentMsg {
            name: "nobody".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Some(404), "{missing}");
    // Operations the test server does not provide answer 501.
    let err = client.get_stats(GetStats {}).await.unwrap_err();
    assert_eq!(err.code(), Some(501), "{err}");
    drop(running);
}

#[cfg(unix)]
#[tokio::test]
async fn the_socket_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (running, _client) = serve_uds().await;
    let mode = std::fs::metadata(running.socket())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn ping_over_tcp() {
    let (_running, addr) = serve_tcp(TOKEN, "127.0.0.1:0").await;
    let client = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
    within("ping", client.ping()).await.unwrap();
}

#[tokio::test]
async fn a_long_stream_arrives_whole_and_ends_at_stream_end() {
    let (running, client) = serve_uds().await;
    let (texts, ended) = within("uds stream", stream_texts(&client, "count:10000")).await;
    assert!(ended);
    assert_eq!(texts.len(), 10_000);
    assert!(
        texts
            .iter()
            .enumerate()
            .all(|(i, text)| *text == i.to_string())
    );

    let (_tcp, addr) = serve_tcp(TOKEN, "127.0.0.1:0").await;
    let tcp = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
    let (texts, ended) = within("tcp stream", stream_texts(&tcp, "count:10000")).await;
    assert!(ended);
    assert_eq!(texts.len(), 10_000);
    drop(running);
}

async fn two_streams_and_a_ping_share_one_connection(transport: Transport) {
    let (running, client) = serve(transport).await;
    let open = |script: &str| {
        client.stream(StreamMsg {
            agent: "crab".into(),
            content: script.into(),
            ..Default::default()
        })
    };
    let mut a = open("gate:a").await.unwrap();
    let mut b = open("gate:b").await.unwrap();
    assert_ne!(a.request_id(), b.request_id());

    // Both streams are open and waiting on their gates; a ping still gets
    // through, and each stream sees only its own events.
    let first_a = within("a's first event", a.next()).await.unwrap().unwrap();
    let first_b = within("b's first event", b.next()).await.unwrap().unwrap();
    within("ping while streams are open", client.ping())
        .await
        .unwrap();
    let text = |event: StreamEvent| match event.event {
        Some(stream_event::Event::Chunk(chunk)) => chunk.content,
        other => panic!("{other:?}"),
    };
    assert_eq!(text(first_a), "a");
    assert_eq!(text(first_b), "b");

    // Open b's gate first: b ends while a is still open.
    running.server.gate("b").notify_one();
    let end_b = within("b's end", b.next()).await.unwrap().unwrap();
    assert!(end_b.is_end());
    assert!(
        b.next().await.is_none(),
        "a finished stream yields nothing more"
    );
    running.server.gate("a").notify_one();
    let end_a = within("a's end", a.next()).await.unwrap().unwrap();
    assert!(end_a.is_end());
}

async fn client_disconnect_mid_stream_frees_the_server_task(transport: Transport) {
    let (running, _client) = serve(transport).await;
    let mut dropped = running.server.watch_drops();
    // A raw connection that starts a stream and then simply goes away,
    // without Cancel.
    let (mut reader, mut write) = running.admitted_raw_connection().await;
    let request = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
        agent: "crab".into(),
        content: "forever".into(),
        ..Default::default()
    }))
    .with_request_id(1);
    let mut frame = Vec::new();
    encode_frame(&request, &mut frame).unwrap();
    write.write_all(&frame).await.unwrap();
    let first: ServerMessage = within("first event", reader.read()).await.unwrap();
    assert_eq!(first.request_id, 1);
    drop(reader);
    drop(write);
    within("the server to drop the stream", dropped.recv())
        .await
        .unwrap();
}

#[tokio::test]
async fn dropping_a_stream_cancels_it_and_the_connection_stays_usable() {
    let (running, client) = serve_uds().await;
    let mut dropped = running.server.watch_drops();
    let mut events = client
        .stream(StreamMsg {
            agent: "crab".into(),
            content: "forever".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    within("first event", events.next()).await.unwrap().unwrap();
    drop(events);
    within("the server to drop the cancelled stream", dropped.recv())
        .await
        .unwrap();
    within("ping after cancel", client.ping()).await.unwrap();
}

async fn shutdown_closes_listeners_and_connections(transport: Transport) {
    let (mut running, client) = serve(transport).await;
    let mut events = client
        .stream(StreamMsg {
            agent: "crab".into(),
            content: "forever".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    within("first event", events.next()).await.unwrap().unwrap();

    running.shutdown.cancel();
    within("serve to return", &mut running.served)
        .await
        .unwrap();
    let err = within("the open stream to end", events.next())
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err}");
    let err = within("a request after shutdown", client.ping())
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err}");
    running.assert_nothing_listens().await;
}

async fn a_stream_ending_on_an_error_frees_its_slot(transport: Transport) {
    let (_running, client) = serve(transport).await;
    let mut events = client
        .stream(StreamMsg {
            agent: "crab".into(),
            content: "fail:3".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(client.requests_in_flight(), 1);
    for i in 0..3 {
        let event = within("a chunk", events.next()).await.unwrap().unwrap();
        assert!(
            matches!(event.event, Some(stream_event::Event::Chunk(ref chunk)) if chunk.content == i.to_string()),
            "{event:?}"
        );
    }
    let err = within("the error frame", events.next())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), Some(503), "{err}");
    // The error is the stream's terminal: it yields nothing more, and its
    // slot is gone before the stream itself is dropped.
    assert!(events.next().await.is_none());
    assert_eq!(client.requests_in_flight(), 0);
    within("ping after the failed stream", client.ping())
        .await
        .unwrap();
    let (texts, ended) = within(
        "a stream after the failed one",
        stream_texts(&client, "count:2"),
    )
    .await;
    assert_eq!((texts.len(), ended), (2, true));
    assert_eq!(client.requests_in_flight(), 0);
}

#[tokio::test]
async fn shutdown_lets_a_reply_in_flight_finish() {
    let (running, client) = serve_uds().await;
    let mut events = client
        .stream(StreamMsg {
            agent: "crab".into(),
            content: "gate:late".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    within("first event", events.next()).await.unwrap().unwrap();
    running.shutdown.cancel();
    // The server is shutting down; the stream in flight may still finish.
    running.server.gate("late").notify_one();
    let end = within("the end of the stream", events.next())
        .await
        .unwrap()
        .unwrap();
    assert!(end.is_end(), "{end:?}");
    within("serve to return", running.served).await.unwrap();
}

#[tokio::test]
async fn every_listener_requires_a_token_loopback_included() {
    for addr in ["0.0.0.0:0", "127.0.0.1:0", "[::1]:0"] {
        for token in ["", "  ", "\t\n"] {
            let err = TcpListener::bind(addr.parse().unwrap(), token)
                .await
                .err()
                .unwrap_or_else(|| panic!("{addr} bound with {token:?}"));
            assert!(matches!(err, BindError::TokenRequired { .. }), "{err}");
            assert!(err.to_string().contains("[transport] token"), "{err}");
        }
    }

    let (_running, addr) = serve_tcp(TOKEN, "127.0.0.1:0").await;
    // No Hello: the first request is refused with 401.
    let client = Client::connect_tcp(&addr, None).await.unwrap();
    let err = within("refusal", client.ping()).await.unwrap_err();
    assert_eq!(err.code(), Some(401), "{err}");
    // A wrong token is refused at connect, and says where the right one is.
    let err = Client::connect_tcp(&addr, Some("guess"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Some(401), "{err}");
    assert!(err.to_string().contains("run/token"), "{err}");
    // The right token works.
    let client = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
    within("ping with token", client.ping()).await.unwrap();
}

#[tokio::test]
async fn a_non_loopback_listener_with_a_token_admits_only_that_token() {
    let (_running, addr) = serve_tcp(TOKEN, "0.0.0.0:0").await;
    let err = Client::connect_tcp(&addr, Some("guess"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Some(401), "{err}");
    let client = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
    within("ping with token", client.ping()).await.unwrap();
}

#[tokio::test]
async fn a_client_that_never_says_hello_is_disconnected_after_the_handshake_timeout() {
    let timeout = Duration::from_millis(300);
    let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap(), TOKEN)
        .await
        .unwrap()
        .with_handshake_timeout(timeout);
    let (running, addr) = serve_tcp_listener(listener);

    // Silent, and one that sends half a frame: both are answered 401 and
    // closed once the timeout passes.
    let (silent_read, _silent_write) = running.raw_connection().await;
    let (partial_read, mut partial_write) = running.raw_connection().await;
    partial_write.write_all(&[0, 0, 0, 9, 1]).await.unwrap();
    // Admitted in time: not affected by the timeout.
    let admitted = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();

    let started = tokio::time::Instant::now();
    for read in [silent_read, partial_read] {
        let mut reader = FrameReader::new(read);
        let reply: ServerMessage = within("the timeout answer", reader.read()).await.unwrap();
        assert!(
            matches!(
                reply.msg,
                Some(server_message::Msg::Error(ErrorMsg { code: 401, .. }))
            ),
            "{reply:?}"
        );
        let after = within("the close", reader.read::<ServerMessage>()).await;
        assert!(matches!(after, Err(FrameError::Closed)), "{after:?}");
    }
    assert!(started.elapsed() + Duration::from_millis(50) >= timeout);

    tokio::time::sleep(timeout).await;
    within("ping on the admitted connection", admitted.ping())
        .await
        .unwrap();
}

/// A peer that answers the first request with a chunk, an error, and then
/// (misbehaving) another chunk for the same request id.
#[tokio::test]
async fn a_client_stream_stops_at_an_error_even_if_more_frames_follow() {
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (client_read, client_write) = tokio::io::split(client_side);
    let client = Client::over(client_read, client_write);
    let (peer_read, mut peer_write) = tokio::io::split(server_side);
    let peer = tokio::spawn(async move {
        let mut requests = FrameReader::new(peer_read);
        let stream: ClientMessage = requests.read().await.unwrap();
        let id = stream.request_id;
        let mut frames = Vec::new();
        for reply in [
            ServerMessage::from(StreamEvent::from(StreamChunk {
                content: "a".into(),
            })),
            ErrorMsg::internal("boom").into(),
            ServerMessage::from(StreamEvent::from(StreamChunk {
                content: "late".into(),
            })),
        ] {
            encode_frame(&reply.answering(id), &mut frames).unwrap();
        }
        peer_write.write_all(&frames).await.unwrap();
        // Then answer one ping normally.
        let ping: ClientMessage = requests.read().await.unwrap();
        let pong = ServerMessage::from(server_message::Msg::Pong(Pong::default()));
        let mut frame = Vec::new();
        encode_frame(&pong.answering(ping.request_id), &mut frame).unwrap();
        peer_write.write_all(&frame).await.unwrap();
        (requests, peer_write)
    });

    let mut events = client.stream(StreamMsg::default()).await.unwrap();
    let first = within("the chunk", events.next()).await.unwrap().unwrap();
    assert!(!first.is_end());
    let err = within("the error", events.next())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), Some(500), "{err}");
    assert!(
        events.next().await.is_none(),
        "nothing is read after the error"
    );
    assert_eq!(client.requests_in_flight(), 0);
    within("ping after the error", client.ping()).await.unwrap();
    assert_eq!(client.requests_in_flight(), 0);
    let _connection = peer.await.unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn binding_makes_an_existing_run_dir_private_and_the_socket_0600() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(dir.path());
    let run_dir = socket.parent().unwrap();
    std::fs::create_dir(run_dir).unwrap();
    std::fs::set_permissions(run_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(run_dir), 0o755);

    let listener = UdsListener::bind(&socket).await.unwrap();
    assert_eq!(mode(run_dir), 0o700);
    assert_eq!(mode(&socket), 0o600);
    drop(listener);

    // A run dir the bind creates is private too.
    let fresh = socket_in(&dir.path().join("fresh"));
    let listener = UdsListener::bind(&fresh).await.unwrap();
    assert_eq!(mode(fresh.parent().unwrap()), 0o700);
    assert_eq!(mode(&fresh), 0o600);
    drop(listener);
}

#[cfg(unix)]
#[tokio::test]
async fn binding_in_a_shared_sticky_folder_leaves_its_mode_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let listener = UdsListener::bind(shared.join("x.sock")).await.unwrap();
    let mode = std::fs::metadata(&shared).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o1777);
    drop(listener);
}

#[cfg(unix)]
#[tokio::test]
async fn a_second_listener_refuses_a_live_socket_and_replaces_a_stale_one() {
    let (running, _client) = serve_uds().await;
    let path = running.socket();
    let err = UdsListener::bind(&path).await.err().unwrap();
    assert!(matches!(err, BindError::AlreadyRunning { .. }), "{err}");

    // A socket file nobody listens on is stale and gets replaced.
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let listener = UdsListener::bind(&stale).await.unwrap();
    drop(listener);
    assert!(!stale.exists());

    // Something that is not a socket is never removed.
    let file = dir.path().join("file.sock");
    std::fs::write(&file, b"keep me").unwrap();
    let err = UdsListener::bind(&file).await.err().unwrap();
    assert!(matches!(err, BindError::NotASocket { .. }), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
}

#[cfg(unix)]
#[tokio::test]
async fn an_unknown_variant_on_the_wire_answers_400_with_its_request_id() {
    let (running, _client) = serve_uds().await;
    let stream = tokio::net::UnixStream::connect(running.socket())
        .await
        .unwrap();
    let (read, mut write) = stream.into_split();
    // Field 99 (unknown to this server), then request_id = 42.
    let mut payload = vec![0x9a, 0x06, 0];
    payload.extend_from_slice(&[0xc0, 0x0c, 42]); // field 200, varint: 42
    let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&payload);
    write.write_all(&frame).await.unwrap();
    let reply: ServerMessage = within("reply", FrameReader::new(read).read())
        .await
        .unwrap();
    assert_eq!(reply.request_id, 42);
    assert!(matches!(
        reply.msg,
        Some(server_message::Msg::Error(ErrorMsg { code: 400, .. }))
    ));
}

#[cfg(unix)]
#[tokio::test]
async fn an_oversize_frame_is_answered_413_and_the_connection_closed() {
    let (running, _client) = serve_uds().await;
    let stream = tokio::net::UnixStream::connect(running.socket())
        .await
        .unwrap();
    let (read, mut write) = stream.into_split();
    write
        .write_all(&((MAX_FRAME_LEN + 1) as u32).to_be_bytes())
        .await
        .unwrap();
    let mut reader = FrameReader::new(read);
    let reply: ServerMessage = within("reply", reader.read()).await.unwrap();
    assert!(matches!(
        reply.msg,
        Some(server_message::Msg::Error(ErrorMsg { code: 413, .. }))
    ));
    let after = within("close", reader.read::<ServerMessage>()).await;
    assert!(after.is_err(), "the connection is closed after 413");
}

#[tokio::test]
async fn closed_resolves_when_the_server_goes_away() {
    let (running, client) = serve_uds().await;
    assert!(!client.is_closed());
    running.shutdown.cancel();
    let reason = within("the connection to close", client.closed()).await;
    assert!(!reason.is_empty());
    assert!(client.is_closed());
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err}");
}

#[tokio::test]
async fn a_request_over_the_frame_limit_fails_locally() {
    let (_running, client) = serve_uds().await;
    let huge = "x".repeat(MAX_FRAME_LEN + 1);
    let err = client
        .send(SendMsg {
            agent: "crab".into(),
            content: huge,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::TooLarge { .. }), "{err}");
    within("ping after a refused request", client.ping())
        .await
        .unwrap();
    let mut encoded = Vec::new();
    assert!(encode_frame(&Ping::default(), &mut encoded).is_ok());
}

// Multi-threaded: with one thread, spawned tasks run in order anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_on_one_connection_start_in_the_order_they_arrive() {
    let (_running, client) = serve_uds().await;
    for round in 0..500 {
        // Not waiting between the two: the subscription must already be in
        // place when the publish runs.
        let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
        client
            .publish_event(PublishEventMsg {
                source: "test".into(),
                payload: round.to_string(),
            })
            .await
            .unwrap();
        let event = within("the published event", events.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(event.content, round.to_string());
    }
}
