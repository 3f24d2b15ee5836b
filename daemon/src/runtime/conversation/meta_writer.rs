//! [`MetaWriter`]: a conversation's metadata file, written in the
//! background after changes settle, or at once when asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::storage::Meta;

/// How long metadata changes are gathered before the file is rewritten.
/// The sidecar is a cache of what the log says (counts, times); rewriting
/// it after every turn would cost two fsyncs and a rename per turn.
const META_DEBOUNCE: Duration = Duration::from_secs(1);

/// Writes a conversation's metadata file in the background: changes within
/// [`META_DEBOUNCE`] are written once, and [`MetaWriter::flush`] writes
/// whatever is pending at once (before files move, at shutdown).
pub(super) struct MetaWriter {
    pub(super) path: std::path::PathBuf,
    pub(super) pending: Mutex<Option<Meta>>,
    pub(super) scheduled: AtomicBool,
    /// Serialises saves, so an older snapshot never overwrites a newer one.
    pub(super) saving: Mutex<()>,
}

impl MetaWriter {
    pub(super) fn schedule(self: &Arc<Self>, meta: Meta) {
        *self.pending.lock() = Some(meta);
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let writer = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(META_DEBOUNCE).await;
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
