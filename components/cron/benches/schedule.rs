//! 10,000 entries: the next slot of every one, and what a change of
//! `crons.toml` costs the running engine (read, check, reconcile the
//! state, write it, next slot of every entry).
//!
//! ```sh
//! cargo bench -p crabtalk-cron --bench schedule
//! ```

use std::sync::Arc;

use chrono::{DateTime, Utc};
use crabtalk_cron::config::{CronsFile, WatchMode, parse_entries};
use crabtalk_cron::engine::{Engine, Files, ManualClock};
use crabtalk_cron::fire::{Firer, Job, Outcome};
use crabtalk_cron::runlog::RunLog;
use crabtalk_cron::schedule::Zone;
use crabtalk_cron::state::StateFile;
use crabtalk_home::Home;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;

const ENTRIES: usize = 10_000;

/// A file of `ENTRIES` entries mixing what people write.
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
    let mut text = String::with_capacity(ENTRIES * 100);
    for n in 0..ENTRIES {
        text.push_str(&format!(
            "[[cron]]\nid = \"entry-{n}\"\n{}\ntz = \"{}\"\nmessage = \"message {n} v{variant}\"\n\n",
            schedules[n % schedules.len()],
            zones[n % zones.len()],
        ));
    }
    text
}

struct Idle;

impl Firer for Idle {
    fn fire(&self, job: Job) -> BoxFuture<'static, Outcome> {
        Box::pin(async move {
            Outcome {
                status: crabtalk_cron::runlog::Status::Ok,
                started: job.slot,
                finished: job.slot,
                error: None,
                reply: None,
                delivery: None,
            }
        })
    }
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-07T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn next_slot_for_all(c: &mut Criterion) {
    let entries = parse_entries(
        std::path::Path::new("crons.toml"),
        &crons_text(0),
        Zone::UTC,
    )
    .unwrap();
    assert_eq!(entries.len(), ENTRIES);
    c.bench_function("next slot of 10,000 entries", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter_map(|entry| entry.schedule.next_after(now()))
                .count()
        })
    });
}

fn reconcile_after_a_change(c: &mut Criterion) {
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
    let (mut engine, _handle) = Engine::new(
        Arc::new(ManualClock::new(now())),
        Arc::new(Idle),
        files,
        Zone::UTC,
        WatchMode::PollOnly,
    );
    engine.reconcile();
    assert_eq!(engine.entry_count(), ENTRIES);
    let mut flip = 0;
    c.bench_function("reconcile 10,000 entries after a file change", |b| {
        b.iter_custom(|iterations| {
            let mut spent = std::time::Duration::ZERO;
            for _ in 0..iterations {
                flip ^= 1;
                std::fs::write(crons.path(), &texts[flip]).unwrap();
                let started = std::time::Instant::now();
                engine.reconcile();
                spent += started.elapsed();
            }
            spent
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = next_slot_for_all, reconcile_after_a_change
}
criterion_main!(benches);
