//! A busy minute: 10,000 entries, 50 of them due at the same second. How
//! late does each of the 50 start — from its slot to the moment the
//! engine hands it to the firer, after its claim is on disk? The real
//! engine on the system clock, in a temp home, with a firer that records
//! the moment it is called and answers at once. Each round schedules the
//! 50 a few seconds ahead (six-field expressions, so rounds need not wait
//! for a minute boundary); the other 9,950 entries are not due then.
//!
//! ```sh
//! cargo build --release -p crabtalk-cron --examples
//! target/release/examples/busy_minute 5      # rounds
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use crabtalk_cron::{
    CronsFile, Engine, Files, Firer, Job, Outcome, RunLog, StateFile, Status, SystemClock,
    WatchMode, Zone,
};
use crabtalk_home::Home;
use futures::future::BoxFuture;

const ENTRIES: usize = 10_000;
const DUE: usize = 50;

/// Records how late each job reached it.
#[derive(Default)]
struct Stopwatch {
    late: Mutex<Vec<(String, Duration)>>,
}

struct Recording(Arc<Stopwatch>);

impl Firer for Recording {
    fn fire(&self, job: Job) -> BoxFuture<'static, Outcome> {
        let now = Utc::now();
        let late = (now - job.slot).to_std().unwrap_or_default();
        self.0
            .late
            .lock()
            .unwrap()
            .push((job.entry.id.clone(), late));
        Box::pin(async move {
            Outcome {
                status: Status::Ok,
                started: now,
                finished: Utc::now(),
                error: None,
                reply: Some("done".into()),
                delivery: None,
            }
        })
    }
}

/// 9,950 entries that are not due in the next hours (at 03:17 and later
/// in a far zone, or on the 29th of February) and `DUE` due at `slot`.
fn crons_text(slot: DateTime<Utc>) -> String {
    let quiet = [
        "cron = \"0 17 3 29 2 *\"",
        "cron = \"0 0 0 29 2 *\"",
        "cron = \"30 45 4 29 2 *\"",
    ];
    let mut text = String::with_capacity(ENTRIES * 96);
    for n in 0..ENTRIES - DUE {
        text.push_str(&format!(
            "[[cron]]\nid = \"quiet-{n}\"\n{}\ntz = \"UTC\"\nmessage = \"message {n}\"\n\n",
            quiet[n % quiet.len()]
        ));
    }
    let expr = format!("{} {} {} * * *", slot.second(), slot.minute(), slot.hour());
    for n in 0..DUE {
        text.push_str(&format!(
            "[[cron]]\nid = \"due-{n}\"\ncron = \"{expr}\"\ntz = \"UTC\"\nmessage = \"busy {n}\"\n\n"
        ));
    }
    text
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(5, |n| n.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    let crons = CronsFile::of(&home);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stopwatch = Arc::new(Stopwatch::default());
    let mut all = Vec::new();
    for round in 0..rounds {
        // Far enough ahead for the engine to read 10,000 entries first.
        let slot = (Utc::now() + chrono::Duration::seconds(6))
            .with_nanosecond(0)
            .unwrap();
        std::fs::write(crons.path(), crons_text(slot)).unwrap();
        stopwatch.late.lock().unwrap().clear();
        let files = Files {
            crons: crons.clone(),
            runs: RunLog::of(&home),
            state: StateFile::of(&home),
        };
        let (engine, _handle) = Engine::new(
            Arc::new(SystemClock),
            Arc::new(Recording(stopwatch.clone())),
            files,
            Zone::UTC,
            WatchMode::PollOnly,
        );
        let watch = stopwatch.clone();
        runtime.block_on(async move {
            let done = async move {
                while watch.late.lock().unwrap().len() < DUE {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // Let the 50 finish and be recorded before the next round.
                tokio::time::sleep(Duration::from_millis(500)).await;
            };
            tokio::time::timeout(Duration::from_secs(60), engine.run(done))
                .await
                .expect("the 50 due entries fired within a minute");
        });
        let mut late: Vec<Duration> = stopwatch
            .late
            .lock()
            .unwrap()
            .iter()
            .map(|(_, d)| *d)
            .collect();
        late.sort();
        println!(
            "round {}: {DUE} of {ENTRIES} due at {slot}: first started {:.1} ms late, median {:.1} ms, last {:.1} ms",
            round + 1,
            late[0].as_secs_f64() * 1e3,
            late[late.len() / 2].as_secs_f64() * 1e3,
            late[late.len() - 1].as_secs_f64() * 1e3,
        );
        all.extend(late);
    }
    all.sort();
    let at = |q: f64| all[((all.len() - 1) as f64 * q).round() as usize];
    println!(
        "all {} starts: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms late; state.json is {} bytes",
        all.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        all[all.len() - 1].as_secs_f64() * 1e3,
        std::fs::metadata(crabtalk_cron::data_dir(&home).join("state.json"))
            .map(|m| m.len())
            .unwrap_or(0)
    );
}
