//! Noticing edits to `crons.toml`: a `notify` watch on its folder, plus a
//! check of its modification time and size every poll period for
//! filesystems where watching does not work (network mounts, some
//! containers). Either one wakes the engine, which re-reads the file.

use std::path::PathBuf;
use std::time::Duration;

use notify::Watcher;
use tokio::sync::mpsc;

use super::CronsFile;

/// How long the file must be left alone before it is read again.
const SETTLE: Duration = Duration::from_millis(100);

/// The longest a stream of changes can hold a reload back.
const SETTLE_AT_MOST: Duration = Duration::from_secs(1);

/// How changes are noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// `notify`, with polling as a fallback.
    NotifyAndPoll,
    /// Polling only (`CRABTALK_CRON_WATCH=poll`).
    PollOnly,
}

impl WatchMode {
    /// From `$CRABTALK_CRON_WATCH` (`poll` for polling only).
    pub fn from_env() -> Self {
        match std::env::var("CRABTALK_CRON_WATCH").as_deref() {
            Ok("poll") => Self::PollOnly,
            _ => Self::NotifyAndPoll,
        }
    }
}

/// A running watch; dropping it stops it.
pub(crate) struct FileWatch {
    changes: mpsc::Receiver<()>,
    _watcher: Option<notify::RecommendedWatcher>,
    poller: tokio::task::JoinHandle<()>,
    /// A change taken from `changes` whose file has not yet been left alone
    /// long enough. Kept here, not in the future that waits, so that a
    /// `changed()` dropped mid-wait (the engine's `select!` picked a timer)
    /// does not lose the change: the next call goes on waiting.
    settling: Option<Settling>,
}

/// When a change being waited out may be reported.
#[derive(Debug, Clone, Copy)]
struct Settling {
    /// 100 ms after the latest change.
    quiet_until: tokio::time::Instant,
    /// 1 s after the first.
    deadline: tokio::time::Instant,
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        self.poller.abort();
    }
}

impl FileWatch {
    /// Starts watching `file` (its folder is created if missing).
    pub(crate) fn start(file: &CronsFile, mode: WatchMode, poll: Duration) -> Self {
        let (tx, changes) = mpsc::channel(1);
        let watcher = match mode {
            WatchMode::NotifyAndPoll => watch_folder(file.path().to_owned(), tx.clone()),
            WatchMode::PollOnly => None,
        };
        let file = file.clone();
        // Taken now, not when the task first runs: an edit in between counts.
        let mut last = file.stamp();
        let poller = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(poll);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let now = file.stamp();
                if now != last {
                    last = now;
                    let _ = tx.try_send(());
                }
            }
        });
        Self {
            changes,
            _watcher: watcher,
            poller,
            settling: None,
        }
    }

    /// Resolves when the file may have changed and has then been left
    /// alone for 100 ms (at most 1 s after the first change): a save that
    /// empties the file and then writes it (a shell's `>`, some editors) is
    /// read once, whole, not as an empty schedule followed by the new one.
    ///
    /// Cancel-safe: dropped at any await, no change is lost.
    pub(crate) async fn changed(&mut self) {
        loop {
            let Some(settling) = self.settling else {
                if self.changes.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
                let now = tokio::time::Instant::now();
                self.settling = Some(Settling {
                    quiet_until: now + SETTLE,
                    deadline: now + SETTLE_AT_MOST,
                });
                continue;
            };
            match tokio::time::timeout_at(settling.quiet_until, self.changes.recv()).await {
                Ok(Some(())) if tokio::time::Instant::now() < settling.deadline => {
                    let quiet_until = (tokio::time::Instant::now() + SETTLE).min(settling.deadline);
                    self.settling = Some(Settling {
                        quiet_until,
                        ..settling
                    });
                }
                _ => {
                    self.settling = None;
                    return;
                }
            }
        }
    }
}

fn watch_folder(path: PathBuf, tx: mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let folder = path.parent()?.to_owned();
    let name = path.file_name()?.to_owned();
    if let Err(err) = crate::create_private_dir(&folder) {
        tracing::warn!("cannot create {}: {err}; polling only", folder.display());
        return None;
    }
    let handler = move |event: notify::Result<notify::Event>| {
        // Reading the file (which every reload does) is not a change.
        let ours = event.map_or(true, |event| {
            !matches!(event.kind, notify::EventKind::Access(_))
                && event
                    .paths
                    .iter()
                    .any(|p| p.file_name() == Some(name.as_os_str()))
        });
        if ours {
            let _ = tx.try_send(());
        }
    };
    let watcher = notify::recommended_watcher(handler).and_then(|mut watcher| {
        watcher.watch(&folder, notify::RecursiveMode::NonRecursive)?;
        Ok(watcher)
    });
    match watcher {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            tracing::warn!(
                "cannot watch {} ({err}); polling it instead",
                folder.display()
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine waits for a change in a `select!` beside its timers; a
    /// timer that wins drops the waiting future. A change must survive
    /// that, however often it happens (an entry every second, runs ending).
    #[tokio::test]
    async fn a_change_survives_the_wait_being_dropped_again_and_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crons.toml");
        std::fs::write(&path, "").unwrap();
        let file = CronsFile::at(&path);
        let mut watch = FileWatch::start(&file, WatchMode::PollOnly, Duration::from_millis(10));
        std::fs::write(&path, "[[cron]]\n").unwrap();
        // Each attempt gives up on the wait after 20 ms, shorter than the
        // 100 ms the file must be left alone.
        let attempt = async || {
            tokio::select! {
                () = watch.changed() => Some(()),
                () = tokio::time::sleep(Duration::from_millis(20)) => None,
            }
        };
        let noticed = crabtalk_testkit::poll_within(Duration::from_secs(10), attempt).await;
        assert!(noticed.is_some(), "the change was lost to a dropped wait");
    }
}
