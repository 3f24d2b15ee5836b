//! [`Throttle`]: at most N requests to the Bot API in any window of one
//! second, as Telegram sees them.
//!
//! Telegram counts requests when they arrive, and a request arrives some
//! time between being sent and being answered. So a request may start
//! only while fewer than N requests are in flight or were answered within
//! the last window: then no window of that length, wherever it lies, can
//! hold more than N arrivals. Waiters are served in the order they came
//! (a fair turnstile), so a busy chat cannot starve the others.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Telegram's global limit for a bot: 30 messages a second.
pub(crate) const GLOBAL_PER_SECOND: usize = 30;

/// The global limiter.
pub(crate) struct Throttle {
    max: usize,
    window: Duration,
    state: parking_lot::Mutex<State>,
    turnstile: tokio::sync::Mutex<()>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    in_flight: usize,
    /// When recent requests were answered, oldest first.
    ended: VecDeque<Instant>,
}

/// A request under way; dropping it marks it answered.
pub(crate) struct Permit {
    throttle: Arc<Throttle>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.throttle.state.lock();
        state.in_flight -= 1;
        state.ended.push_back(Instant::now());
        drop(state);
        self.throttle.changed.notify_waiters();
    }
}

impl Throttle {
    pub(crate) fn new(max: usize, window: Duration) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            window,
            state: parking_lot::Mutex::new(State::default()),
            turnstile: tokio::sync::Mutex::new(()),
            changed: Notify::new(),
        })
    }

    /// Telegram's limit: [`GLOBAL_PER_SECOND`] per second.
    pub(crate) fn telegram() -> Arc<Self> {
        Self::new(GLOBAL_PER_SECOND, Duration::from_secs(1))
    }

    /// A permit if a request may start right now and nobody waits for
    /// one (for what may be skipped under pressure, like "typing…").
    pub(crate) fn try_acquire(self: &Arc<Self>) -> Option<Permit> {
        let _turn = self.turnstile.try_lock().ok()?;
        let mut state = self.state.lock();
        let now = Instant::now();
        while state
            .ended
            .front()
            .is_some_and(|at| now.duration_since(*at) >= self.window)
        {
            state.ended.pop_front();
        }
        if state.in_flight + state.ended.len() < self.max {
            state.in_flight += 1;
            return Some(Permit {
                throttle: self.clone(),
            });
        }
        None
    }

    /// Waits until a request may start.
    pub(crate) async fn acquire(self: &Arc<Self>) -> Permit {
        let _turn = self.turnstile.lock().await;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let wait = {
                let mut state = self.state.lock();
                let now = Instant::now();
                while state
                    .ended
                    .front()
                    .is_some_and(|at| now.duration_since(*at) >= self.window)
                {
                    state.ended.pop_front();
                }
                if state.in_flight + state.ended.len() < self.max {
                    state.in_flight += 1;
                    return Permit {
                        throttle: self.clone(),
                    };
                }
                state
                    .ended
                    .front()
                    .map(|at| self.window.saturating_sub(now.duration_since(*at)))
            };
            match wait {
                Some(delay) => tokio::time::sleep(delay).await,
                None => changed.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn no_window_holds_more_than_the_limit() {
        let throttle = Throttle::new(5, Duration::from_secs(1));
        let started = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..12 {
            let permit = throttle.acquire().await;
            starts.push(started.elapsed());
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(permit);
        }
        for (i, at) in starts.iter().enumerate() {
            let in_window = starts[i..]
                .iter()
                .filter(|later| **later < *at + Duration::from_secs(1))
                .count();
            assert!(in_window <= 5, "{starts:?}");
        }
        assert!(starts[11] >= Duration::from_secs(2), "{starts:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn skippable_requests_get_no_permit_when_the_window_is_full() {
        let throttle = Throttle::new(2, Duration::from_secs(1));
        let a = throttle.try_acquire().expect("room");
        let _b = throttle.acquire().await;
        assert!(throttle.try_acquire().is_none());
        drop(a);
        assert!(
            throttle.try_acquire().is_none(),
            "answered within the window"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(throttle.try_acquire().is_some());
    }
}
