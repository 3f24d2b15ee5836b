//! The engine's own limits.

use super::*;
use crate::config::CronsFile;
use crabtalk_home::Home;

struct Never;

impl Firer for Never {
    fn fire(&self, _job: Job) -> futures::future::BoxFuture<'static, Outcome> {
        Box::pin(std::future::pending())
    }
}

fn engine_with(crons: &str, now: &str) -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    std::fs::write(home.component_config_dir().join("crons.toml"), crons).unwrap();
    let files = Files {
        crons: CronsFile::of(&home),
        runs: RunLog::of(&home),
        state: StateFile::of(&home),
    };
    let now = DateTime::parse_from_rfc3339(now)
        .unwrap()
        .with_timezone(&Utc);
    let (mut engine, _) = Engine::new(
        Arc::new(ManualClock::new(now)),
        Arc::new(Never),
        files,
        Zone::UTC,
        WatchMode::PollOnly,
    );
    engine.reconcile();
    (dir, engine)
}

#[test]
fn the_engine_never_sleeps_more_than_thirty_seconds() {
    let (_dir, mut engine) = engine_with(
        "[[cron]]\nid = \"y\"\ncron = \"@yearly\"\nmessage = \"m\"\n",
        "2026-06-01T00:00:00Z",
    );
    let now = DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    assert_eq!(engine.wait_from(now), MAX_SLEEP);
    let (_dir, mut empty) = engine_with("", "2026-06-01T00:00:00Z");
    assert_eq!(empty.wait_from(now), MAX_SLEEP);
    let (_dir, mut soon) = engine_with(
        "[[cron]]\nid = \"s\"\nevery = \"10s\"\nmessage = \"m\"\n",
        "2026-06-01T00:00:00Z",
    );
    assert_eq!(soon.wait_from(now), Duration::from_secs(10));
}

#[tokio::test]
async fn a_file_broken_between_the_check_and_the_start_keeps_the_checked_schedule() {
    let good = "[[cron]]\nid = \"a\"\nevery = \"1h\"\nmessage = \"m\"\n";
    let (dir, _) = engine_with(good, "2026-06-01T00:00:00Z");
    let home = Home::new(dir.path());
    let checked =
        crate::config::parse_entries(std::path::Path::new("crons.toml"), good, Zone::UTC).unwrap();
    // The file turns bad after the service checked it, before the engine
    // reads it at start.
    std::fs::write(
        home.component_config_dir().join("crons.toml"),
        "[[cron]]\nid = \"a\"\nevry = \"1h\"\nmessage = \"m\"\n",
    )
    .unwrap();
    let files = Files {
        crons: CronsFile::of(&home),
        runs: RunLog::of(&home),
        state: StateFile::of(&home),
    };
    let now = DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let (mut engine, handle) = Engine::new(
        Arc::new(ManualClock::new(now)),
        Arc::new(Never),
        files,
        Zone::UTC,
        WatchMode::PollOnly,
    );
    engine.start_from(checked, good);
    engine.start();
    assert_eq!(engine.entry_count(), 1);
    let kept = handle.kept_schedule().expect("the refusal is known");
    assert_eq!(kept.entries, 1);
    assert!(kept.problem.contains("unknown key `evry`"), "{kept}");
}
