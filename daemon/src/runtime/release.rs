//! Giving memory back to the operating system once the daemon is quiet.
//!
//! Everything a client can make the daemon hold is bounded and freed when
//! the client goes (RFC 0007); but freeing is not returning. glibc's
//! allocator keeps freed memory in its arenas, fragmented among what is
//! still in use, and returns it only from the top of a heap — so after a
//! burst (long turns, a crowd of clients) the daemon's RSS would stay where
//! the burst took it. `malloc_trim(0)` hands every free page back.
//!
//! It is not free (it walks every arena), so it runs once the daemon has
//! been quiet for [`QUIET`] after something that freed memory — a turn
//! ended, a client's stream went away — and not again until something else
//! does. An idle daemon stays asleep: nothing here wakes it by itself.
//! Elsewhere than Linux with glibc this does nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long nothing may happen before memory is returned.
pub(crate) const QUIET: Duration = Duration::from_secs(2);

/// Whether a release is scheduled.
static SCHEDULED: AtomicBool = AtomicBool::new(false);

/// When something last freed memory, in ms since [`epoch`].
static LAST: AtomicU64 = AtomicU64::new(0);

/// Work going on (turns running): no release meanwhile.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// Marks work going on while it lives.
pub(crate) struct Busy(());

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Work is going on until the returned guard is dropped.
pub(crate) fn busy() -> Busy {
    BUSY.fetch_add(1, Ordering::AcqRel);
    Busy(())
}

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// Notes that something freed memory: returns it to the OS once the daemon
/// has been quiet for [`QUIET`] and no work is going on.
pub(crate) fn soon() {
    LAST.store(now_ms(), Ordering::Release);
    if SCHEDULED.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        SCHEDULED.store(false, Ordering::Release);
        return;
    };
    runtime.spawn(async move {
        loop {
            let since = now_ms().saturating_sub(LAST.load(Ordering::Acquire));
            let wait = QUIET.saturating_sub(Duration::from_millis(since));
            if wait.is_zero() && BUSY.load(Ordering::Acquire) == 0 {
                break;
            }
            tokio::time::sleep(wait.max(Duration::from_millis(100))).await;
        }
        SCHEDULED.store(false, Ordering::Release);
        let _ = tokio::task::spawn_blocking(crabtalk_kit::return_free_heap).await;
    });
}
