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
//!    `overlap` — unless that run is only waiting for the daemon (its
//!    retry window ends where this slot begins): then this slot is
//!    **held** — kept in `cron/state.json` — until that run gives up, and
//!    starts right after, within its own window;
//! 4. otherwise it is **claimed** — written to `cron/state.json` as the
//!    entry's newest slot, running — and only then fired. A restart never
//!    fires a slot at or before an entry's newest slot, and a claim still
//!    running at start is recorded `unknown` (it may or may not have run;
//!    it is not run again).
//!
//! The claims of every slot due in one tick are written together, in one
//! write of the state file, before any of them fires; the runs that end
//! together are recorded with one write too. So fifty entries due in the
//! same second cost one write of the state before they start, whatever
//! the number of entries (RFC 0052).
//!
//! A held slot is on disk, so a crash while it waits cannot lose it: at
//! the next start, its entry's run is `unknown` (as any claim left by a
//! crash) and the held slot starts if its window is still open, or is
//! recorded `missed` saying why. A stopping service leaves held slots
//! for its next start rather than starting turns on its way out.
//!
//! An `at` entry whose time had already passed when the engine first saw
//! it (written into `crons.toml` by hand) is handled as a slot missed
//! while the service was down: a catch-up with `missed = "once"` within
//! `missed_within`, else recorded `missed`; a one-shot whose slot was
//! missed is then removed from the file, as a done one is.

mod clock;
mod handle;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

pub use clock::{Clock, ManualClock, SystemClock};
use handle::Command;
pub(crate) use handle::KeptSchedule;
pub use handle::{EngineHandle, RunNowError};

use crate::config::{Change, CronsFile, Entry, FileWatch, Missed, WatchMode};
use crate::fire::{By, Firer, Job, Outcome};
use crate::runlog::{RunLog, RunRecord, Status, preview};
use crate::schedule::{Timing, Zone};
use crate::state::{Claim, EntryState, Held, State, StateFile};

/// The longest the engine sleeps without looking at the wall clock.
pub(crate) const MAX_SLEEP: Duration = Duration::from_secs(30);

/// A slot noticed up to this late still runs as scheduled.
pub(crate) const ON_TIME: chrono::Duration = chrono::Duration::seconds(60);

/// The pause between catch-ups of different entries after downtime.
pub(crate) const CATCH_UP_GAP: Duration = Duration::from_secs(3);

/// How long runs in flight may take to finish when the service stops;
/// those still running then are `unknown` at the next start.
pub(crate) const DRAIN: Duration = Duration::from_secs(5);

/// How often `crons.toml` is checked when `notify` says nothing.
pub(crate) const POLL: Duration = Duration::from_secs(2);

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

/// A slot about to be claimed and fired.
struct Launch {
    entry: Entry,
    slot: DateTime<Utc>,
    by: By,
    retry_until: DateTime<Utc>,
    delay: Duration,
    waiter: Option<oneshot::Sender<RunRecord>>,
}

/// When a held slot is let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// The run it waited for gave up.
    AfterRun,
    /// The service started again after stopping while it waited.
    AtStart,
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
    /// How many entries the schedule has, for the handle.
    schedule_len: Arc<std::sync::atomic::AtomicUsize>,
    /// The schedule the service checked before it started the engine,
    /// taken at start as the last good one (see [`Engine::start_from`]).
    checked: Option<(Vec<Entry>, u64)>,
    state: State,
    /// Each enabled entry's next slot after its cursor.
    next: HashMap<String, Option<DateTime<Utc>>>,
    /// Entries with a run in flight, and whether that run has reached the
    /// daemon (a run still waiting for it is not a turn that runs).
    running: HashMap<String, Arc<AtomicBool>>,
    /// Set while the service stops: runs that end then release no held
    /// slot (those wait on disk for the next start).
    stopping: bool,
    /// One-shot entries whose slot was decided without running it: to be
    /// removed from `crons.toml`.
    spent: Vec<String>,
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
        let schedule_len = Arc::new(std::sync::atomic::AtomicUsize::new(0));
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
            schedule_len: schedule_len.clone(),
            checked: None,
            state: State::default(),
            next: HashMap::new(),
            running: HashMap::new(),
            stopping: false,
            spent: Vec::new(),
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
                schedule_len,
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
                Some(finished) = self.finished_rx.recv() => {
                    // Every run that has ended by now, recorded in one write.
                    let mut ended = vec![finished];
                    while let Ok(more) = self.finished_rx.try_recv() {
                        ended.push(more);
                    }
                    self.finish(ended);
                }
                () = release => {
                    self.release_at = None;
                    crabtalk_kit::return_free_heap();
                }
            }
        }
    }

    /// Lets runs in flight finish (and be recorded) for up to [`DRAIN`].
    async fn drain(&mut self) {
        self.stopping = true;
        let deadline = tokio::time::Instant::now() + DRAIN;
        while !self.running.is_empty() {
            match tokio::time::timeout_at(deadline, self.finished_rx.recv()).await {
                Ok(Some(finished)) => self.finish(vec![finished]),
                _ => {
                    tracing::warn!(running = ?self.running.keys().collect::<Vec<_>>(), "stopping with runs in flight: they will be recorded unknown");
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
        self.schedule_len
            .store(entries.len(), std::sync::atomic::Ordering::Relaxed);
        self.checked = Some((entries, text_hash(text)));
    }

    /// Start-up: the state, claims left by a crash, the entries, the
    /// slots that were held back when the service stopped.
    fn start(&mut self) {
        self.state = self.files.state.load();
        let now = self.clock.now();
        let mut lost = Vec::new();
        for (id, entry) in &mut self.state.entries {
            // A held slot stays in the state (a crash in between keeps
            // it) until the entries are read and it is decided below.
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
        self.release_held_at_start();
        tracing::info!(entries = self.entries.len(), at = %now, "scheduler started");
    }

    /// The slots held back when the service stopped: the runs they waited
    /// for are gone, so each starts now if its window is still open, else
    /// it is recorded `missed`. One write of the state for all of them.
    fn release_held_at_start(&mut self) {
        let held: Vec<(String, Held)> = self
            .state
            .entries
            .iter_mut()
            .filter_map(|(id, entry)| Some((id.clone(), entry.held.take()?)))
            .collect();
        if held.is_empty() {
            return;
        }
        let launches = held
            .into_iter()
            .filter_map(|(id, held)| self.release(&id, held, Release::AtStart))
            .collect();
        self.claim_and_fire(launches);
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
        self.state.entries.retain(|id, entry| {
            ids.contains(id.as_str()) || entry.running.is_some() || entry.held.is_some()
        });
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
                    let mut fresh = EntryState::new(first_seen(entry, now), key.clone());
                    fresh.running = state.running.take();
                    fresh.held = state.held.take();
                    *state = fresh;
                    changed = true;
                    rescheduled.insert(&entry.id);
                }
                None => {
                    self.state.entries.insert(
                        entry.id.clone(),
                        EntryState::new(first_seen(entry, now), key.clone()),
                    );
                    changed = true;
                    rescheduled.insert(&entry.id);
                }
            }
        }
        self.next
            .retain(|id, _| ids.contains(id.as_str()) && !rescheduled.contains(id.as_str()));
        drop((ids, rescheduled));
        self.entries = entries;
        self.schedule_len
            .store(self.entries.len(), std::sync::atomic::Ordering::Relaxed);
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
        let mut launches = Vec::new();
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
            launches.extend(self.due(&entry, first, now));
            self.next.remove(&entry.id);
            changed = true;
        }
        if changed {
            // Every claim of this tick in one write, before any fires.
            self.claim_and_fire(launches);
        }
        self.remove_spent();
    }

    /// Handles the due slots of `entry`, `first` up to now: records what
    /// is not run, and gives back the slot to run, if any.
    fn due(&mut self, entry: &Entry, first: DateTime<Utc>, now: DateTime<Utc>) -> Option<Launch> {
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
            return None;
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
            if entry.is_one_shot() {
                tracing::warn!(
                    entry = %entry.id, slot = %newest,
                    "a one-shot entry's time passed without it running (missed = {}): recorded missed and removed from crons.toml",
                    entry.missed.as_str()
                );
                self.spent.push(entry.id.clone());
            }
            return None;
        }
        let by = if catch_up { By::CatchUp } else { By::Schedule };
        if entry.is_quiet(newest) {
            self.append(&RunRecord::skipped(
                &entry.id,
                newest,
                Status::Quiet,
                Some("inside the entry's quiet hours".into()),
            ));
            if entry.is_one_shot() {
                self.spent.push(entry.id.clone());
            }
            return None;
        }
        // A daemon that is down is retried within the slot's grace: its
        // missed_within, but never into the next slot.
        let grace = entry.missed_within(newest).as_chrono();
        let grace = entry
            .schedule
            .period_after(newest)
            .map_or(grace, |period| grace.min(period));
        let retry_until = newest + grace;
        if let Some(reached) = self.running.get(&entry.id) {
            if !reached.load(Ordering::SeqCst) {
                // The previous run is only waiting for the daemon, and its
                // window ends where this slot begins: this one goes next.
                self.hold(
                    &entry.id,
                    Held {
                        slot: newest,
                        until: retry_until,
                        by: by.as_str().to_owned(),
                    },
                );
                return None;
            }
            self.append(&RunRecord::skipped(
                &entry.id,
                newest,
                Status::Overlap,
                Some("the previous run of this entry was still going".into()),
            ));
            return None;
        }
        let delay = if catch_up {
            let start = self.catch_up_free_at.max(now);
            self.catch_up_free_at =
                start + chrono::Duration::from_std(CATCH_UP_GAP).expect("small");
            (start - now).to_std().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        Some(Launch {
            entry: entry.clone(),
            slot: newest,
            by,
            retry_until,
            delay,
            waiter: None,
        })
    }

    /// Claims every slot of `launches` in the state (and whatever else
    /// changed), writes it once, and only then fires them.
    fn claim_and_fire(&mut self, launches: Vec<Launch>) {
        let now = self.clock.now();
        for launch in &launches {
            if let Some(state) = self.state.entries.get_mut(&launch.entry.id) {
                state.running = Some(Claim {
                    slot: launch.slot,
                    started: now,
                    by: launch.by.as_str().to_owned(),
                });
            }
        }
        self.save_state();
        for launch in launches {
            self.fire(launch);
        }
    }

    /// Fires a claimed slot.
    fn fire(&mut self, launch: Launch) {
        let Launch {
            entry,
            slot,
            by,
            retry_until,
            delay,
            waiter,
        } = launch;
        let reached = Arc::new(AtomicBool::new(false));
        self.running.insert(entry.id.clone(), reached.clone());
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
                    reached,
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

    /// Removes the one-shot entries whose slot was decided without a run.
    fn remove_spent(&mut self) {
        if self.spent.is_empty() {
            return;
        }
        let spent = std::mem::take(&mut self.spent);
        for id in &spent {
            if let Err(err) = self
                .files
                .crons
                .edit(self.machine_zone, &Change::Remove { id: id.clone() })
            {
                tracing::error!(entry = %id, "cannot remove the spent one-shot entry: {err}");
            }
        }
        self.reload();
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
                    let _ = started.send(Err(RunNowError::NoEntry { id }));
                    return;
                };
                if self.running.contains_key(&id) {
                    let _ = started.send(Err(RunNowError::Running { id }));
                    return;
                }
                let now = self.clock.now();
                let retry_until = now + chrono::Duration::seconds(30);
                self.claim_and_fire(vec![Launch {
                    entry,
                    slot: now,
                    by: By::Manual,
                    retry_until,
                    delay: Duration::ZERO,
                    waiter: finished,
                }]);
                let _ = started.send(Ok(now));
            }
        }
    }

    /// Records runs that ended, with one write of the state; starts the
    /// slots that waited for them.
    fn finish(&mut self, ended: Vec<Finished>) {
        let mut removals = Vec::new();
        let mut waiters = Vec::new();
        let mut next = Vec::new();
        for finished in ended {
            let (id, one_shot_done, waiter, record) = self.record_end(finished);
            if one_shot_done {
                removals.push(id.clone());
            }
            if let Some(waiter) = waiter {
                waiters.push((waiter, record));
            }
            if self.stopping {
                // A held slot waits on disk for the next start.
                continue;
            }
            let held = self
                .state
                .entries
                .get_mut(&id)
                .and_then(|state| state.held.take());
            if let Some(held) = held {
                next.extend(self.release(&id, held, Release::AfterRun));
            }
        }
        self.claim_and_fire(next);
        for id in removals {
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
        for (waiter, record) in waiters {
            let _ = waiter.send(record);
        }
    }

    /// Holds `held` back behind the entry's run that waits for the
    /// daemon. It is saved with the rest of the tick's state. A slot held
    /// before it (possible only when that run's window is longer than the
    /// entry's period, as a manual run's can be) is recorded `missed`.
    fn hold(&mut self, id: &str, held: Held) {
        let state = self
            .state
            .entries
            .get_mut(id)
            .expect("state for every entry");
        let Some(older) = state.held.replace(held) else {
            return;
        };
        self.append(&RunRecord {
            by: older.by,
            ..RunRecord::skipped(
                id,
                older.slot,
                Status::Missed,
                Some("a newer slot of the entry came while this one waited for the entry's previous run".into()),
            )
        });
    }

    /// A held slot let go: started if its entry is still scheduled and its
    /// window open, else recorded `missed` with why.
    fn release(&mut self, id: &str, held: Held, when: Release) -> Option<Launch> {
        let now = self.clock.now();
        let entry = self.entries.iter().find(|e| e.id == id);
        let why = match entry {
            None => Some("the entry was removed while this slot waited for its previous run"),
            Some(entry) if !entry.enabled => {
                Some("the entry was disabled while this slot waited for its previous run")
            }
            Some(_) if now < held.until => None,
            Some(_) => Some(match when {
                Release::AfterRun => {
                    "the previous run waited for the daemon until this slot's window had closed"
                }
                Release::AtStart => {
                    "crabtalk-cron stopped while this slot waited for the entry's previous run, and its window had closed when it started again"
                }
            }),
        };
        if let Some(why) = why {
            tracing::warn!(entry = %id, slot = %held.slot, "a held slot was not run: {why}");
            self.append(&RunRecord {
                by: held.by,
                ..RunRecord::skipped(id, held.slot, Status::Missed, Some(why.to_owned()))
            });
            return None;
        }
        let entry = entry.expect("checked above").clone();
        if when == Release::AtStart {
            tracing::info!(entry = %id, slot = %held.slot, "a slot held back when the service stopped runs now, within its window");
        }
        Some(Launch {
            entry,
            slot: held.slot,
            by: By::from_name(&held.by).unwrap_or(By::Schedule),
            retry_until: held.until,
            delay: Duration::ZERO,
            waiter: None,
        })
    }

    /// Records one run that ended in the run log and the state (not yet
    /// written); whether it was a one-shot done by its schedule.
    fn record_end(
        &mut self,
        finished: Finished,
    ) -> (String, bool, Option<oneshot::Sender<RunRecord>>, RunRecord) {
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
        let done = one_shot && by != By::Manual && outcome.status == Status::Ok;
        (id, done, waiter, record)
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

/// When an entry (or a new schedule of it) counts as first seen: now,
/// except for an `at` already past, which is seen just before its time so
/// that its slot is decided (a catch-up, or missed) rather than never.
fn first_seen(entry: &Entry, now: DateTime<Utc>) -> DateTime<Utc> {
    match entry.schedule.timing() {
        Timing::At(at) if *at <= now => {
            tracing::warn!(
                entry = %entry.id, at = %at,
                "the entry's `at` time had already passed when it was added"
            );
            *at - chrono::Duration::seconds(1)
        }
        _ => now,
    }
}

/// What identifies an entry's schedule (a change of it starts the entry
/// afresh), written into `out`, which a loop over many entries reuses.
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
