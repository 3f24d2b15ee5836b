//! The engine's clock: the wall clock and a way to wait. Tests put a
//! [`ManualClock`] in its place and move time themselves.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use tokio::sync::watch;

/// Wall-clock time and waiting.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
    /// Waits for `duration` of this clock's time.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The system's wall clock; waits on tokio's monotonic timer (which the
/// engine never trusts for more than 30 s, see `MAX_SLEEP`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A clock that moves only when told to.
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    changed: watch::Sender<DateTime<Utc>>,
}

impl ManualClock {
    pub fn new(now: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(now),
            changed: watch::Sender::new(now),
        }
    }

    /// Sets the time (forwards or backwards) and wakes sleepers whose time
    /// has come.
    pub fn set(&self, now: DateTime<Utc>) {
        *self.now.lock().expect("clock lock") = now;
        self.changed.send_replace(now);
    }

    pub fn advance(&self, by: Duration) {
        let now = self.now() + chrono::Duration::from_std(by).expect("a short duration");
        self.set(now);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().expect("clock lock")
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let until =
            self.now() + chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX);
        let mut changes = self.changed.subscribe();
        Box::pin(async move {
            while *changes.borrow_and_update() < until {
                if changes.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}
