//! `crabtalk-cron run`: the service — one per home (a lock in `cron/`),
//! the engine, and the MCP tools on the port announced in
//! `run/cron.port`.

use std::sync::Arc;

use anyhow::Context;
use crabtalk_home::Home;
use crabtalk_kit::Component;
use crabtalk_kit::FileLock;
use crabtalk_kit::daemon::DaemonLink;

use crate::admin::Admin;
use crate::config::{CronsFile, WatchMode};
use crate::engine::{Clock, Engine, EngineHandle, Files, KeptSchedule, SystemClock};
use crate::fire::daemon::DaemonFirer;
use crate::runlog::RunLog;
use crate::schedule::Zone;
use crate::state::StateFile;

/// Another service holds the home.
#[derive(Debug, thiserror::Error)]
#[error("another crabtalk-cron{} already runs for {home}; stop it first with `crabup cron stop`", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
pub(crate) struct AlreadyRunning {
    pub home: String,
    pub pid: Option<u32>,
}

/// The lock that makes the service one per home.
pub(crate) fn lock_path(home: &Home) -> std::path::PathBuf {
    crate::data_dir(home).join("service.lock")
}

/// Takes the service lock, or says who holds it.
pub(crate) fn take_lock(home: &Home) -> anyhow::Result<FileLock> {
    let path = lock_path(home);
    match FileLock::try_exclusive(&path)
        .with_context(|| format!("cannot open {}", path.display()))?
    {
        Some(lock) => Ok(lock),
        None => Err(AlreadyRunning {
            home: home.root().display().to_string(),
            pid: FileLock::holder(&path),
        }
        .into()),
    }
}

/// This machine's zone, or UTC with a warning.
pub(crate) fn machine_zone() -> Zone {
    Zone::of_this_machine().unwrap_or_else(|err| {
        tracing::warn!("{err}; entries without tz use UTC");
        Zone::UTC
    })
}

/// The engine of `home`, firing through `daemon`.
pub(crate) fn engine(
    home: &Home,
    clock: Arc<dyn Clock>,
    zone: Zone,
    daemon: DaemonLink,
) -> (Engine, EngineHandle) {
    let files = Files {
        crons: CronsFile::of(home),
        runs: RunLog::of(home),
        state: StateFile::of(home),
    };
    let firer = Arc::new(DaemonFirer::new(home.clone(), daemon, clock.clone()));
    Engine::new(clock, firer, files, zone, WatchMode::from_env())
}

/// Runs the service until the component is told to stop.
pub async fn run(component: &Component) -> anyhow::Result<()> {
    let home = component.home();
    let _lock = take_lock(home)?;
    let zone = machine_zone();
    // A file the engine cannot read stops the start (exit 78, with where
    // and what): starting with no schedule at all would lose every entry
    // without a word. A running service keeps its last good schedule
    // instead (the engine) — from the first moment: what was checked here
    // is its first last-good schedule.
    let (checked, text) = crate::check::entries(&CronsFile::of(home), zone)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (mut engine, handle) = engine(home, clock.clone(), zone, component.daemon());
    engine.start_from(checked, &text);
    let admin = Arc::new(Admin::new(home, zone));
    // While crons.toml has a problem, health says so and that the last
    // good schedule keeps running (the engine's), not that nothing runs.
    {
        let admin = admin.clone();
        let handle = handle.clone();
        component
            .problems()
            .watch(move || match handle.kept_schedule() {
                Some(kept) => vec![kept.to_string()],
                // The engine reads an edit once the file has settled; until
                // then a file that does not parse is what it will keep its
                // schedule through, not a file that is not used.
                None => admin.problems_or(|problem| {
                    KeptSchedule {
                        problem,
                        entries: handle.schedule_len(),
                    }
                    .to_string()
                }),
            });
    }
    let router = crate::tools::server(admin, handle, clock).router();
    let engine = tokio::spawn(engine.run(component.shutdown().requested()));
    let served = component.serve_mcp(router).await;
    // Whatever ended serving, the engine stops too (after its drain).
    component.shutdown().trigger();
    let _ = engine.await;
    served.context("serving MCP")
}
