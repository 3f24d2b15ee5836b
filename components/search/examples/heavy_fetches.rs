//! 20 `web_fetch` calls at once, every one a page built to be expensive,
//! with the default caps: how long they take, how much CPU they cost, and
//! the peak RSS. Two ways:
//!
//! - in this process, through the same `Web` the tools use (the figures
//!   are this process's);
//! - with `--service`, against the release `crabtalk-search` binary (from
//!   the same target directory) in a temp home, over MCP with one rmcp
//!   client session, as an agent's calls arrive: the figures are the
//!   service process's, read from `/proc/<pid>`.
//!
//! The pages are served on 127.0.0.1 by this program:
//!
//! - `divs`: 8,000 nested `<div>`s (85 KB; 18.8 s of CPU each before the
//!   shape limits);
//! - `bold`: 3,000 nested `<b>` (20 KB; overflowed the stack);
//! - `reopen`: formatting elements reopened by every block (the tree
//!   builder's quadratic case);
//! - `wide`: 93,000 elements (2 MB), no deeper than 4 (within the
//!   limits: parsed and written whole, the most work a page may ask for);
//! - `big`: a 3.4 MiB article of paragraphs and links (parsed, Readability).
//!
//! ```sh
//! cargo build --release -p crabtalk-search --bins --examples
//! target/release/examples/heavy_fetches [rounds]
//! target/release/examples/heavy_fetches --service [rounds]
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crabtalk_home::{Home, PortFile};
use crabtalk_search::{Format, Settings, Web};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

/// What `search.toml` says in both modes: loopback pages allowed, nothing
/// cached (every round fetches again); every cap at its default.
const SEARCH_TOML: &str = "[fetch]\nallow_private = [\"127.0.0.1/32\"]\n[cache]\nttl_secs = 0\n";

/// Calls at once in a round.
const CALLS: usize = 20;

/// `key` of /proc/self/status, in MiB.
fn status_mib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// `key` of /proc/<pid>/status, in MiB.
fn status_mib_of(pid: u32, key: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// User + system CPU time of process `pid`, from /proc/<pid>/stat.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / per_second)
}

/// User + system CPU time of this process.
fn cpu() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn pages() -> Vec<(&'static str, String)> {
    let wide: String = (0..31_000)
        .map(|i| format!("<div><p>item {i} <a href=\"/i{i}?a=1&amp;b=2\">link</a></p></div>"))
        .collect();
    let big: String = (0..25_000)
        .map(|i| format!("<p>Paragraph {i} of a long article about crabs and how they walk sideways, with <a href=\"/p{i}\">a link</a> and <b>bold words</b> in it.</p>\n"))
        .collect();
    vec![
        (
            "divs",
            "<div>".repeat(8_000) + "x" + &"</div>".repeat(8_000),
        ),
        ("bold", "<b>".repeat(3_000) + "x" + &"</b>".repeat(3_000)),
        (
            "reopen",
            (0..20_000)
                .map(|n| format!("<div><b id={n}>x</div>"))
                .collect(),
        ),
        ("wide", format!("<html><body>{wide}</body></html>")),
        (
            "big",
            format!(
                "<html><head><title>Big</title></head><body><article>{big}</article></body></html>"
            ),
        ),
    ]
}

/// Serves the pages on 127.0.0.1; their names and the server's address.
async fn serve_pages() -> (Vec<&'static str>, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut app = axum::Router::new();
    let mut names = Vec::new();
    for (name, body) in pages() {
        let body: &'static str = Box::leak(body.into_boxed_str());
        app = app.route(
            &format!("/{name}"),
            axum::routing::get(move || async move {
                ([("content-type", "text/html; charset=utf-8")], body)
            }),
        );
        names.push(name);
    }
    tokio::spawn(async move { axum::serve(listener, app).await });
    (names, addr)
}

/// How one round went.
struct Round {
    wall: Duration,
    slowest: Duration,
    failed: Vec<String>,
}

/// Starts `CALLS` fetches at once with `fetch` (given the page's URL)
/// and waits for all of them.
async fn round<F, Fut>(names: &[&'static str], addr: SocketAddr, fetch: F) -> Round
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let started = Instant::now();
    let tasks: Vec<_> = (0..CALLS)
        .map(|i| {
            let name = names[i % names.len()];
            let call = fetch(format!("http://{addr}/{name}"));
            tokio::spawn(async move {
                let begun = Instant::now();
                let result = call.await;
                (name, begun.elapsed(), result)
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    let mut failed = Vec::new();
    for task in tasks {
        let (name, took, result) = task.await.unwrap();
        slowest = slowest.max(took);
        if let Err(err) = result {
            failed.push(format!("{name}: {err}"));
        }
    }
    Round {
        wall: started.elapsed(),
        slowest,
        failed,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let service = args
        .iter()
        .position(|a| a == "--service")
        .map(|at| args.remove(at));
    let rounds: usize = args.first().map_or(3, |n| n.parse().unwrap());
    let (names, addr) = serve_pages().await;
    match service {
        Some(_) => through_the_service(&names, addr, rounds).await,
        None => in_process(&names, addr, rounds).await,
    }
}

/// The rounds through a `Web` in this process.
async fn in_process(names: &[&'static str], addr: SocketAddr, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let config = crabtalk_search::parse_config(Path::new("search.toml"), SEARCH_TOML).unwrap();
    crabtalk_search::limit_arenas();
    let web = Arc::new(Web::new(
        &Home::new(dir.path()),
        Settings::resolve(&config, |_| None),
    ));
    println!(
        "in process: caps [fetch] max_concurrent 8, process_ms 5000, {} pages processed at once; RSS at start {:.1} MiB",
        crabtalk_search::processing_slots(),
        status_mib("VmRSS:")
    );
    for n in 0..rounds {
        let cpu_before = cpu();
        let done = round(names, addr, |url| {
            let web = web.clone();
            async move {
                web.fetch(&url, Format::Markdown, None)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
        .await;
        println!(
            "round {}: {CALLS} heavy fetches in {:.0} ms (slowest call {:.0} ms), CPU {:.2} s, peak RSS {:.1} MiB, RSS after {:.1} MiB, {} failed {:?}",
            n + 1,
            done.wall.as_secs_f64() * 1e3,
            done.slowest.as_secs_f64() * 1e3,
            (cpu() - cpu_before).as_secs_f64(),
            status_mib("VmHWM:"),
            status_mib("VmRSS:"),
            done.failed.len(),
            done.failed,
        );
    }
}

/// The release service binary beside this example's folder.
fn service_binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-search")
}

/// The rounds against the service binary over MCP; the figures are the
/// service's own.
async fn through_the_service(names: &[&'static str], addr: SocketAddr, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    std::fs::write(home.component_config("search.toml").unwrap(), SEARCH_TOML).unwrap();
    let binary = service_binary();
    let mut child = Command::new(&binary)
        .arg("run")
        .env("CRABTALK_HOME", dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|err| panic!("{}: {err}; build it with --bins", binary.display()));
    let pid = child.id();
    let port_file = home.port_file("search").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        if let Ok(file) = PortFile::read(&port_file) {
            break file.port;
        }
        assert!(Instant::now() < deadline, "no port file");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    println!(
        "service {} (pid {pid}): caps [fetch] max_concurrent 8, process_ms 5000, {} pages processed at once; RSS at start {:.1} MiB",
        binary.display(),
        crabtalk_search::processing_slots(),
        status_mib_of(pid, "VmRSS:")
    );
    let client = mcp_client(&home, port).await;
    let peer = client.peer().clone();
    for n in 0..rounds {
        let cpu_before = cpu_of(pid);
        let done = round(names, addr, |url| {
            let peer = peer.clone();
            async move {
                let params = CallToolRequestParams::new("web_fetch")
                    .with_arguments(json!({"url": url}).as_object().cloned().unwrap());
                match peer.call_tool(params).await {
                    Ok(result) if result.is_error != Some(true) => Ok(()),
                    Ok(result) => Err(format!("{:?}", result.content)),
                    Err(err) => Err(err.to_string()),
                }
            }
        })
        .await;
        println!(
            "round {}: {CALLS} heavy web_fetch calls over MCP in {:.0} ms (slowest call {:.0} ms), service CPU {:.2} s, service peak RSS {:.1} MiB, RSS after {:.1} MiB (anonymous {:.1}), {} failed {:?}",
            n + 1,
            done.wall.as_secs_f64() * 1e3,
            done.slowest.as_secs_f64() * 1e3,
            (cpu_of(pid) - cpu_before).as_secs_f64(),
            status_mib_of(pid, "VmHWM:"),
            status_mib_of(pid, "VmRSS:"),
            status_mib_of(pid, "RssAnon:"),
            done.failed.len(),
            done.failed,
        );
    }
    let _ = client.cancel().await;
    // The service trims its heap when its last call ends and once more
    // 40 s later.
    tokio::time::sleep(Duration::from_secs(45)).await;
    println!(
        "service idle 45 s after the last round, client gone: RSS {:.1} MiB (anonymous {:.1})",
        status_mib_of(pid, "VmRSS:"),
        status_mib_of(pid, "RssAnon:")
    );
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}

/// An rmcp client of the service on `port`: the one place this program
/// makes one.
async fn mcp_client(home: &Home, port: u16) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = crabtalk_kit::mcp::owner_client_config(home, port).unwrap();
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}
