//! 100 concurrent `web_search` calls against the release service, with
//! all six engines answering from fixtures on 127.0.0.1: how many succeed
//! (every engine ok, results fused) and the latency percentiles, first with
//! 100 different queries (every call fans out to six engines: 600 engine
//! requests at once) and then the same 100 again (cache hits).
//!
//! ```sh
//! cargo build --release -p crabtalk-search --bins --examples
//! target/release/examples/search_load [calls]
//! ```

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crabtalk_home::{Home, PortFile};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

fn binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-search")
}

/// Serves `body` with `content_type` at every path, on 127.0.0.1.
async fn engine(content_type: &'static str, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .fallback(move || async move { ([("content-type", content_type)], body) });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn status_mib(pid: u32, key: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// `RSS x MiB (anonymous a, file-backed f)`.
fn rss(pid: u32) -> String {
    format!(
        "RSS {:.1} MiB (anonymous {:.1}, file-backed {:.1})",
        status_mib(pid, "VmRSS:"),
        status_mib(pid, "RssAnon:"),
        status_mib(pid, "RssFile:")
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

async fn round(peer: &rmcp::service::Peer<rmcp::RoleClient>, calls: usize, label: &str) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..calls)
        .map(|i| {
            let peer = peer.clone();
            tokio::spawn(async move {
                let args = json!({"query": format!("rust ownership {i}"), "count": 10});
                let begun = Instant::now();
                let result = peer
                    .call_tool(
                        CallToolRequestParams::new("web_search")
                            .with_arguments(args.as_object().cloned().unwrap()),
                    )
                    .await;
                let took = begun.elapsed();
                let ok = result.is_ok_and(|r| {
                    let answer = r.structured_content.unwrap_or(Value::Null);
                    r.is_error == Some(false)
                        && answer["results"].as_array().is_some_and(|a| a.len() == 10)
                        && answer["engines"]
                            .as_array()
                            .is_some_and(|e| e.iter().all(|e| e["status"] == "ok"))
                });
                (ok, took)
            })
        })
        .collect();
    let mut ok = 0;
    let mut times = Vec::new();
    for task in tasks {
        let (good, took) = task.await.unwrap();
        ok += good as usize;
        times.push(took);
    }
    let wall = started.elapsed();
    times.sort();
    println!(
        "{label}: {ok}/{calls} succeeded in {:.0} ms; latency p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        wall.as_secs_f64() * 1e3,
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.9).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls: usize = std::env::args().nth(1).map_or(100, |n| n.parse().unwrap());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let html = "text/html; charset=utf-8";
    let json = "application/json";
    let urls = [
        (
            "duckduckgo",
            engine(html, include_str!("../tests/fixtures/duckduckgo.html")).await,
        ),
        (
            "bing",
            engine(html, include_str!("../tests/fixtures/bing.html")).await,
        ),
        (
            "mojeek",
            engine(html, include_str!("../tests/fixtures/mojeek.html")).await,
        ),
        (
            "wikipedia",
            engine(json, include_str!("../tests/fixtures/wikipedia.json")).await,
        ),
        (
            "brave",
            engine(json, include_str!("../tests/fixtures/brave.json")).await,
        ),
        (
            "searxng",
            engine(json, include_str!("../tests/fixtures/searxng.json")).await,
        ),
    ];
    let config: String = urls
        .iter()
        .map(|(name, url)| {
            let key = if *name == "brave" {
                "api_key_env = \"LOAD_BRAVE_KEY\"\n"
            } else {
                ""
            };
            format!("[engines.{name}]\nbase_url = \"{url}\"\n{key}\n")
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    std::fs::write(home.component_config("search.toml").unwrap(), config).unwrap();
    let mut child = Command::new(binary())
        .arg("run")
        .env("CRABTALK_HOME", dir.path())
        .env("LOAD_BRAVE_KEY", "k")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
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
    println!("service idle after start: {}", rss(pid));
    let client = ()
        .serve(StreamableHttpClientTransport::from_config(
            crabtalk_kit::mcp::owner_client_config(&home, port).unwrap(),
        ))
        .await
        .unwrap();
    let peer = Arc::new(client.peer().clone());
    round(
        &peer,
        calls,
        &format!("{calls} concurrent web_search, distinct queries (6 engines each)"),
    )
    .await;
    round(
        &peer,
        calls,
        &format!("{calls} concurrent web_search, the same queries again (cache hits)"),
    )
    .await;
    println!("service right after the load: {}", rss(pid));
    let _ = client.cancel().await;
    // Idle connections to the engines close after 30 s; the service trims
    // its heap once more 40 s after its last call.
    tokio::time::sleep(Duration::from_secs(45)).await;
    println!(
        "service idle 45 s after the load, client gone: {}",
        rss(pid)
    );
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}
