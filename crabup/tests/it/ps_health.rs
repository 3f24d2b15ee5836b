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
    assert_eq!(row["health"]["status"], "ok", "{row}");
    assert_eq!(row["version"], env!("CARGO_PKG_VERSION"), "{row}");
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
    assert_eq!(row["health"]["status"], "no_answer", "{row}");
    // Running, but not answering: something that should work does not.
    assert_eq!(row["trouble"], true, "{row}");
    assert!(
        row["fix"]
            .as_str()
            .unwrap()
            .starts_with("crabup cron restart"),
        "{row}"
    );
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
    assert_eq!(row["health"]["status"], "wrong_service", "{row}");
    assert_eq!(
        row["health"]["error"], "search answers on its port",
        "{row}"
    );
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
    assert_eq!(row["health"]["status"], "ok", "{row}");
    assert!(
        row["version"].as_str().is_some_and(|v| !v.is_empty()),
        "{row}"
    );
    assert!(
        row["protocol"]
            .as_str()
            .is_some_and(|p| p.starts_with("crabtalk/")),
        "{row}"
    );

    let token = std::fs::read(home.token_file()).unwrap();
    std::fs::remove_file(home.token_file()).unwrap();
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["health"]["status"], "no_answer", "{row}");
    assert!(
        row["health"]["error"].as_str().unwrap().contains("token"),
        "{row}"
    );
    std::fs::write(home.token_file(), token).unwrap();
    drop(daemon);
}

/// `ps` fails (exit 3) while a service that should run does not, with a
/// short state in the table and the command that fixes it under it; a
/// service someone stopped is not a failure. `--json` is structured.
#[test]
fn ps_exits_3_while_something_that_should_run_does_not_and_says_how_to_fix_it() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary(
        "crabtalk-cron",
        "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n",
    );
    sandbox.ok(&["cron", "start"]);
    let out = sandbox.crabup(&["ps"]);
    assert!(out.status.success(), "{}", crate::support::stdout(&out));

    // Gone, supervisor and all (a machine out of memory, say).
    let file = sandbox.pid_file("cron").unwrap();
    crate::support::kill(file.supervisor.unwrap(), libc::SIGKILL);
    crate::support::kill(file.pid, libc::SIGKILL);
    wait_for("cron failed", TIMEOUT, || {
        (sandbox.ps_row("cron")["state"] == "failed").then_some(())
    });
    let out = sandbox.crabup(&["ps"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        crate::support::stdout(&out)
    );
    let table = crate::support::stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("cron ")).unwrap();
    assert!(
        lines[at].split_whitespace().nth(1) == Some("failed"),
        "{table}"
    );
    // Every table line stays short; what is wrong goes under it.
    assert!(lines[at].chars().count() < 100, "{table}");
    let notes: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with("  ↳ "))
        .copied()
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("are gone without being stopped")),
        "{table}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("  ↳ fix: crabup cron start")),
        "{table}"
    );
    let json = sandbox.crabup(&["ps", "--json"]);
    assert_eq!(json.status.code(), Some(3));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&json.stdout).unwrap();
    let cron = rows.iter().find(|row| row["name"] == "cron").unwrap();
    assert_eq!(cron["state"], "failed", "{cron}");
    assert_eq!(cron["trouble"], true, "{cron}");
    assert_eq!(cron["pid"], file.pid, "{cron}");
    assert_eq!(cron["health"]["status"], "unknown", "{cron}");
    assert!(
        cron["fix"]
            .as_str()
            .unwrap()
            .starts_with("crabup cron start"),
        "{cron}"
    );
    for key in [
        "port",
        "version",
        "protocol",
        "last_error",
        "restarts",
        "last_exit",
    ] {
        assert!(cron.get(key).is_some(), "{key} missing: {cron}");
    }

    // Started again and stopped by the user: nothing should run.
    sandbox.ok(&["cron", "start"]);
    sandbox.ok(&["cron", "stop"]);
    let out = sandbox.crabup(&["ps"]);
    assert!(out.status.success(), "{}", crate::support::stdout(&out));
}
