//! Giving memory back once a burst of work is over.
//!
//! A search parses up to six result pages and a fetch up to 5 MiB of HTML;
//! the allocator keeps the freed pages for reuse, so after a burst an idle
//! service would stay at its high-water mark. [`Busy`] counts the calls in
//! flight; when the last one ends, freed heap is returned to the system
//! (`malloc_trim`, glibc), and once more [`SETTLE`] later if nothing
//! happened meanwhile — by then the HTTP connections of the burst have
//! closed and their buffers are free too. That one timer runs only after
//! work; an idle service is never woken. The blocking threads that parse pages would each
//! get an allocator arena of their own; [`limit_arenas`] keeps that to two.
//! Elsewhere both are no-ops.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// How long after the last call the second trim comes (past the 30 s idle
/// timeout of pooled connections).
pub(crate) const SETTLE: Duration = Duration::from_secs(40);

/// At most two glibc malloc arenas (call once, at start).
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tuning; called before
    // the service starts its work.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Calls in flight; the last to end trims.
#[derive(Debug, Clone, Default)]
pub(crate) struct Busy {
    in_flight: Arc<AtomicUsize>,
    /// Counts calls begun, so a later trim knows whether work came since.
    begun: Arc<AtomicU64>,
}

impl Busy {
    /// Marks a call in flight until the guard is dropped.
    pub(crate) fn enter(&self) -> BusyGuard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.begun.fetch_add(1, Ordering::SeqCst);
        BusyGuard { busy: self.clone() }
    }
}

pub(crate) struct BusyGuard {
    busy: Busy,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if self.busy.in_flight.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        crabtalk_kit::return_free_heap();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let busy = self.busy.clone();
        let seen = busy.begun.load(Ordering::SeqCst);
        runtime.spawn(async move {
            tokio::time::sleep(SETTLE).await;
            if busy.begun.load(Ordering::SeqCst) == seen
                && busy.in_flight.load(Ordering::SeqCst) == 0
            {
                crabtalk_kit::return_free_heap();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_count_calls_in_flight() {
        let busy = Busy::default();
        let first = busy.enter();
        let second = busy.enter();
        assert_eq!(busy.in_flight.load(Ordering::SeqCst), 2);
        drop(first);
        drop(second);
        assert_eq!(busy.in_flight.load(Ordering::SeqCst), 0);
    }
}
