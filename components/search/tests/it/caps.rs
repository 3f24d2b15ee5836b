//! `web_fetch`'s limits against servers that misbehave: a 100 MB body, a
//! body that never ends, one byte a second, a 10 MB single-line page. Each
//! ends within the limits — a cut result that says so, or a clear error —
//! and the process's peak memory stays bounded. One test, so the peak
//! (`VmHWM`) is this work's alone. The time bounds are generous (a debug
//! build on a loaded machine): they show each case ends, not how fast; the
//! release figures are in docs/src/benchmarks.md.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use crabtalk_search::{FetchError, Format, Settings, Web};
use support::{Fixture, Reply, TestHome};

/// The process's peak resident memory, in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_servers_end_within_the_limits() {
    let server = Fixture::start().await;
    server.route(
        "/huge",
        Reply::Huge {
            content_type: "text/plain".into(),
            total: 100 * 1024 * 1024,
        },
    );
    server.route(
        "/endless",
        Reply::Endless {
            content_type: "text/html".into(),
        },
    );
    server.route(
        "/trickle",
        Reply::Trickle {
            content_type: "text/html".into(),
        },
    );
    let line = format!(
        "<!doctype html><html><head><title>One line</title></head><body><p>{}</p></body></html>",
        "crab walks sideways ".repeat(10 * 1024 * 1024 / 20)
    );
    assert!(line.len() >= 10 * 1024 * 1024 && !line.contains('\n'));
    server.route("/one-line", Reply::html(line));
    let home = TestHome::new("");
    let config = crabtalk_search::parse_config(
        Path::new("search.toml"),
        "[fetch]\nallow_private = [\"127.0.0.1/32\"]\ntimeout_ms = 3000\n# a debug build tokenizes 5 MiB slowly\nprocess_ms = 120000\n[cache]\nttl_secs = 0\n",
    )
    .unwrap();
    let web = Web::new(&home.home(), Settings::resolve(&config, |_| None));
    let base = server.base_url();
    let cap = 5 * 1024 * 1024;
    let before = peak_rss_mib();

    // 100 MB: the first 5 MiB are read, the rest never is.
    let started = Instant::now();
    let huge = web
        .fetch(&format!("{base}/huge"), Format::Text, None)
        .await
        .unwrap();
    assert!(
        huge.body_cut && huge.total_chars == cap,
        "{} chars",
        huge.total_chars
    );
    assert_eq!(huge.content.len(), 50_000, "then cut to max_chars");
    assert!(
        huge.note
            .as_deref()
            .unwrap()
            .contains(&format!("larger than {cap} bytes")),
        "{:?}",
        huge.note
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // A body that never ends: the same cap.
    let started = Instant::now();
    let endless = web
        .fetch(&format!("{base}/endless"), Format::Markdown, None)
        .await
        .unwrap();
    assert!(endless.body_cut, "{:?}", endless.note);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );

    // One byte a second: the time limit.
    let started = Instant::now();
    let err = web
        .fetch(&format!("{base}/trickle"), Format::Markdown, None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("gave up after 3000 ms"), "{err}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(15),
        "{took:?}"
    );

    // A 10 MB page on one line: read up to the cap, made readable, cut.
    let started = Instant::now();
    let page = web
        .fetch(&format!("{base}/one-line"), Format::Markdown, Some(1_000))
        .await
        .unwrap();
    assert!(page.body_cut && page.truncated, "{:?}", page.note);
    assert!(
        page.content.starts_with("crab walks sideways"),
        "{}",
        &page.content[..100]
    );
    assert_eq!(page.content.chars().count(), 1_000);
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "{:?}",
        started.elapsed()
    );

    let peak = peak_rss_mib();
    eprintln!("peak RSS {before:.0} MiB before, {peak:.0} MiB after");
    assert!(peak < 400.0, "peak RSS {peak:.0} MiB");
}
