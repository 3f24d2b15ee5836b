//! [`MetaWriter`]: a conversation's metadata file, written in the
//! background once its changes settle, or at once when asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::storage::Meta;

/// How long a conversation must go without a change before its metadata
/// file is rewritten. The sidecar is a cache of what the log says (counts,
/// times); rewriting it costs two fsyncs and a rename.
const META_QUIET: Duration = Duration::from_secs(1);

/// The longest a change waits for the conversation to go quiet: a
/// conversation that is never quiet is written this often.
const META_MAX_WAIT: Duration = Duration::from_secs(10);

/// Background metadata writes across the daemon run one at a time: a
/// burst of conversations that went quiet together does not become a burst
/// of fsyncs on as many threads, beside the turns still running.
static WRITING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Writes a conversation's metadata file in the background: once the
/// conversation has had no change for [`META_QUIET`], or [`META_MAX_WAIT`]
/// after the first change not yet written, whichever comes first.
/// [`MetaWriter::flush`] writes whatever is pending at once (before files
/// move, at shutdown).
///
/// While a conversation's turns keep coming, its file is not rewritten
/// under them (a profile of 64 busy conversations had their writes, up to
/// one per conversation per second, in the middle of the turns' tail). A
/// crash loses at most the last [`META_MAX_WAIT`] of changes to the file;
/// the log has them all, and the counts are taken from the log.
pub(super) struct MetaWriter {
    path: std::path::PathBuf,
    pending: Mutex<Option<Meta>>,
    /// When the pending metadata last changed.
    changed: Mutex<Instant>,
    scheduled: AtomicBool,
    /// Serialises saves, so an older snapshot never overwrites a newer one.
    saving: Mutex<()>,
}

impl MetaWriter {
    pub(super) fn new(path: std::path::PathBuf) -> Self {
        Self {
            path,
            pending: Mutex::new(None),
            changed: Mutex::new(Instant::now()),
            scheduled: AtomicBool::new(false),
            saving: Mutex::new(()),
        }
    }

    pub(super) fn schedule(self: &Arc<Self>, meta: Meta) {
        *self.pending.lock() = Some(meta);
        let now = Instant::now();
        *self.changed.lock() = now;
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let writer = self.clone();
        tokio::spawn(async move {
            let latest = now + META_MAX_WAIT;
            loop {
                let due = (*writer.changed.lock() + META_QUIET).min(latest);
                if Instant::now() >= due {
                    break;
                }
                tokio::time::sleep_until(due).await;
            }
            let _one_at_a_time = WRITING.acquire().await;
            writer.scheduled.store(false, Ordering::Release);
            let _ = tokio::task::spawn_blocking(move || writer.flush()).await;
        });
    }

    /// Writes the pending metadata now, if there is any.
    pub(super) fn flush(&self) {
        let _saving = self.saving.lock();
        let Some(meta) = self.pending.lock().take() else {
            return;
        };
        if let Err(err) = meta.save(&self.path) {
            tracing::warn!("cannot save {}: {err}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(title: &str) -> Meta {
        Meta {
            title: title.to_owned(),
            ..Meta::default()
        }
    }

    /// A writer of a file in a fresh folder (kept while the folder is).
    fn writer() -> (tempfile::TempDir, Arc<MetaWriter>) {
        let dir = tempfile::tempdir().unwrap();
        let writer = Arc::new(MetaWriter::new(dir.path().join("a.meta.json")));
        (dir, writer)
    }

    fn written(path: &std::path::Path) -> Option<String> {
        Meta::load(path).ok().flatten().map(|meta| meta.title)
    }

    /// Lets a save that is due run: real time for the blocking pool's
    /// thread, without moving the paused clock.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_conversation_is_written_when_it_goes_quiet() {
        let (_dir, writer) = writer();
        // A change every half second for 3 s: never quiet for a second.
        for n in 0..6 {
            writer.schedule(meta(&format!("turn {n}")));
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(written(&writer.path), None, "written under turn {n}");
        }
        let quiet = Instant::now();
        for _ in 0..40 {
            if written(&writer.path).is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            settle().await;
        }
        assert_eq!(written(&writer.path).as_deref(), Some("turn 5"));
        assert!(
            quiet.elapsed() >= Duration::from_millis(500),
            "{:?}",
            quiet.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_conversation_that_is_never_quiet_is_still_written() {
        let (_dir, writer) = writer();
        let started = Instant::now();
        let mut n = 0;
        while written(&writer.path).is_none() {
            writer.schedule(meta(&format!("turn {n}")));
            n += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
            settle().await;
            assert!(
                started.elapsed() < META_MAX_WAIT + Duration::from_secs(5),
                "not written within {META_MAX_WAIT:?}"
            );
        }
        assert!(
            started.elapsed() >= META_MAX_WAIT,
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn flush_writes_at_once() {
        let (_dir, writer) = writer();
        writer.schedule(meta("now"));
        writer.flush();
        assert_eq!(written(&writer.path).as_deref(), Some("now"));
    }
}
