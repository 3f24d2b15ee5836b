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
//!
//! The pages of its own code that only start-up used (RFC 0042) go back
//! the same way: once the daemon has settled ([`crabtalk_kit::SETTLE`]) and
//! is quiet, not at a fixed time after start. Dropped in the middle of a
//! client's turns, they were code the next turn ran, and reading it back
//! cost that turn about 10 ms.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long nothing may happen before memory is returned.
pub(crate) const QUIET: Duration = Duration::from_secs(2);

/// Whether a release is scheduled.
static SCHEDULED: AtomicBool = AtomicBool::new(false);

/// When the daemon was last active (a turn ended, a client's stream went,
/// a ping), in ms since [`epoch`], plus one; 0 if it never was.
static LAST: AtomicU64 = AtomicU64::new(0);

/// Work going on (turns running): no release meanwhile.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// The last work going on ended.
static IDLE: Notify = Notify::const_new();

/// Marks work going on while it lives.
pub(crate) struct Busy(());

impl Drop for Busy {
    fn drop(&mut self) {
        if BUSY.fetch_sub(1, Ordering::AcqRel) == 1 {
            IDLE.notify_waiters();
        }
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

/// Notes that the daemon is active: nothing is given back for [`QUIET`].
pub(crate) fn touch() {
    LAST.store(now_ms() + 1, Ordering::Release);
}

/// How long until the daemon has been quiet for [`QUIET`], with no turn
/// running from now on: zero if it has (or was never active).
fn until_quiet() -> Duration {
    match LAST.load(Ordering::Acquire) {
        0 => Duration::ZERO,
        last => {
            let since = (now_ms() + 1).saturating_sub(last);
            QUIET.saturating_sub(Duration::from_millis(since))
        }
    }
}

/// Waits until the daemon has been quiet for [`QUIET`] with no turn
/// running. While turns run it sleeps until the last one ends, without a
/// timer.
async fn quiet() {
    loop {
        let idle = IDLE.notified();
        let mut idle = std::pin::pin!(idle);
        // Registered before the check, so an end in between is not missed.
        idle.as_mut().enable();
        if BUSY.load(Ordering::Acquire) > 0 {
            idle.await;
            continue;
        }
        let wait = until_quiet();
        if wait.is_zero() {
            return;
        }
        tokio::time::sleep(wait).await;
    }
}

/// Gives back the pages of code only start-up used (RFC 0042), once: when
/// the daemon has settled and then is quiet. An idle daemon does it at
/// [`crabtalk_kit::SETTLE`] after start; a busy one at its first pause.
pub(crate) async fn startup_pages_when_quiet() {
    tokio::time::sleep(crabtalk_kit::SETTLE).await;
    quiet().await;
    let _ = tokio::task::spawn_blocking(crabtalk_kit::release_startup_pages).await;
}

/// Notes that something freed memory: returns it to the OS once the daemon
/// has been quiet for [`QUIET`] and no work is going on.
pub(crate) fn soon() {
    touch();
    if SCHEDULED.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        SCHEDULED.store(false, Ordering::Release);
        return;
    };
    runtime.spawn(async move {
        quiet().await;
        SCHEDULED.store(false, Ordering::Release);
        let _ = tokio::task::spawn_blocking(crabtalk_kit::return_free_heap).await;
    });
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// While a turn runs, the wait for quiet sleeps until the turn ends,
    /// instead of waking on a timer (it used to, every 100 ms); once the
    /// turn has ended, the daemon is quiet [`QUIET`] later.
    #[tokio::test]
    async fn the_wait_for_quiet_sleeps_through_a_turn_without_a_timer() {
        let polls = Arc::new(AtomicUsize::new(0));
        let turn = busy();
        let waiting = tokio::spawn({
            let polls = polls.clone();
            async move {
                let mut quiet = pin!(quiet());
                std::future::poll_fn(|cx| {
                    polls.fetch_add(1, Ordering::Relaxed);
                    quiet.as_mut().poll(cx)
                })
                .await;
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        let polled = polls.load(Ordering::Relaxed);
        assert!(
            polled <= 2,
            "the wait for quiet woke {polled} times in the first second of a turn"
        );
        assert!(!waiting.is_finished());
        touch();
        let ended = Instant::now();
        drop(turn);
        tokio::time::timeout(QUIET * 5, waiting)
            .await
            .expect("quiet comes after the turn")
            .unwrap();
        assert!(ended.elapsed() >= QUIET.saturating_sub(Duration::from_millis(50)));
    }
}
