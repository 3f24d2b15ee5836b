//! The engine with an injected clock and a firer that records what it is
//! asked to run: weekday schedules, quiet hours, downtime (`once` and
//! `skip`), claims left by a crash, overlap, slots held back behind a run
//! that waits for the daemon (and a crash while they wait), one-shots.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use crabtalk_cron::{
    By, Claim, Clock, CronsFile, Engine, EngineHandle, Files, Firer, Job, ManualClock, Outcome,
    RunLog, RunNowError, RunRecord, StateFile, Status, WatchMode, Zone,
};
use crabtalk_home::Home;
use crabtalk_testkit::eventually;
use futures::future::BoxFuture;
use tokio::sync::Semaphore;

fn utc(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// Records jobs; answers ok (or error while `failing`), each after a
/// permit when `gated`.
#[derive(Default)]
struct Recorder {
    jobs: Mutex<Vec<(String, DateTime<Utc>, By)>>,
    failing: Mutex<bool>,
    gate: Option<Arc<Semaphore>>,
}

struct Shared(Arc<Recorder>);

impl Firer for Shared {
    fn fire(&self, job: Job) -> BoxFuture<'static, Outcome> {
        let me = self.0.clone();
        // The daemon is up: a run reaches it at once.
        job.reached_daemon();
        Box::pin(async move {
            me.jobs
                .lock()
                .unwrap()
                .push((job.entry.id.clone(), job.slot, job.by));
            if let Some(gate) = &me.gate {
                gate.acquire().await.unwrap().forget();
            }
            let failing = *me.failing.lock().unwrap();
            Outcome {
                status: if failing { Status::Error } else { Status::Ok },
                started: job.slot,
                finished: job.slot,
                error: failing.then(|| "scripted failure".to_owned()),
                reply: Some("done".into()),
                delivery: None,
            }
        })
    }
}

struct Rig {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    recorder: Arc<Recorder>,
    handle: Option<EngineHandle>,
    /// The state file handle the engine writes through (it counts).
    state: Option<StateFile>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Rig {
    fn new(crons: &str, now: &str) -> Self {
        Self::with_recorder(crons, now, Recorder::default())
    }

    fn with_recorder(crons: &str, now: &str, recorder: Recorder) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        std::fs::create_dir_all(home.component_config_dir()).unwrap();
        std::fs::write(home.component_config_dir().join("crons.toml"), crons).unwrap();
        Self {
            dir,
            clock: Arc::new(ManualClock::new(utc(now))),
            recorder: Arc::new(recorder),
            handle: None,
            state: None,
            stop: None,
            task: None,
        }
    }

    fn home(&self) -> Home {
        Home::new(self.dir.path())
    }

    fn files(&self) -> Files {
        let home = self.home();
        Files {
            crons: CronsFile::of(&home),
            runs: RunLog::of(&home),
            state: StateFile::of(&home),
        }
    }

    async fn start(&mut self) {
        self.start_with(Arc::new(Shared(self.recorder.clone())))
            .await;
    }

    async fn start_with(&mut self, firer: Arc<dyn Firer>) {
        let files = self.files();
        self.state = Some(files.state.clone());
        let (engine, handle) = Engine::new(
            self.clock.clone(),
            firer,
            files,
            Zone::UTC,
            WatchMode::NotifyAndPoll,
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        self.task = Some(tokio::spawn(engine.run(async move {
            let _ = stopped.await;
        })));
        self.handle = Some(handle);
        self.stop = Some(stop);
        // Started once every entry has its state: slots from then on are its.
        let home = self.home();
        let ids: Vec<String> = CronsFile::of(&home)
            .load(Zone::UTC)
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect();
        eventually("the engine to start", || {
            let state = StateFile::of(&home).load_quietly();
            ids.iter().all(|id| state.entries.contains_key(id))
        })
        .await;
    }

    async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    /// What `kill -9` leaves: the engine stops at once, between two of
    /// its steps, writing nothing more; runs in flight are abandoned (their
    /// tasks may go on in the test's runtime, but nothing hears them).
    async fn crash(&mut self) {
        self.stop = None;
        if let Some(task) = self.task.take() {
            task.abort();
            assert!(task.await.unwrap_err().is_cancelled());
        }
    }

    fn runs(&self) -> Vec<RunRecord> {
        RunLog::of(&self.home()).read(None, usize::MAX).unwrap()
    }

    fn jobs(&self) -> Vec<(String, DateTime<Utc>, By)> {
        self.recorder.jobs.lock().unwrap().clone()
    }

    async fn set(&self, now: &str) {
        self.clock.set(utc(now));
    }

    async fn runs_where(
        &self,
        what: &str,
        count: usize,
        pred: impl Fn(&RunRecord) -> bool,
    ) -> Vec<RunRecord> {
        let found = || {
            self.runs()
                .into_iter()
                .filter(|r| pred(r))
                .collect::<Vec<_>>()
        };
        let enough = async || (found().len() >= count).then_some(());
        let waited = crabtalk_testkit::poll_within(crabtalk_testkit::PATIENCE, enough).await;
        if waited.is_none() {
            panic!(
                "timed out waiting for {what}; now {}, runs {:?}, jobs {:?}, state {:?}",
                self.clock.now(),
                self.runs(),
                self.jobs(),
                StateFile::of(&self.home()).load_quietly()
            );
        }
        found()
    }
}

const WEEKDAYS: &str = "[[cron]]\nid = \"standup\"\ncron = \"0 9 * * 1-5\"\ntz = \"Europe/London\"\nmessage = \"stand-up\"\n";

#[tokio::test]
async fn a_five_field_weekday_entry_fires_on_weekdays_only() {
    // Friday 2026-03-13, 08:59:50 GMT.
    let mut rig = Rig::new(WEEKDAYS, "2026-03-13T08:59:50Z");
    rig.start().await;
    rig.set("2026-03-13T09:00:00Z").await;
    rig.runs_where("friday's run", 1, |r| r.status == Status::Ok)
        .await;
    // Through the weekend to Monday 09:00 GMT.
    rig.set("2026-03-14T09:00:00Z").await;
    rig.set("2026-03-15T09:00:00Z").await;
    rig.set("2026-03-16T09:00:05Z").await;
    rig.runs_where("monday's run", 2, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
    let slots: Vec<DateTime<Utc>> = rig.jobs().iter().map(|j| j.1).collect();
    assert_eq!(
        slots,
        [utc("2026-03-13T09:00:00Z"), utc("2026-03-16T09:00:00Z")]
    );
    assert!(
        rig.runs().iter().all(|r| r.status == Status::Ok),
        "{:?}",
        rig.runs()
    );
}

#[tokio::test]
async fn slots_in_quiet_hours_are_recorded_quiet_and_not_fired() {
    let crons = "[[cron]]\nid = \"hourly\"\ncron = \"0 * * * *\"\ntz = \"UTC\"\nmessage = \"m\"\nquiet_start = \"22:00\"\nquiet_end = \"07:00\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T21:59:59Z");
    rig.start().await;
    rig.set("2026-06-01T22:00:00Z").await;
    rig.runs_where("a quiet slot", 1, |r| r.status == Status::Quiet)
        .await;
    rig.set("2026-06-01T23:00:00Z").await;
    rig.runs_where("another quiet slot", 2, |r| r.status == Status::Quiet)
        .await;
    rig.set("2026-06-02T06:59:00Z").await;
    rig.set("2026-06-02T07:00:00Z").await;
    rig.runs_where("the 07:00 run", 1, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
    assert_eq!(rig.jobs().len(), 1);
    assert_eq!(rig.jobs()[0].1, utc("2026-06-02T07:00:00Z"));
}

const TWO_AFTER_DOWNTIME: &str = "[[cron]]\nid = \"catch\"\ncron = \"0 * * * *\"\ntz = \"UTC\"\nmessage = \"m\"\nmissed = \"once\"\nmissed_within = \"2h\"\n\n[[cron]]\nid = \"skip\"\ncron = \"0 * * * *\"\ntz = \"UTC\"\nmessage = \"m\"\n";

#[tokio::test]
async fn after_downtime_once_fires_one_catch_up_and_skip_records_missed() {
    let mut rig = Rig::new(TWO_AFTER_DOWNTIME, "2026-06-01T09:30:00Z");
    rig.start().await;
    rig.set("2026-06-01T10:00:00Z").await;
    rig.runs_where("both 10:00 runs", 2, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
    // Down from 10:00:01 to 13:20: the 11:00, 12:00 and 13:00 slots pass.
    rig.clock.set(utc("2026-06-01T13:20:00Z"));
    rig.start().await;
    rig.runs_where("the catch-up", 3, |r| r.status == Status::Ok)
        .await;
    let missed = rig
        .runs_where("missed slots", 5, |r| r.status == Status::Missed)
        .await;
    rig.stop().await;
    let jobs = rig.jobs();
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    assert_eq!(
        jobs[2],
        ("catch".into(), utc("2026-06-01T13:00:00Z"), By::CatchUp)
    );
    let missed_of = |id: &str| -> Vec<DateTime<Utc>> {
        missed
            .iter()
            .filter(|r| r.entry == id)
            .map(|r| r.scheduled)
            .collect()
    };
    assert_eq!(
        missed_of("catch"),
        [utc("2026-06-01T11:00:00Z"), utc("2026-06-01T12:00:00Z")]
    );
    assert_eq!(
        missed_of("skip"),
        [
            utc("2026-06-01T11:00:00Z"),
            utc("2026-06-01T12:00:00Z"),
            utc("2026-06-01T13:00:00Z")
        ]
    );
}

#[tokio::test]
async fn a_missed_slot_older_than_missed_within_is_not_caught_up() {
    let crons = "[[cron]]\nid = \"catch\"\ncron = \"0 9 * * *\"\ntz = \"UTC\"\nmessage = \"m\"\nmissed = \"once\"\nmissed_within = \"1h\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T08:00:00Z");
    rig.start().await;
    rig.stop().await;
    rig.clock.set(utc("2026-06-01T10:30:00Z"));
    rig.start().await;
    rig.runs_where("the missed slot", 1, |r| r.status == Status::Missed)
        .await;
    rig.stop().await;
    assert!(rig.jobs().is_empty());
}

#[tokio::test]
async fn a_claim_left_by_a_crash_is_unknown_and_never_run_again() {
    let crons = "[[cron]]\nid = \"hourly\"\ncron = \"0 * * * *\"\ntz = \"UTC\"\nmessage = \"m\"\nmissed = \"once\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T09:59:00Z");
    rig.start().await;
    rig.stop().await;
    // What a process killed mid-run leaves: the 10:00 slot claimed, running.
    let state_file = StateFile::of(&rig.home());
    let mut state = state_file.load();
    let entry = state.entries.get_mut("hourly").unwrap();
    entry.last_slot = Some(utc("2026-06-01T10:00:00Z"));
    entry.running = Some(Claim {
        slot: utc("2026-06-01T10:00:00Z"),
        started: utc("2026-06-01T10:00:00Z"),
        by: "schedule".into(),
    });
    state_file.save(&state).unwrap();
    rig.clock.set(utc("2026-06-01T10:00:30Z"));
    rig.start().await;
    let unknown = rig
        .runs_where("the unknown record", 1, |r| r.status == Status::Unknown)
        .await;
    assert_eq!(unknown[0].scheduled, utc("2026-06-01T10:00:00Z"));
    rig.set("2026-06-01T11:00:00Z").await;
    rig.runs_where("the 11:00 run", 1, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
    assert_eq!(
        rig.jobs().iter().map(|j| j.1).collect::<Vec<_>>(),
        [utc("2026-06-01T11:00:00Z")]
    );
    assert!(
        StateFile::of(&rig.home()).load().entries["hourly"]
            .running
            .is_none()
    );
}

#[tokio::test]
async fn a_slot_whose_previous_run_still_goes_is_an_overlap() {
    let crons = "[[cron]]\nid = \"slow\"\nevery = \"1m\"\nmessage = \"m\"\n";
    let gate = Arc::new(Semaphore::new(0));
    let mut rig = Rig::with_recorder(
        crons,
        "2026-06-01T09:59:30Z",
        Recorder {
            gate: Some(gate.clone()),
            ..Recorder::default()
        },
    );
    rig.start().await;
    rig.set("2026-06-01T10:00:00Z").await;
    eventually("the first run to start", || rig.jobs().len() == 1).await;
    rig.set("2026-06-01T10:01:00Z").await;
    rig.runs_where("the overlap", 1, |r| r.status == Status::Overlap)
        .await;
    gate.add_permits(1);
    rig.runs_where("the first run's end", 1, |r| r.status == Status::Ok)
        .await;
    rig.set("2026-06-01T10:02:00Z").await;
    eventually("the third slot to start", || rig.jobs().len() == 2).await;
    gate.add_permits(1);
    rig.runs_where("the third slot's end", 2, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
}

#[tokio::test]
async fn three_failures_in_a_row_mark_an_entry_failing_and_an_ok_clears_it() {
    let crons = "[[cron]]\nid = \"flaky\"\nevery = \"1m\"\nmessage = \"m\"\n";
    let mut rig = Rig::with_recorder(
        crons,
        "2026-06-01T09:59:30Z",
        Recorder {
            failing: Mutex::new(true),
            ..Recorder::default()
        },
    );
    rig.start().await;
    for (n, at) in [
        "2026-06-01T10:00:00Z",
        "2026-06-01T10:01:00Z",
        "2026-06-01T10:02:00Z",
    ]
    .iter()
    .enumerate()
    {
        rig.set(at).await;
        rig.runs_where("a failure", n + 1, |r| r.status == Status::Error)
            .await;
    }
    eventually("failing", || {
        StateFile::of(&rig.home()).load().entries["flaky"].is_failing()
    })
    .await;
    *rig.recorder.failing.lock().unwrap() = false;
    rig.set("2026-06-01T10:03:00Z").await;
    rig.runs_where("a success", 1, |r| r.status == Status::Ok)
        .await;
    eventually("recovered", || {
        !StateFile::of(&rig.home()).load().entries["flaky"].is_failing()
    })
    .await;
    rig.stop().await;
}

#[tokio::test]
async fn an_at_entry_fires_once_and_is_removed_after_success_but_kept_after_failure() {
    let crons = "# keep me\n[[cron]]\nid = \"once-ok\"\nat = \"2026-06-01T10:00:00Z\"\nmessage = \"m\"\n\n[[cron]]\nid = \"keep\"\nevery = \"1d\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T09:59:30Z");
    rig.start().await;
    rig.set("2026-06-01T10:00:00Z").await;
    rig.runs_where("the one-shot", 1, |r| r.entry == "once-ok")
        .await;
    let crons_path = rig.home().component_config_dir().join("crons.toml");
    eventually("the one-shot to be removed", || {
        !std::fs::read_to_string(&crons_path)
            .unwrap()
            .contains("once-ok")
    })
    .await;
    let text = std::fs::read_to_string(&crons_path).unwrap();
    assert!(
        text.starts_with("# keep me\n") && text.contains("id = \"keep\""),
        "{text}"
    );
    rig.stop().await;

    let crons = "[[cron]]\nid = \"once-bad\"\nat = \"2026-06-01T10:00:00Z\"\nmessage = \"m\"\n";
    let mut rig = Rig::with_recorder(
        crons,
        "2026-06-01T09:59:30Z",
        Recorder {
            failing: Mutex::new(true),
            ..Recorder::default()
        },
    );
    rig.start().await;
    rig.set("2026-06-01T10:00:00Z").await;
    rig.runs_where("the failed one-shot", 1, |r| r.status == Status::Error)
        .await;
    rig.set("2026-06-01T10:05:00Z").await;
    rig.stop().await;
    let text =
        std::fs::read_to_string(rig.home().component_config_dir().join("crons.toml")).unwrap();
    assert!(text.contains("once-bad"), "{text}");
    let state = StateFile::of(&rig.home()).load();
    assert_eq!(
        state.entries["once-bad"].last_error.as_deref(),
        Some("scripted failure")
    );
    assert_eq!(rig.jobs().len(), 1);
}

#[tokio::test]
async fn a_clock_jump_forward_is_noticed_without_waiting_for_the_old_sleep() {
    let crons = "[[cron]]\nid = \"daily\"\ncron = \"0 9 * * *\"\ntz = \"UTC\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T08:00:00Z");
    rig.start().await;
    // A resume from suspend: the wall clock is suddenly at the slot.
    rig.set("2026-06-01T09:00:10Z").await;
    rig.runs_where("the run", 1, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
}

#[tokio::test]
async fn manual_runs_go_through_the_engine_and_wait_for_their_record() {
    let crons = "[[cron]]\nid = \"daily\"\ncron = \"0 9 * * *\"\ntz = \"UTC\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T08:00:00Z");
    rig.start().await;
    let record = rig
        .handle
        .as_ref()
        .unwrap()
        .run_now_and_wait("daily")
        .await
        .unwrap();
    assert_eq!(record.status, Status::Ok);
    assert_eq!(record.by, "manual");
    let err = rig
        .handle
        .as_ref()
        .unwrap()
        .run_now("nope")
        .await
        .unwrap_err();
    assert_eq!(err, RunNowError::NoEntry { id: "nope".into() });
    assert_eq!(err.to_string(), "no entry `nope`; cron_list shows the ids");
    rig.stop().await;
}

#[tokio::test]
async fn fifty_slots_due_at_once_are_claimed_in_one_write_before_any_fires() {
    // 50 entries due at 10:00 among 250; the runs hold until released, so
    // every write counted below is a claim.
    let mut crons = String::new();
    for n in 0..200 {
        crons.push_str(&format!(
            "[[cron]]\nid = \"later-{n}\"\ncron = \"0 3 29 2 *\"\ntz = \"UTC\"\nmessage = \"m\"\n\n"
        ));
    }
    for n in 0..50 {
        crons.push_str(&format!(
            "[[cron]]\nid = \"due-{n}\"\ncron = \"0 10 * * *\"\ntz = \"UTC\"\nmessage = \"m\"\n\n"
        ));
    }
    let gate = Arc::new(Semaphore::new(0));
    let mut rig = Rig::with_recorder(
        &crons,
        "2026-06-01T09:59:30Z",
        Recorder {
            gate: Some(gate.clone()),
            ..Recorder::default()
        },
    );
    rig.start().await;
    let state = rig.state.clone().unwrap();
    let before = state.writes();
    rig.set("2026-06-01T10:00:00Z").await;
    eventually("all 50 to start", || rig.jobs().len() == 50).await;
    assert_eq!(
        state.writes() - before,
        1,
        "the 50 claims went to disk in one write"
    );
    let on_disk = StateFile::of(&rig.home()).load_quietly();
    assert_eq!(
        on_disk
            .entries
            .values()
            .filter(|e| e.running.is_some())
            .count(),
        50
    );
    gate.add_permits(50);
    rig.runs_where("the 50 runs", 50, |r| r.status == Status::Ok)
        .await;
    eventually("every claim cleared", || {
        StateFile::of(&rig.home())
            .load_quietly()
            .entries
            .values()
            .all(|e| e.running.is_none())
    })
    .await;
    rig.stop().await;
}

/// A daemon that is down until `up_at`: a run waits for it until its
/// retry window has passed (strictly, as a timer that fires a hair late
/// does), then fails; once it is up, runs reach it and succeed.
struct DownUntil {
    clock: Arc<ManualClock>,
    up_at: DateTime<Utc>,
    jobs: Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>,
}

struct Down(Arc<DownUntil>);

impl Firer for Down {
    fn fire(&self, job: Job) -> BoxFuture<'static, Outcome> {
        let me = self.0.clone();
        Box::pin(async move {
            me.jobs.lock().unwrap().push((job.slot, job.retry_until));
            loop {
                let now = me.clock.now();
                let outcome = |status, error: Option<&str>| Outcome {
                    status,
                    started: job.slot,
                    finished: now,
                    error: error.map(str::to_owned),
                    reply: None,
                    delivery: None,
                };
                if now > job.retry_until {
                    return outcome(Status::Error, Some("the daemon did not answer"));
                }
                if now >= me.up_at {
                    job.reached_daemon();
                    return outcome(Status::Ok, None);
                }
                me.clock.sleep(std::time::Duration::from_secs(1)).await;
            }
        })
    }
}

#[tokio::test]
async fn a_slot_whose_previous_run_waits_for_the_daemon_runs_after_it() {
    // Every minute; the daemon is down from before 10:00 until 10:01:02.
    // The 10:00 slot waits for it until 10:01:00 — where the 10:01 slot
    // begins. The 10:01 slot is not an overlap: it starts once the 10:00
    // one gives up, and reaches the daemon at 10:01:02.
    let crons = "[[cron]]\nid = \"minutely\"\nevery = \"1m\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T09:59:30Z");
    let daemon = Arc::new(DownUntil {
        clock: rig.clock.clone(),
        up_at: utc("2026-06-01T10:01:02Z"),
        jobs: Mutex::new(Vec::new()),
    });
    rig.start_with(Arc::new(Down(daemon.clone()))).await;
    rig.set("2026-06-01T10:00:00Z").await;
    eventually("the 10:00 run to wait", || {
        daemon.jobs.lock().unwrap().len() == 1
    })
    .await;
    assert_eq!(
        daemon.jobs.lock().unwrap()[0],
        (utc("2026-06-01T10:00:00Z"), utc("2026-06-01T10:01:00Z"))
    );
    // The boundary: the 10:00 run has not given up yet; the 10:01 slot is due.
    rig.set("2026-06-01T10:01:00Z").await;
    rig.set("2026-06-01T10:01:01Z").await;
    rig.runs_where("the 10:00 failure", 1, |r| r.status == Status::Error)
        .await;
    rig.set("2026-06-01T10:01:02Z").await;
    let ok = rig
        .runs_where("the 10:01 run", 1, |r| r.status == Status::Ok)
        .await;
    assert_eq!(ok[0].scheduled, utc("2026-06-01T10:01:00Z"));
    rig.stop().await;
    assert!(
        rig.runs().iter().all(|r| r.status != Status::Overlap),
        "{:?}",
        rig.runs()
    );
}

#[tokio::test]
async fn a_past_at_written_by_hand_is_caught_up_or_recorded_and_removed() {
    // Written into the file while the service ran, both already past:
    // one within its missed_within with missed = "once", one not.
    let crons = "[[cron]]\nid = \"keep\"\nevery = \"1d\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T10:00:00Z");
    rig.start().await;
    let path = rig.home().component_config_dir().join("crons.toml");
    std::fs::write(
        &path,
        format!(
            "{crons}\n[[cron]]\nid = \"recent\"\nat = \"2026-06-01T09:50:00Z\"\nmessage = \"m\"\nmissed = \"once\"\nmissed_within = \"1h\"\n\n[[cron]]\nid = \"stale\"\nat = \"2026-05-01T09:00:00Z\"\nmessage = \"m\"\n"
        ),
    )
    .unwrap();
    rig.handle.as_ref().unwrap().reload().await;
    let caught = rig
        .runs_where("the catch-up", 1, |r| r.status == Status::Ok)
        .await;
    assert_eq!(caught[0].entry, "recent");
    assert_eq!(caught[0].by, "catch-up");
    let missed = rig
        .runs_where("the stale one recorded", 1, |r| r.status == Status::Missed)
        .await;
    assert_eq!(
        (missed[0].entry.as_str(), missed[0].scheduled),
        ("stale", utc("2026-05-01T09:00:00Z"))
    );
    eventually("both removed from crons.toml", || {
        let text = std::fs::read_to_string(&path).unwrap();
        !text.contains("recent") && !text.contains("stale") && text.contains("keep")
    })
    .await;
    rig.stop().await;
    assert_eq!(rig.jobs().len(), 1);
}

/// Every minute, the daemon down until `up_at`: the 10:00 run waits for it
/// until 10:01:00, so the 10:01 slot is held back behind it — and then
/// the engine dies, as under `kill -9`, before that run gives up.
async fn crash_while_a_slot_is_held(up_at: &str) -> (Rig, Arc<DownUntil>) {
    let crons = "[[cron]]\nid = \"minutely\"\nevery = \"1m\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T09:59:30Z");
    let daemon = Arc::new(DownUntil {
        clock: rig.clock.clone(),
        up_at: utc(up_at),
        jobs: Mutex::new(Vec::new()),
    });
    rig.start_with(Arc::new(Down(daemon.clone()))).await;
    rig.set("2026-06-01T10:00:00Z").await;
    eventually("the 10:00 run to wait", || {
        daemon.jobs.lock().unwrap().len() == 1
    })
    .await;
    rig.set("2026-06-01T10:01:00Z").await;
    // On disk: the 10:01 slot decided, the 10:00 run still claimed.
    let home = rig.home();
    eventually("the 10:01 slot to be held back", || {
        let state = StateFile::of(&home).load_quietly();
        let entry = &state.entries["minutely"];
        entry.last_slot == Some(utc("2026-06-01T10:01:00Z"))
            && entry.running.as_ref().map(|c| c.slot) == Some(utc("2026-06-01T10:00:00Z"))
    })
    .await;
    rig.crash().await;
    (rig, daemon)
}

#[tokio::test]
async fn a_slot_held_back_when_the_service_crashed_runs_after_restart_within_its_window() {
    let (mut rig, daemon) = crash_while_a_slot_is_held("2026-06-01T10:01:30Z").await;
    // Back at 10:01:40 with the daemon up: the 10:01 slot's window (until
    // 10:02) is still open.
    rig.clock.set(utc("2026-06-01T10:01:40Z"));
    rig.start_with(Arc::new(Down(daemon.clone()))).await;
    let unknown = rig
        .runs_where("the 10:00 run recorded unknown", 1, |r| {
            r.status == Status::Unknown
        })
        .await;
    assert_eq!(unknown[0].scheduled, utc("2026-06-01T10:00:00Z"));
    let ok = rig
        .runs_where("the held 10:01 slot to run", 1, |r| r.status == Status::Ok)
        .await;
    assert_eq!(
        (ok[0].scheduled, ok[0].by.as_str()),
        (utc("2026-06-01T10:01:00Z"), "schedule")
    );
    assert_eq!(
        daemon.jobs.lock().unwrap()[1],
        (utc("2026-06-01T10:01:00Z"), utc("2026-06-01T10:02:00Z")),
        "fired within the slot's own window"
    );
    rig.stop().await;
    let state = StateFile::of(&rig.home()).load();
    assert!(state.entries["minutely"].held.is_none(), "{state:?}");
    // Nothing ran twice.
    let slots: Vec<DateTime<Utc>> = daemon.jobs.lock().unwrap().iter().map(|j| j.0).collect();
    assert_eq!(
        slots,
        [utc("2026-06-01T10:00:00Z"), utc("2026-06-01T10:01:00Z")]
    );
}

#[tokio::test]
async fn a_slot_held_back_when_the_service_crashed_is_recorded_missed_if_its_window_closed() {
    let (mut rig, daemon) = crash_while_a_slot_is_held("2026-06-01T10:01:30Z").await;
    // Back at 10:05:30: the 10:01 slot's window closed at 10:02.
    rig.clock.set(utc("2026-06-01T10:05:30Z"));
    rig.start_with(Arc::new(Down(daemon.clone()))).await;
    let held = rig
        .runs_where("the held 10:01 slot recorded", 1, |r| {
            r.scheduled == utc("2026-06-01T10:01:00Z")
        })
        .await;
    assert_eq!(held[0].status, Status::Missed, "{held:?}");
    assert!(
        held[0]
            .error
            .as_deref()
            .unwrap()
            .contains("crabtalk-cron stopped while this slot waited for the entry's previous run"),
        "{held:?}"
    );
    // The slots of the downtime are missed as usual; 10:05 runs.
    rig.runs_where("the 10:05 run", 1, |r| r.status == Status::Ok)
        .await;
    rig.stop().await;
    assert!(
        daemon
            .jobs
            .lock()
            .unwrap()
            .iter()
            .all(|j| j.0 != utc("2026-06-01T10:01:00Z")),
        "the held slot was never fired"
    );
    let scheduled: Vec<DateTime<Utc>> = rig.runs().iter().map(|r| r.scheduled).collect();
    for slot in ["10:00", "10:01", "10:02", "10:03", "10:04", "10:05"] {
        let slot = utc(&format!("2026-06-01T{slot}:00Z"));
        assert_eq!(
            scheduled.iter().filter(|s| **s == slot).count(),
            1,
            "every slot recorded once: {:?}",
            rig.runs()
        );
    }
}

#[tokio::test]
async fn a_held_slot_replaced_by_a_newer_one_is_recorded_missed() {
    // A manual run waits for the daemon for 30 s, longer than the entry's
    // period: two scheduled slots come while it waits. Only the newest is
    // kept to run after it; the older one is recorded, not dropped.
    let crons = "[[cron]]\nid = \"often\"\nevery = \"15s\"\nmessage = \"m\"\n";
    let mut rig = Rig::new(crons, "2026-06-01T09:59:45Z");
    let daemon = Arc::new(DownUntil {
        clock: rig.clock.clone(),
        up_at: utc("2026-06-01T10:00:21Z"),
        jobs: Mutex::new(Vec::new()),
    });
    rig.start_with(Arc::new(Down(daemon.clone()))).await;
    rig.set("2026-06-01T09:59:50Z").await;
    rig.handle.as_ref().unwrap().run_now("often").await.unwrap();
    eventually("the manual run to wait", || {
        daemon.jobs.lock().unwrap().len() == 1
    })
    .await;
    rig.set("2026-06-01T10:00:00Z").await;
    let home = rig.home();
    eventually("the 10:00:00 slot to be held", || {
        StateFile::of(&home).load_quietly().entries["often"].last_slot
            == Some(utc("2026-06-01T10:00:00Z"))
    })
    .await;
    rig.set("2026-06-01T10:00:15Z").await;
    let replaced = rig
        .runs_where("the replaced slot recorded", 1, |r| {
            r.status == Status::Missed
        })
        .await;
    assert_eq!(replaced[0].scheduled, utc("2026-06-01T10:00:00Z"));
    assert!(
        replaced[0]
            .error
            .as_deref()
            .unwrap()
            .contains("a newer slot of the entry came"),
        "{replaced:?}"
    );
    // The manual run gives up after 10:00:20; the daemon is back at
    // 10:00:21 and the 10:00:15 slot, still within its window, runs.
    rig.set("2026-06-01T10:00:21Z").await;
    let ok = rig
        .runs_where("the held slot to run", 1, |r| r.status == Status::Ok)
        .await;
    assert_eq!(ok[0].scheduled, utc("2026-06-01T10:00:15Z"));
    rig.stop().await;
}
