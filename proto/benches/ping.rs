//! Ping round trip over a Unix socket with the real client and listener.
//! Criterion's median is the p50 the quality bar asks for.
//!
//! `uds_echo_floor` is the baseline: two threads bouncing 8 bytes over a
//! blocking Unix socket pair, no protocol at all. The protocol's cost is the
//! difference between the two.
//!
//! `cargo bench -p crabtalk-proto --bench ping`

use std::sync::Arc;

use crabtalk_proto::UdsListener;
use crabtalk_proto::{Client, Server};
use criterion::{Criterion, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;

/// Answers only the default ping.
struct PingOnly;
impl Server for PingOnly {}

fn ping(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("bench.sock");
    let shutdown = CancellationToken::new();

    // The server runs on its own runtime and thread, as the daemon runs in
    // its own process.
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    server_runtime.block_on(async {
        let listener = UdsListener::bind(&socket).await.unwrap();
        tokio::spawn(listener.serve(Arc::new(PingOnly), shutdown.clone()));
    });

    for (name, runtime) in [
        (
            "current_thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
        (
            "multi_thread",
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
    ] {
        let client = runtime.block_on(Client::connect_uds(&socket)).unwrap();
        c.bench_function(&format!("uds_ping_round_trip/client_{name}"), |b| {
            b.to_async(&runtime)
                .iter(|| async { client.ping().await.unwrap() })
        });
    }

    // The daemon serves each connection on a single-threaded runtime of
    // its own thread (RFC 0049), where the writer lets the thread's ready
    // tasks run before it writes.
    let one_thread_socket = dir.path().join("bench-one-thread.sock");
    let (bound, ready) = std::sync::mpsc::channel();
    let server_thread = std::thread::spawn({
        let path = one_thread_socket.clone();
        let shutdown = shutdown.clone();
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = UdsListener::bind(&path).await.unwrap();
                bound.send(()).unwrap();
                let _ = listener.serve(Arc::new(PingOnly), shutdown).await;
            });
        }
    });
    ready.recv().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime
        .block_on(Client::connect_uds(&one_thread_socket))
        .unwrap();
    c.bench_function(
        "uds_ping_round_trip/server_one_thread_client_current_thread",
        |b| {
            b.to_async(&runtime)
                .iter(|| async { client.ping().await.unwrap() })
        },
    );
    drop(client);
    shutdown.cancel();
    server_thread.join().unwrap();
    echo_floor(c);
}

fn echo_floor(c: &mut Criterion) {
    use std::io::{Read, Write};
    let (mut near, mut far) = std::os::unix::net::UnixStream::pair().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8];
        while far.read_exact(&mut buf).is_ok() && far.write_all(&buf).is_ok() {}
    });
    let mut buf = [0u8; 8];
    c.bench_function("uds_echo_floor/blocking_threads", |b| {
        b.iter(|| {
            near.write_all(&buf).unwrap();
            near.read_exact(&mut buf).unwrap();
        })
    });
}

criterion_group!(benches, ping);
criterion_main!(benches);
