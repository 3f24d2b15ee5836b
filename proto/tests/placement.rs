//! A listener with a `Placement` serves each accepted connection on the
//! runtime it names (RFC 0049): every request of that connection runs on
//! that runtime's thread, over a real Unix socket and a real TCP socket.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crabtalk_proto::msg::{ErrorMsg, Ping, Pong};
use crabtalk_proto::{Client, Placement, Server, TcpListener, UdsListener};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "placement-test-token";

/// Answers a ping with the name of the thread that ran it.
struct WhereServer;

impl Server for WhereServer {
    async fn ping(&self, _: Ping) -> Result<Pong, ErrorMsg> {
        let mut pong = Pong::of_this_server();
        pong.notes
            .push(std::thread::current().name().unwrap_or("").to_owned());
        Ok(pong)
    }
}

/// Two single-threaded runtimes on threads `placed-0` and `placed-1`,
/// named in turn.
struct TwoThreads {
    handles: Vec<Handle>,
    next: AtomicUsize,
    _stops: Vec<tokio::sync::oneshot::Sender<()>>,
}

impl TwoThreads {
    fn start() -> Arc<Self> {
        let mut handles = Vec::new();
        let mut stops = Vec::new();
        for index in 0..2 {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            handles.push(runtime.handle().clone());
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            stops.push(stop);
            std::thread::Builder::new()
                .name(format!("placed-{index}"))
                .spawn(move || {
                    runtime.block_on(async {
                        let _ = stopped.await;
                    })
                })
                .unwrap();
        }
        Arc::new(Self {
            handles,
            next: AtomicUsize::new(0),
            _stops: stops,
        })
    }
}

impl Placement for TwoThreads {
    fn next_connection(&self) -> Option<Handle> {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        Some(self.handles[index].clone())
    }
}

async fn answered_on(client: &Client) -> String {
    let pong = tokio::time::timeout(Duration::from_secs(20), client.ping())
        .await
        .expect("the ping is answered in time")
        .expect("a pong");
    pong.notes.last().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_unix_connection_is_served_on_the_thread_it_was_placed_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run").join("placed.sock");
    let listener = UdsListener::bind(&path).await.unwrap();
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(listener.serve_placed(
        Arc::new(WhereServer),
        shutdown.clone(),
        TwoThreads::start(),
    ));
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(Client::connect_uds(&path).await.unwrap());
    }
    let mut seen = Vec::new();
    for client in &clients {
        // Two requests each: a connection stays on its thread.
        seen.push((answered_on(client).await, answered_on(client).await));
    }
    let expected = |name: &str| (name.to_owned(), name.to_owned());
    assert_eq!(
        seen,
        [
            expected("placed-0"),
            expected("placed-1"),
            expected("placed-0")
        ]
    );
    drop(clients);
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("the listener stops once its connections close")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tcp_connection_is_admitted_and_served_on_its_thread() {
    let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap(), TOKEN)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(listener.serve_placed(
        Arc::new(WhereServer),
        shutdown.clone(),
        TwoThreads::start(),
    ));
    let first = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
    let second = Client::connect_tcp(&addr, Some(TOKEN)).await.unwrap();
    assert_eq!(answered_on(&first).await, "placed-0");
    assert_eq!(answered_on(&second).await, "placed-1");
    // A wrong token is still refused where the connection is served.
    assert!(Client::connect_tcp(&addr, Some("wrong")).await.is_err());
    drop((first, second));
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("the listener stops once its connections close")
        .unwrap();
}
