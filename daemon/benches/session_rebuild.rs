//! The session index rebuilt from real session files, as the daemon does at
//! start (target: 100k messages on disk in ≤ 1 s), and searches whose
//! windows are read back from those files.
//!
//! `cargo bench -p crabtalkd --bench session_rebuild`
//! (`SESSION_REBUILD_MESSAGES=1000000` for another size,
//! `SESSION_REBUILD_RUNS=N` to cap the rebuilds of each kind)
//!
//! The logs are written with the daemon's own storage into a temp dir:
//! conversations of 100 messages cycling user / assistant calling `bash` /
//! tool result / assistant text (5–80 words from the Zipf vocabulary the
//! other benches use), a metadata sidecar each, half with a title, one in
//! ten compacted halfway (a marker with a summary). Each rebuild starts from
//! an empty index and reads every file, as `SessionSearch::rebuild` does at
//! start:
//!
//! - *warm*: the files are in the page cache (a restart soon after they
//!   were written);
//! - *cold*: every file is dropped from the page cache first (`sync`, then
//!   `posix_fadvise(DONTNEED)`), so its bytes come from the disk.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use crabtalk_session_index::{SearchQuery, SessionIndex};
use crabtalkd::sessions::SessionSearch;
use crabtalkd::storage::{
    CompactMarker, Entry, Message, Meta, SessionLog, Storage, ToolCallRecord,
};
use criterion::Criterion;

use crabtalk_testkit::corpus::{Rng, Zipf, percentiles, rss_mib};

const PER_CONVERSATION: usize = 100;
const WARM_RUNS: usize = 10;
const COLD_RUNS: usize = 5;
const QUERIES: usize = 2_000;

/// Writes `messages` messages as session files under `dir`; returns the
/// bytes written.
fn write_sessions(zipf: &Zipf, dir: &Path, messages: usize) -> u64 {
    let storage = Storage::new(dir);
    let mut rng = Rng::new(7);
    for c in 0..messages / PER_CONVERSATION {
        let sender = if c % 3 == 0 {
            format!("tg:{c}")
        } else {
            format!("user{c}")
        };
        let files = storage.files("crab", &sender);
        let mut log = SessionLog::new(&files.log);
        let mut summary = None;
        for i in 0..PER_CONVERSATION {
            if c % 10 == 0 && i == PER_CONVERSATION / 2 {
                let text = zipf.text(&mut rng, 30, 100);
                log.append(&Entry::Compact(CompactMarker {
                    compact: text.clone(),
                    archive_name: format!("compaction-{sender}"),
                    archived_at: "2026-01-01T00:00:00Z".into(),
                    title: String::new(),
                    messages_before: Some(i as u64),
                }))
                .unwrap();
                summary = Some(text);
            }
            let message = match i % 4 {
                0 => Message::user(zipf.text(&mut rng, 5, 30)),
                1 => {
                    let mut calling = Message::assistant(zipf.text(&mut rng, 10, 40));
                    calling.tool_calls.push(call(zipf, &mut rng, i));
                    calling
                }
                2 => Message::tool_result(
                    &call(zipf, &mut rng, i - 1),
                    zipf.text(&mut rng, 10, 80),
                    false,
                ),
                _ => Message::assistant(zipf.text(&mut rng, 10, 80)),
            };
            log.append(&Entry::Message(message)).unwrap();
        }
        Meta {
            agent: "crab".into(),
            sender,
            created_by: "bench".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            title: if c % 2 == 0 {
                zipf.text(&mut rng, 3, 8)
            } else {
                String::new()
            },
            updated_at: "2026-01-01T00:00:00Z".into(),
            message_count: PER_CONVERSATION as u64,
            summary,
            compactions: u32::from(c % 10 == 0),
            ..Meta::default()
        }
        .save(&files.meta)
        .unwrap();
    }
    storage
        .logs()
        .unwrap()
        .iter()
        .map(|files| std::fs::metadata(&files.log).unwrap().len())
        .sum()
}

fn call(zipf: &Zipf, rng: &mut Rng, i: usize) -> ToolCallRecord {
    ToolCallRecord {
        id: format!("call_{i}"),
        name: "bash".into(),
        arguments: serde_json::json!({"command": zipf.text(rng, 2, 8)}).to_string(),
    }
}

/// Drops every file under `dir` from the page cache.
#[cfg(target_os = "linux")]
fn evict(dir: &Path) {
    // SAFETY: sync takes no arguments; posix_fadvise gets a descriptor we
    // own for the duration of the call.
    unsafe { libc::sync() };
    for agent in std::fs::read_dir(dir).unwrap() {
        for file in std::fs::read_dir(agent.unwrap().path()).unwrap() {
            let file = std::fs::File::open(file.unwrap().path()).unwrap();
            use std::os::fd::AsRawFd;
            unsafe {
                libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn evict(_: &Path) {}

fn rebuild(dir: &Path) -> (Duration, SessionSearch, u64) {
    let sessions = SessionSearch::new(Storage::new(dir), SessionIndex::new());
    let started = Instant::now();
    let report = sessions.rebuild(sessions.index().start_rebuild()).unwrap();
    (started.elapsed(), sessions, report.messages)
}

fn main() {
    let messages: usize = std::env::var("SESSION_REBUILD_MESSAGES")
        .ok()
        .map_or(100_000, |n| n.parse().unwrap());
    let zipf = Zipf::new();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let bytes = write_sessions(&zipf, dir.path(), messages);
    println!(
        "session_rebuild/{messages}: wrote {} conversations, {:.1} MiB of logs in {:?}",
        messages / PER_CONVERSATION,
        bytes as f64 / (1024.0 * 1024.0),
        started.elapsed()
    );

    // SESSION_REBUILD_RUNS=N caps the rebuilds of each kind (a 1M-message
    // rebuild takes seconds, and the searches after them are what matter).
    let cap: usize = std::env::var("SESSION_REBUILD_RUNS")
        .ok()
        .map_or(usize::MAX, |n| n.parse().unwrap());
    for (label, runs, cold) in [
        ("warm", WARM_RUNS.min(cap), false),
        ("cold", COLD_RUNS.min(cap), true),
    ] {
        let mut samples = Vec::with_capacity(runs);
        for run in 0..runs {
            if cold {
                evict(dir.path());
            }
            let rss = rss_mib();
            let (elapsed, sessions, indexed) = rebuild(dir.path());
            assert_eq!(indexed, messages as u64);
            samples.push(elapsed);
            if run == 0 && !cold {
                println!(
                    "session_rebuild/{messages}: index RSS +{:.0} MiB",
                    rss_mib() - rss
                );
            }
            drop(sessions);
        }
        let (p50, p99, max) = percentiles(&mut samples);
        println!(
            "session_rebuild/{messages}/{label}: p50 {p50:?}  p99 {p99:?}  max {max:?}  ({runs} rebuilds, {:.2} µs/message at p50)",
            p50.as_secs_f64() * 1e6 / messages as f64
        );
    }

    // Searches with windows read from the files (after a rebuild, which
    // also learnt where lines start).
    let (_, sessions, _) = rebuild(dir.path());
    let mut rng = Rng::new(99);
    let queries: Vec<String> = (0..QUERIES).map(|_| zipf.query(&mut rng, 100)).collect();
    let search = |query: &str| {
        sessions
            .search(&SearchQuery {
                agent: "crab",
                sender: None,
                query,
                context_before: 4,
                context_after: 4,
                limit: 20,
            })
            .unwrap()
    };
    let mut samples = Vec::with_capacity(QUERIES);
    let mut items = 0;
    for query in &queries {
        let started = Instant::now();
        let hits = search(query);
        samples.push(started.elapsed());
        items += hits.iter().map(|hit| hit.window.len()).sum::<usize>();
        black_box(hits);
    }
    let (p50, p99, max) = percentiles(&mut samples);
    println!(
        "session_search_files/{messages}/content words: p50 {p50:?}  p99 {p99:?}  max {max:?}  ({QUERIES} queries, {:.0} window items each, read from the logs)",
        items as f64 / QUERIES as f64
    );
    let mut criterion = Criterion::default().configure_from_args();
    let mut i = 0;
    criterion.bench_function(&format!("session_search_files/{messages}"), |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(search(&queries[i]))
        })
    });
    criterion.final_summary();
}
