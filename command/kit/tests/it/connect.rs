//! Finding the daemon of a home: the socket first, else the TCP port in
//! its port file with `Hello{token}` from `run/token`; a plain "not
//! running" when nothing answers.

use std::sync::Arc;

use crabtalk_home::{Home, PortFile};
use crabtalk_kit::daemon::{ConnectError, connect};
use crabtalk_proto::Server;
use crabtalk_proto::TcpListener;
use crabtalk_testkit::within;
use tokio_util::sync::CancellationToken;

/// A server that answers only what every server answers (Ping).
struct Bare;
impl Server for Bare {}

/// Serves [`Bare`] over TCP with `token` and writes `home`'s port file.
async fn serve_tcp(home: &Home, token: &str) -> CancellationToken {
    let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap(), token)
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    PortFile::for_this_process(port)
        .write(&home.daemon_port_file())
        .unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(listener.serve(Arc::new(Bare), stop.clone()));
    stop
}

#[tokio::test]
async fn without_a_socket_it_uses_the_port_file_and_the_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let stop = serve_tcp(&home, "s3cret").await;

    // No token file: the listener refuses the first request.
    let refused = match connect(&home).await {
        Ok(client) => client.ping().await.err(),
        Err(ConnectError::Client(err)) => Some(err),
        Err(err) => panic!("{err}"),
    };
    assert_eq!(refused.and_then(|err| err.code()), Some(401));

    crabtalk_home::write_atomic_private(&home.token_file(), b"s3cret\n").unwrap();
    let client = within("connect", connect(&home)).await.unwrap();
    within("ping", client.ping()).await.unwrap();
    stop.cancel();
}

#[cfg(unix)]
#[tokio::test]
async fn the_socket_wins_over_the_port_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let listener = crabtalk_proto::UdsListener::bind(home.socket_path())
        .await
        .unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(listener.serve(Arc::new(Bare), stop.clone()));
    // A port file pointing nowhere is not even read.
    std::fs::write(home.daemon_port_file(), "not a port file").unwrap();
    let client = within("connect", connect(&home)).await.unwrap();
    within("ping", client.ping()).await.unwrap();
    stop.cancel();
}

#[tokio::test]
async fn nothing_listening_is_not_running_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let err = connect(&home).await.err().unwrap();
    assert!(err.is_not_running(), "{err}");
    let text = err.to_string();
    assert!(text.contains("crabup daemon start"), "{text}");
    assert!(
        text.contains(&home.socket_path().display().to_string()),
        "{text}"
    );

    // A stale port file (its port refuses) says the same.
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    PortFile::for_this_process(free_port)
        .write(&home.daemon_port_file())
        .unwrap();
    let err = connect(&home).await.err().unwrap();
    assert!(err.is_not_running(), "{err}");

    // A port file that is not one is named.
    std::fs::write(home.daemon_port_file(), "nonsense").unwrap();
    let err = connect(&home).await.err().unwrap();
    assert!(matches!(err, ConnectError::PortFile(_)), "{err}");
    assert!(err.to_string().contains("crabtalk.port"), "{err}");
}
