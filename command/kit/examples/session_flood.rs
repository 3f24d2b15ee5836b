//! What a flood of MCP `initialize` calls costs each component, with the
//! door and the session cap of the kit (RFC 0009).
//!
//! ```sh
//! cargo build --release -p crabtalk-cron -p crabtalk-search -p crabtalk-telegram
//! cargo run --release -p crabtalk-kit --example session_flood -- 20000
//! ```
//!
//! For each of `crabtalk-cron`, `crabtalk-search` and `crabtalk-telegram`
//! (the release binaries beside this example's folder; telegram against
//! the testkit's fake Bot API), in a fresh temp home: the resident memory
//! idle, after N `initialize` calls without the token (a stranger), and
//! after N with it (the owner's own programs run wild), 32 at a time, plus
//! how many answers were 401 and how many sessions opened. It fails (with
//! exit code 1) when a component's memory grows past [`BOUND_MIB`] over
//! idle, or when a stranger was ever let in.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crabtalk_home::{Home, PortFile};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most a flood may add to a component's resident memory.
const BOUND_MIB: f64 = 32.0;
const CONCURRENCY: usize = 32;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}"#;

fn rss_mib(pid: u32) -> f64 {
    crabtalk_testkit::usage::Usage::of(pid).map_or(0.0, |u| u.rss_bytes as f64 / 1048576.0)
}

fn binary(name: &str) -> PathBuf {
    // target/release/examples/session_flood → target/release/<name>
    let me = std::env::current_exe().unwrap();
    let path = me.parent().unwrap().parent().unwrap().join(name);
    assert!(
        path.exists(),
        "{} is not built: cargo build --release -p {name}",
        path.display()
    );
    path
}

/// One `initialize`; whether it was answered 401 and whether it opened a
/// session.
async fn initialize(port: u16, token: Option<&str>) -> (bool, bool) {
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return (false, false);
    };
    let auth = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return (false, false);
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer)).await;
    let head = String::from_utf8_lossy(&answer[..answer.len().min(1024)]).to_ascii_lowercase();
    (
        head.starts_with("http/1.1 401"),
        head.contains("mcp-session-id:"),
    )
}

struct Flood {
    refused: usize,
    sessions: usize,
    took: Duration,
}

async fn flood(port: u16, token: Option<String>, calls: usize) -> Flood {
    let next = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let sessions = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (next, refused, sessions, token) = (
                next.clone(),
                refused.clone(),
                sessions.clone(),
                token.clone(),
            );
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let (was_refused, opened) = initialize(port, token.as_deref()).await;
                    refused.fetch_add(usize::from(was_refused), Ordering::Relaxed);
                    sessions.fetch_add(usize::from(opened), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    Flood {
        refused: refused.load(Ordering::Relaxed),
        sessions: sessions.load(Ordering::Relaxed),
        took: started.elapsed(),
    }
}

struct Running {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
    home: Home,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start(name: &str, config: Option<String>) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    if let Some(config) = config {
        let path = home.component_config(name).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        crabtalk_home::write_atomic_private(&path, config.as_bytes()).unwrap();
    }
    let child = Command::new(binary(&format!("crabtalk-{name}")))
        .arg("run")
        .env("CRABTALK_HOME", home.root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let port_file = home.port_file(name).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        if let Ok(file) = PortFile::read(&port_file) {
            break file.port;
        }
        assert!(Instant::now() < deadline, "{name} never announced a port");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Running {
        child,
        port,
        _dir: dir,
        home,
    }
}

#[tokio::main]
async fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map_or(20_000, |n| n.parse().unwrap());
    let api = crabtalk_fake_bot_api::FakeBotApi::start().await;
    let components = [
        ("cron", None),
        (
            "search",
            Some("[engines.duckduckgo]\nenabled = false\n[engines.bing]\nenabled = false\n".into()),
        ),
        (
            "telegram",
            Some(format!(
                "token = \"{}\"\napi_base_url = \"{}\"\nallow = [1]\n",
                crabtalk_fake_bot_api::TOKEN,
                api.url()
            )),
        ),
    ];
    println!("{calls} initialize calls per flood, {CONCURRENCY} at a time; RSS in MiB\n");
    println!(
        "| component | idle | after {calls} without token (401s, sessions) | after {calls} with token (sessions opened) | growth |"
    );
    println!("|---|---|---|---|---|");
    let mut failed = false;
    for (name, config) in components {
        let running = start(name, config).await;
        let pid = running.child.id();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle = rss_mib(pid);
        let stranger = flood(running.port, None, calls).await;
        let after_strangers = rss_mib(pid);
        let token = crabtalk_home::token::read_token(&running.home).unwrap();
        let owner = flood(running.port, Some(token), calls).await;
        let after_owner = rss_mib(pid);
        let growth = after_owner.max(after_strangers) - idle;
        println!(
            "| {name} | {idle:.1} | {after_strangers:.1} ({} of {calls}, {} sessions, {:.1} s) | {after_owner:.1} ({} opened, {:.1} s) | {growth:+.1} |",
            stranger.refused,
            stranger.sessions,
            stranger.took.as_secs_f64(),
            owner.sessions,
            owner.took.as_secs_f64(),
        );
        if stranger.sessions > 0 || stranger.refused != calls {
            eprintln!("{name}: a stranger was not refused every time");
            failed = true;
        }
        if growth > BOUND_MIB {
            eprintln!("{name}: memory grew by {growth:.1} MiB, past the bound of {BOUND_MIB} MiB");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
