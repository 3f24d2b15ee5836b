//! 20 `web_fetch` calls at once, every one a page built to be expensive,
//! through the same `Web` the tools use, with the default caps: how long
//! they take, how much CPU they cost, and the process's peak RSS. The
//! pages are served on 127.0.0.1 by this program:
//!
//! - `divs`: 8,000 nested `<div>`s (85 KB; 18.8 s of CPU each before the
//!   shape limits);
//! - `bold`: 3,000 nested `<b>` (20 KB; overflowed the stack);
//! - `reopen`: formatting elements reopened by every block (the tree
//!   builder's quadratic case);
//! - `wide`: 95,000 elements, no deeper than 4 (within the limits: parsed
//!   and written whole, the most work a page may ask for);
//! - `big`: a 5 MiB article of paragraphs and links (parsed, Readability).
//!
//! ```sh
//! cargo build --release -p crabtalk-search --examples
//! target/release/examples/heavy_fetches [rounds]
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crabtalk_home::Home;
use crabtalk_search::config::Settings;
use crabtalk_search::fetch::Format;
use crabtalk_search::web::Web;

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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(3, |n| n.parse().unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut app = axum::Router::new();
    let served = pages();
    for (name, body) in &served {
        let body: &'static str = Box::leak(body.clone().into_boxed_str());
        app = app.route(
            &format!("/{name}"),
            axum::routing::get(move || async move {
                ([("content-type", "text/html; charset=utf-8")], body)
            }),
        );
    }
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().unwrap();
    let config = crabtalk_search::config::parse(
        Path::new("search.toml"),
        "[fetch]\nallow_private = [\"127.0.0.1/32\"]\n[cache]\nttl_secs = 0\n",
    )
    .unwrap();
    crabtalk_search::memory::limit_arenas();
    let web = Arc::new(Web::new(
        &Home::new(dir.path()),
        Settings::resolve(&config, |_| None),
    ));
    println!(
        "caps: [fetch] max_concurrent 8, process_ms 5000, {} pages processed at once; RSS at start {:.1} MiB",
        crabtalk_search::fetch::processing_slots(),
        status_mib("VmRSS:")
    );
    for round in 0..rounds {
        let cpu_before = cpu();
        let started = Instant::now();
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let web = web.clone();
                let name = served[i % served.len()].0;
                let url = format!("http://{addr}/{name}");
                tokio::spawn(async move {
                    let begun = Instant::now();
                    let result = web.fetch(&url, Format::Markdown, None).await;
                    (
                        name,
                        begun.elapsed(),
                        result.map(|a| a.total_chars).map_err(|e| e.to_string()),
                    )
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
        println!(
            "round {}: 20 heavy fetches in {:.0} ms (slowest call {:.0} ms), CPU {:.2} s, peak RSS {:.1} MiB, RSS after {:.1} MiB, {} failed {:?}",
            round + 1,
            started.elapsed().as_secs_f64() * 1e3,
            slowest.as_secs_f64() * 1e3,
            (cpu() - cpu_before).as_secs_f64(),
            status_mib("VmHWM:"),
            status_mib("VmRSS:"),
            failed.len(),
            failed,
        );
    }
}
