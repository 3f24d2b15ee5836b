//! `crabup ps` asks each component's `GET /health`, not just its port: a
//! component served by the kit's `run_mcp` is healthy, while a port that accepts
//! connections but never answers (a hung process, or a stranger on a
//! recycled port) is not.

use crate::support::{Sandbox, TIMEOUT, wait_for};
use crabtalk_command::Service;
use crabtalk_home::{Home, PortFile};
use crabtalk_kit::mcp::{mcp_router, run_mcp};

#[derive(Clone)]
struct NoTools;
impl rmcp::ServerHandler for NoTools {}

/// A component served with `run_mcp` on a thread of this test, until the
/// returned guard is dropped.
struct Served {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    fn start(home: &Home, service: &Service) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (home, service) = (home.clone(), service.clone());
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(run_mcp(&home, &service, mcp_router(|| NoTools), async {
                    let _ = stopped.await;
                }))
                .unwrap();
        });
        Self {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.thread.take().unwrap().join();
    }
}

#[test]
fn a_live_component_is_healthy() {
    let sandbox = Sandbox::new();
    let home = Home::new(&sandbox.home);
    let service = Service::new("search", "crabtalk-search", "search").unwrap();
    let _served = Served::start(&home, &service);
    let port_file = service.port_file(&home);
    wait_for("the port file", TIMEOUT, || PortFile::read(&port_file).ok());

    let row = sandbox.ps_row("search");
    assert_eq!(row["state"], "running (unmanaged)", "{row}");
    assert_eq!(row["port_file"], "live", "{row}");
    assert_eq!(
        row["health"],
        format!("ok (search {})", env!("CARGO_PKG_VERSION")),
        "{row}"
    );
}

#[test]
fn a_port_that_accepts_but_does_not_answer_the_health_check_is_unhealthy() {
    let sandbox = Sandbox::new();
    let home = Home::new(&sandbox.home);
    // Accepts connections (the kernel's backlog) but never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::create_dir_all(home.run_dir()).unwrap();
    PortFile::for_this_process(port)
        .write(&home.port_file("cron").unwrap())
        .unwrap();

    let row = sandbox.ps_row("cron");
    assert_eq!(row["port_file"], "live", "the port does accept: {row}");
    let health = row["health"].as_str().unwrap();
    assert!(health.starts_with("no answer"), "{row}");
    drop(listener);
}

#[test]
fn a_component_answering_as_another_service_is_unhealthy() {
    let sandbox = Sandbox::new();
    let home = Home::new(&sandbox.home);
    let search = Service::new("search", "crabtalk-search", "search").unwrap();
    let _served = Served::start(&home, &search);
    let search_port = wait_for("the port file", TIMEOUT, || {
        PortFile::read(&home.port_file("search").unwrap()).ok()
    });
    // telegram's port file points at search's server.
    PortFile::for_this_process(search_port.port)
        .write(&home.port_file("telegram").unwrap())
        .unwrap();
    let row = sandbox.ps_row("telegram");
    assert_eq!(row["health"], "wrong service: search answers", "{row}");
}

/// The daemon reached over TCP only (its socket file removed, as on a
/// system without Unix sockets): `ps` reads `run/token` and the daemon
/// answers; without the token it does not.
#[test]
fn the_daemon_over_tcp_is_healthy_with_the_token_of_its_home() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let daemon = runtime.block_on(async {
        let daemon = crabtalk_testkit::TestDaemon::start(
            crabtalk_testkit::daemon_binary(),
            "[transport]\ntcp = \"127.0.0.1:0\"\n",
        )
        .await;
        daemon.tcp_addr().await;
        daemon
    });
    let home = daemon.home();
    std::fs::remove_file(home.socket_path()).unwrap();
    let mut sandbox = Sandbox::new();
    sandbox.home = daemon.path().to_owned();

    let row = sandbox.ps_row("daemon");
    let health = row["health"].as_str().unwrap();
    assert!(health.starts_with("ok ("), "{row}");

    let token = std::fs::read(home.token_file()).unwrap();
    std::fs::remove_file(home.token_file()).unwrap();
    let row = sandbox.ps_row("daemon");
    let health = row["health"].as_str().unwrap();
    assert!(
        health.starts_with("no answer") && health.contains("token"),
        "{row}"
    );
    std::fs::write(home.token_file(), token).unwrap();
    drop(daemon);
}
