//! The engine: when each entry's next slot comes, decide what becomes of
//! it, claim it on disk, fire it, record it.
//!
//! Slots are computed from the wall clock. The loop sleeps until the
//! earliest next slot but never more than [`MAX_SLEEP`] at a time: the
//! monotonic clock tokio sleeps on stops while a laptop is suspended, so
//! a resume, a suspend or a change of the clock is noticed within that.
//!
//! For every due slot of an entry, in order:
//!
//! 1. a slot noticed more than [`ON_TIME`] late was missed (the service or
//!    the machine was down): with `missed = "once"` the newest missed slot
//!    still fires as a catch-up if it is within `missed_within` (catch-ups
//!    of different entries [`CATCH_UP_GAP`] apart); every other one is
//!    recorded `missed`;
//! 2. a slot in the entry's quiet hours is recorded `quiet`;
//! 3. a slot whose entry still runs its previous slot is recorded
//!    `overlap`;
//! 4. otherwise it is **claimed** — written to `cron/state.json` as the
//!    entry's newest slot, running — and only then fired. A restart never
//!    fires a slot at or before an entry's newest slot, and a claim still
//!    running at start is recorded `unknown` (it may or may not have run;
//!    it is not run again).

mod clock;
mod handle;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

pub use clock::{Clock, ManualClock, SystemClock};
use handle::Command;
pub use handle::{EngineHandle, KeptSchedule};

use crate::config::{Change, CronsFile, Entry, FileWatch, Missed, WatchMode};
use crate::fire::{By, Firer, Job, Outcome};
use crate::runlog::{RunLog, RunRecord, Status, preview};
use crate::schedule::Zone;
use crate::state::{Claim, EntryState, State, StateFile};

/// The longest the engine sleeps without looking at the wall clock.
pub const MAX_SLEEP: Duration = Duration::from_secs(30);

/// A slot noticed up to this late still runs as scheduled.
pub const ON_TIME: chrono::Duration = chrono::Duration::seconds(60);

/// The pause between catch-ups of different entries after downtime.
pub const CATCH_UP_GAP: Duration = Duration::from_secs(3);

/// How long runs in flight may take to finish when the service stops;
/// those still running then are `unknown` at the next start.
pub const DRAIN: Duration = Duration::from_secs(5);

/// How often `crons.toml` is checked when `notify` says nothing.
pub const POLL: Duration = Duration::from_secs(2);

/// Missed slots written one by one per entry and wake-up; older ones are
/// counted in the oldest line written.
const MISSED_LINES: usize = 20;

/// How long after a (re)load the freed parse is given back to the system:
/// never inside the reconcile itself, and once for a burst of edits.
const RELEASE_DELAY: Duration = Duration::from_secs(2);

/// The files the engine works on.
#[derive(Debug, Clone)]
pub struct Files {
    pub crons: CronsFile,
    pub runs: RunLog,
    pub state: StateFile,
}

/// A run that ended.
struct Finished {
    id: String,
    slot: DateTime<Utc>,
    by: By,
    outcome: Outcome,
    waiter: Option<oneshot::Sender<RunRecord>>,
}

/// The scheduler's state and loop.
pub struct Engine {
    clock: Arc<dyn Clock>,
    firer: Arc<dyn Firer>,
    files: Files,
    machine_zone: Zone,
    watch_mode: WatchMode,
    entries: Vec<Entry>,
    /// A hash of the text `entries` came from (an unchanged file is not
    /// checked again).
    loaded_text: Option<u64>,
    /// A hash of the last text refused (reported once, not at every event).
    refused_text: Option<u64>,
    /// What the engine keeps while the file is refused (shared with the
    /// handles, for `GET /health`).
    kept: Arc<std::sync::Mutex<Option<KeptSchedule>>>,
    /// The schedule the service checked before it started the engine,
    /// taken at start as the last good one (see [`Engine::start_from`]).
    checked: Option<(Vec<Entry>, u64)>,
    state: State,
    /// Each enabled entry's next slot after its cursor.
    next: HashMap<String, Option<DateTime<Utc>>>,
    running: HashSet<String>,
    /// When the next catch-up may start.
    catch_up_free_at: DateTime<Utc>,
    /// When freed memory is to be given back (set by a load).
    release_at: Option<tokio::time::Instant>,
    commands: mpsc::Receiver<Command>,
    finished_tx: mpsc::UnboundedSender<Finished>,
    finished_rx: mpsc::UnboundedReceiver<Finished>,
}

impl Engine {
    pub fn new(
        clock: Arc<dyn Clock>,
        firer: Arc<dyn Firer>,
        files: Files,
        machine_zone: Zone,
        watch_mode: WatchMode,
    ) -> (Self, EngineHandle) {
        let (commands_tx, commands) = mpsc::channel(16);
        let (finished_tx, finished_rx) = mpsc::unbounded_channel();
        let now = clock.now();
        let kept = Arc::new(std::sync::Mutex::new(None));
        let engine = Self {
            clock,
            firer,
            files,
            machine_zone,
            watch_mode,
            entries: Vec::new(),
            loaded_text: None,
            refused_text: None,
            kept: kept.clone(),
            checked: None,
            state: State::default(),
            next: HashMap::new(),
            running: HashSet::new(),
            catch_up_free_at: now,
            release_at: None,
            commands,
            finished_tx,
            finished_rx,
        };
        (
            engine,
            EngineHandle {
                commands: commands_tx,
                kept,
            },
        )
    }

    /// Runs until `shutdown` completes. Runs in flight are left to finish
    /// on their own only as long as the process lives; their claims make
    /// them `unknown` after a restart if they did not.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) {
        // Watching starts before the first read, so no edit falls between.
        let mut watch = FileWatch::start(&self.files.crons, self.watch_mode, POLL);
        self.start();
        tokio::pin!(shutdown);
        loop {
            let now = self.clock.now();
            self.tick(now);
            let wait = self.wait_from(self.clock.now());
            let sleep = self.clock.sleep(wait);
            let release_at = self.release_at;
            let release = async move {
                match release_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = &mut shutdown => {
                    self.drain().await;
                    return;
                }
                () = sleep => {}
                () = watch.changed() => self.reconcile(),
                Some(command) = self.commands.recv() => self.command(command),
                Some(finished) = self.finished_rx.recv() => self.finish(finished),
                () = release => {
                    self.release_at = None;
                    release_memory();
                }
            }
        }
    }

    /// Lets runs in flight finish (and be recorded) for up to [`DRAIN`].
    async fn drain(&mut self) {
        let deadline = tokio::time::Instant::now() + DRAIN;
        while !self.running.is_empty() {
            match tokio::time::timeout_at(deadline, self.finished_rx.recv()).await {
                Ok(Some(finished)) => self.finish(finished),
                _ => {
                    tracing::warn!(running = ?self.running, "stopping with runs in flight: they will be recorded unknown");
                    return;
                }
            }
        }
    }

    /// Starts from `entries`, read from `text` by the service's check
    /// before the engine ran: the file is read again at start, and if it
    /// changed in between into something that does not parse, these are
    /// the last good schedule that keeps running (never none at all).
    pub fn start_from(&mut self, entries: Vec<Entry>, text: &str) {
        self.checked = Some((entries, text_hash(text)));
    }

    /// Start-up: the state, claims left by a crash, the entries.
    fn start(&mut self) {
        self.state = self.files.state.load();
        let now = self.clock.now();
        let mut lost = Vec::new();
        for (id, entry) in &mut self.state.entries {
            if let Some(claim) = entry.running.take() {
                lost.push(RunRecord {
                    started: Some(claim.started),
                    by: claim.by.clone(),
                    ..RunRecord::skipped(id, claim.slot, Status::Unknown, Some("crabtalk-cron stopped while this ran; it may or may not have finished, and is not run again".into()))
                });
                entry.last_status = Some(Status::Unknown);
            }
        }
        for record in &lost {
            tracing::warn!(entry = %record.entry, slot = %record.scheduled, "a run was cut short by a restart: recorded unknown");
            self.append(record);
        }
        self.save_state();
        if let Some((entries, hash)) = self.checked.take() {
            self.loaded_text = Some(hash);
            self.adopt(entries);
        }
        self.reconcile();
        tracing::info!(entries = self.entries.len(), at = %now, "scheduler started");
    }

    /// Re-reads `crons.toml` and computes every enabled entry's next slot:
    /// what a change of the file costs.
    pub fn reconcile(&mut self) {
        self.reload();
        for entry in &self.entries {
            if !self.next.contains_key(&entry.id) {
                let next = self.next_of(entry);
                self.next.insert(entry.id.clone(), next);
            }
        }
    }

    /// The number of entries in the schedule.
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    /// Re-reads `crons.toml`; a file that does not parse is reported and
    /// the last good entries keep running.
    fn reload(&mut self) {
        let text = match self.files.crons.read_text() {
            Ok(text) => text,
            Err(err) => {
                tracing::error!("{err}; keeping the last good schedule");
                return;
            }
        };
        let hash = text_hash(&text);
        if self.loaded_text == Some(hash) || self.refused_text == Some(hash) {
            return;
        }
        match crate::config::parse_entries(self.files.crons.path(), &text, self.machine_zone) {
            Ok(entries) => {
                self.loaded_text = Some(hash);
                self.refused_text = None;
                self.set_kept(None);
                self.adopt(entries);
            }
            Err(err) => {
                let kept = KeptSchedule {
                    problem: err.to_string(),
                    entries: self.entries.len(),
                };
                tracing::error!("{kept}");
                self.set_kept(Some(kept));
                // A fix back to the last good text is noticed too.
                self.loaded_text = None;
                self.refused_text = Some(hash);
            }
        }
    }

    fn set_kept(&self, kept: Option<KeptSchedule>) {
        if let Ok(mut slot) = self.kept.lock() {
            *slot = kept;
        }
    }

    /// Takes `entries` as the schedule, keeping what is known of each.
    fn adopt(&mut self, entries: Vec<Entry>) {
        let now = self.clock.now();
        let ids: HashSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        let before = self.state.entries.len();
        self.state
            .entries
            .retain(|id, entry| ids.contains(id.as_str()) || entry.running.is_some());
        // Only a change of what the state records is written: an edit of a
        // message or an agent leaves every slot decision as it was.
        let mut changed = self.state.entries.len() != before;
        // Entries whose schedule is new or changed: their next slots are
        // computed afresh; every other entry keeps the one it had.
        let mut rescheduled: HashSet<&str> = HashSet::new();
        let mut key = String::new();
        for entry in &entries {
            key.clear();
            write_schedule_key(entry, &mut key);
            match self.state.entries.get_mut(&entry.id) {
                Some(state) if state.schedule == key => {}
                Some(state) => {
                    // A new schedule starts now: its past slots were never due.
                    let mut fresh = EntryState::new(now, key.clone());
                    fresh.running = state.running.take();
                    *state = fresh;
                    changed = true;
                    rescheduled.insert(&entry.id);
                }
                None => {
                    self.state
                        .entries
                        .insert(entry.id.clone(), EntryState::new(now, key.clone()));
                    changed = true;
                    rescheduled.insert(&entry.id);
                }
            }
        }
        self.next
            .retain(|id, _| ids.contains(id.as_str()) && !rescheduled.contains(id.as_str()));
        drop((ids, rescheduled));
        self.entries = entries;
        if changed {
            self.save_state();
        }
        // The parse of a big file is freed by now; its pages go back to
        // the system shortly after, so a service that read 10,000 entries
        // once does not keep the peak.
        self.release_at = Some(tokio::time::Instant::now() + RELEASE_DELAY);
        tracing::info!(entries = self.entries.len(), "schedule loaded");
    }

    /// How long to sleep: until the earliest next slot, at most
    /// [`MAX_SLEEP`].
    fn wait_from(&mut self, now: DateTime<Utc>) -> Duration {
        let mut earliest: Option<DateTime<Utc>> = None;
        for entry in &self.entries {
            let Some(at) = self.next_of(entry) else {
                continue;
            };
            earliest = Some(earliest.map_or(at, |e| e.min(at)));
        }
        match earliest {
            // Exactly to the slot: woken a hair early by a lagging wall clock,
            // the next round sleeps the rest.
            Some(at) if at > now => (at - now).to_std().unwrap_or(MAX_SLEEP).min(MAX_SLEEP),
            Some(_) => Duration::ZERO,
            None => MAX_SLEEP,
        }
    }

    /// The cached next slot of `entry` after its cursor.
    fn next_of(&self, entry: &Entry) -> Option<DateTime<Utc>> {
        if let Some(cached) = self.next.get(&entry.id) {
            return *cached;
        }
        let cursor = self.state.entries.get(&entry.id)?.cursor();
        entry.schedule.next_after(cursor).map(|slot| slot.at)
    }

    fn tick(&mut self, now: DateTime<Utc>) {
        let mut changed = false;
        for index in 0..self.entries.len() {
            let entry = &self.entries[index];
            let next = match self.next.get(&entry.id) {
                Some(cached) => *cached,
                None => {
                    let next = self.next_of(entry);
                    self.next.insert(entry.id.clone(), next);
                    next
                }
            };
            let Some(first) = next else { continue };
            if first > now {
                continue;
            }
            let entry = entry.clone();
            self.due(&entry, first, now);
            self.next.remove(&entry.id);
            changed = true;
        }
        if changed {
            self.save_state();
        }
    }

    /// Handles the due slots of `entry`: `first` up to now.
    fn due(&mut self, entry: &Entry, first: DateTime<Utc>, now: DateTime<Utc>) {
        let newest = entry
            .schedule
            .last_at_or_before(now)
            .unwrap_or(first)
            .max(first);
        let state = self
            .state
            .entries
            .get_mut(&entry.id)
            .expect("state for every entry");
        state.last_slot = Some(newest);
        if !entry.enabled {
            return;
        }
        let late = now - newest > ON_TIME;
        // Every slot but the newest was missed; the newest too if late.
        let mut missed: Vec<DateTime<Utc>> = Vec::new();
        let mut extra = 0usize;
        let mut cursor = first;
        while cursor < newest {
            if missed.len() == MISSED_LINES {
                missed.remove(0);
                extra += 1;
            }
            missed.push(cursor);
            match entry.schedule.next_after(cursor) {
                Some(slot) => cursor = slot.at,
                None => break,
            }
        }
        let catch_up = late
            && entry.missed == Missed::Once
            && now - newest <= entry.missed_within(newest).as_chrono();
        if late && !catch_up {
            missed.push(newest);
        }
        for (n, slot) in missed.iter().enumerate() {
            let why = if n == 0 && extra > 0 {
                format!("not running at this time (and {extra} earlier slots)")
            } else {
                "not running at this time".to_owned()
            };
            self.append(&RunRecord::skipped(
                &entry.id,
                *slot,
                Status::Missed,
                Some(why),
            ));
        }
        if late && !catch_up {
            return;
        }
        let by = if catch_up { By::CatchUp } else { By::Schedule };
        if entry.is_quiet(newest) {
            self.append(&RunRecord::skipped(
                &entry.id,
                newest,
                Status::Quiet,
                Some("inside the entry's quiet hours".into()),
            ));
            return;
        }
        if self.running.contains(&entry.id) {
            self.append(&RunRecord::skipped(
                &entry.id,
                newest,
                Status::Overlap,
                Some("the previous run of this entry was still going".into()),
            ));
            return;
        }
        let delay = if catch_up {
            let start = self.catch_up_free_at.max(now);
            self.catch_up_free_at =
                start + chrono::Duration::from_std(CATCH_UP_GAP).expect("small");
            (start - now).to_std().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        // A daemon that is down is retried within the slot's grace: its
        // missed_within, but never into the next slot.
        let grace = entry.missed_within(newest).as_chrono();
        let grace = entry
            .schedule
            .period_after(newest)
            .map_or(grace, |period| grace.min(period));
        let retry_until = newest + grace;
        self.launch(entry.clone(), newest, by, retry_until, delay, None);
    }

    /// Claims `slot` on disk, then fires it.
    fn launch(
        &mut self,
        entry: Entry,
        slot: DateTime<Utc>,
        by: By,
        retry_until: DateTime<Utc>,
        delay: Duration,
        waiter: Option<oneshot::Sender<RunRecord>>,
    ) {
        let now = self.clock.now();
        if let Some(state) = self.state.entries.get_mut(&entry.id) {
            state.running = Some(Claim {
                slot,
                started: now,
                by: by.as_str().to_owned(),
            });
        }
        self.save_state();
        self.running.insert(entry.id.clone());
        tracing::debug!(entry = %entry.id, %slot, by = by.as_str(), "firing");
        let firer = self.firer.clone();
        let clock = self.clock.clone();
        let finished = self.finished_tx.clone();
        let id = entry.id.clone();
        tokio::spawn(async move {
            if !delay.is_zero() {
                clock.sleep(delay).await;
            }
            let outcome = firer
                .fire(Job {
                    entry,
                    slot,
                    by,
                    retry_until,
                })
                .await;
            let _ = finished.send(Finished {
                id,
                slot,
                by,
                outcome,
                waiter,
            });
        });
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Reload => self.reload(),
            Command::RunNow {
                id,
                started,
                finished,
            } => {
                self.reload();
                let Some(entry) = self.entries.iter().find(|e| e.id == id).cloned() else {
                    let _ = started.send(Err(format!("no entry `{id}`; cron_list shows the ids")));
                    return;
                };
                if self.running.contains(&id) {
                    let _ = started.send(Err(format!(
                        "`{id}` is running already; try again when it has finished"
                    )));
                    return;
                }
                let now = self.clock.now();
                let retry_until = now + chrono::Duration::seconds(30);
                self.launch(
                    entry,
                    now,
                    By::Manual,
                    retry_until,
                    Duration::ZERO,
                    finished,
                );
                let _ = started.send(Ok(now));
            }
        }
    }

    /// Records a run that ended.
    fn finish(&mut self, finished: Finished) {
        let Finished {
            id,
            slot,
            by,
            outcome,
            waiter,
        } = finished;
        self.running.remove(&id);
        let record = RunRecord {
            entry: id.clone(),
            scheduled: slot,
            started: Some(outcome.started),
            finished: Some(outcome.finished),
            status: outcome.status,
            error: outcome.error.clone(),
            reply: outcome.reply.as_deref().map(preview),
            delivery: outcome.delivery.clone(),
            by: by.as_str().to_owned(),
        };
        match record.status {
            // One line per fire, so `crabup cron logs` shows what ran and
            // where its reply went.
            Status::Ok => match &record.delivery {
                Some(delivery) => tracing::info!(
                    entry = %id, %slot, by = by.as_str(), delivery = %delivery.status,
                    to = %delivery.to, message_ids = ?delivery.message_ids, "fired"
                ),
                None => tracing::info!(entry = %id, %slot, by = by.as_str(), "fired"),
            },
            _ => {
                tracing::warn!(entry = %id, %slot, error = record.error.as_deref().unwrap_or(""), "run failed")
            }
        }
        self.append(&record);
        let mut remove = false;
        if let Some(state) = self.state.entries.get_mut(&id) {
            if state
                .running
                .as_ref()
                .is_some_and(|claim| claim.slot == slot)
            {
                state.running = None;
            }
            state.last_status = Some(outcome.status);
            state.last_run = Some(outcome.finished);
            if outcome.status == Status::Ok {
                state.failures = 0;
                state.last_error = None;
            } else {
                state.failures += 1;
                state.last_error = outcome.error.clone();
                if state.is_failing() {
                    tracing::warn!(entry = %id, failures = state.failures, "entry is failing");
                }
            }
        }
        let one_shot = self.entries.iter().any(|e| e.id == id && e.is_one_shot());
        if one_shot && by != By::Manual && outcome.status == Status::Ok {
            remove = true;
        }
        self.save_state();
        if remove {
            match self
                .files
                .crons
                .edit(self.machine_zone, &Change::Remove { id: id.clone() })
            {
                Ok(_) => {
                    tracing::info!(entry = %id, "one-shot entry done: removed from crons.toml");
                    self.reload();
                }
                Err(err) => {
                    tracing::error!(entry = %id, "cannot remove the finished one-shot entry: {err}")
                }
            }
        }
        if let Some(waiter) = waiter {
            let _ = waiter.send(record);
        }
    }

    fn append(&self, record: &RunRecord) {
        if let Err(err) = self.files.runs.append(record) {
            tracing::error!(
                "cannot append to {}: {err}",
                self.files.runs.path().display()
            );
        }
    }

    fn save_state(&self) {
        if let Err(err) = self.files.state.save(&self.state) {
            tracing::error!("cannot save the scheduler state: {err}");
        }
    }
}

fn text_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// What identifies an entry's schedule: a change of it starts the entry
/// afresh.
pub fn schedule_key(entry: &Entry) -> String {
    let mut key = String::new();
    write_schedule_key(entry, &mut key);
    key
}

/// [`schedule_key`] into `out`, which a loop over many entries reuses.
fn write_schedule_key(entry: &Entry, out: &mut String) {
    use std::fmt::Write as _;
    let _ = write!(
        out,
        "{}={} tz={}",
        entry.written.key,
        entry.written.value,
        entry.schedule.zone()
    );
}

#[cfg(test)]
mod tests;

/// Gives freed heap pages back to the system.
fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory.
    unsafe {
        libc::malloc_trim(0);
    }
}
