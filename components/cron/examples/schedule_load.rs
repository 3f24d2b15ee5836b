//! What 10,000 entries cost: the next slot of every one, and a change of
//! `crons.toml` as the running engine handles it (read, check every entry,
//! reconcile and write the state, next slot of every entry). Prints
//! percentiles over repeated rounds.
//!
//! ```sh
//! cargo build --release -p crabtalk-cron --examples
//! target/release/examples/schedule_load 30
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use crabtalk_cron::{
    CronsFile, Engine, Files, Firer, Job, ManualClock, Outcome, RunLog, StateFile, WatchMode, Zone,
    parse_entries,
};
use crabtalk_home::Home;
use futures::future::BoxFuture;

const ENTRIES: usize = 10_000;

/// `ENTRIES` entries mixing what people write; `variant` changes every
/// message (what an edit of the file looks like to the engine).
fn crons_text(variant: usize) -> String {
    let schedules = [
        "cron = \"0 9 * * 1-5\"",
        "cron = \"*/15 * * * *\"",
        "cron = \"30 2 * * *\"",
        "cron = \"0 0 13 * 5\"",
        "cron = \"0 */2 * * *\"",
        "cron = \"@daily\"",
        "every = \"90s\"",
        "every = \"2h\"",
        "cron = \"0 30 8 * * mon-fri\"",
        "cron = \"0 0 29 2 *\"",
    ];
    let zones = [
        "America/New_York",
        "Europe/London",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "UTC",
    ];
    (0..ENTRIES)
        .map(|n| {
            format!(
                "[[cron]]\nid = \"entry-{n}\"\n{}\ntz = \"{}\"\nmessage = \"message {n} v{variant}\"\n\n",
                schedules[n % schedules.len()],
                zones[n % zones.len()],
            )
        })
        .collect()
}

/// Never fires: nothing is due in the measured instant.
struct Idle;

impl Firer for Idle {
    fn fire(&self, _job: Job) -> BoxFuture<'static, Outcome> {
        Box::pin(std::future::pending())
    }
}

/// CPU time of the calling thread: what a step costs, whatever else the
/// machine is doing (the wall time on a shared machine includes waiting for
/// a core).
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn percentiles(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} rounds)",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3,
        samples.len()
    );
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(30, |n| n.parse().unwrap());
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-03-07T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc);

    let entries = parse_entries(
        std::path::Path::new("crons.toml"),
        &crons_text(0),
        Zone::UTC,
    )
    .unwrap();
    assert_eq!(entries.len(), ENTRIES);
    let next: Vec<Duration> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            let found = entries
                .iter()
                .filter_map(|entry| entry.schedule.next_after(now))
                .count();
            assert_eq!(found, ENTRIES);
            started.elapsed()
        })
        .collect();
    percentiles("next slot of 10,000 entries", next);

    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    let texts = [crons_text(0), crons_text(1)];
    let crons = CronsFile::of(&home);
    std::fs::write(crons.path(), &texts[0]).unwrap();
    let files = Files {
        crons: crons.clone(),
        runs: RunLog::of(&home),
        state: StateFile::of(&home),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let (mut engine, _handle) = Engine::new(
        Arc::new(ManualClock::new(now)),
        Arc::new(Idle),
        files,
        Zone::UTC,
        WatchMode::PollOnly,
    );
    engine.reconcile();
    assert_eq!(engine.entry_count(), ENTRIES);
    let mut reconcile = Vec::with_capacity(rounds);
    let mut reconcile_cpu = Vec::with_capacity(rounds);
    for round in 0..rounds {
        std::fs::write(crons.path(), &texts[(round + 1) % 2]).unwrap();
        let started = Instant::now();
        let cpu = thread_cpu();
        engine.reconcile();
        reconcile_cpu.push(thread_cpu() - cpu);
        reconcile.push(started.elapsed());
    }
    percentiles(
        "reconcile 10,000 entries after a change of crons.toml (wall)",
        reconcile,
    );
    percentiles(
        "reconcile 10,000 entries after a change of crons.toml (CPU)",
        reconcile_cpu,
    );
}
