//! [`Budget`]: how long one page's processing may run, and whether its
//! caller is still waiting.
//!
//! Making a page readable runs on a blocking thread, which nothing can
//! stop from outside. Its loops ask the budget between pieces of work and
//! stop when the deadline has passed or the call was given up (the MCP
//! call cancelled, the client gone): a hostile page costs at most the
//! deadline, never more, and nothing once nobody waits for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why processing stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The deadline passed.
    Deadline,
    /// Nobody waits for the answer any more.
    Cancelled,
}

/// A deadline and a cancellation flag, shared by the caller and the work.
#[derive(Debug, Clone)]
pub struct Budget {
    started: Instant,
    deadline: Instant,
    allowed: Duration,
    cancelled: Arc<AtomicBool>,
}

impl Budget {
    /// `allowed` from now.
    pub fn new(allowed: Duration) -> Self {
        let started = Instant::now();
        Self {
            started,
            deadline: started + allowed,
            allowed,
            cancelled: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A budget that never runs out (tests of the pure functions).
    pub fn unlimited() -> Self {
        Self::new(Duration::from_secs(365 * 24 * 3600))
    }

    /// Continue, or why not.
    pub fn check(&self) -> Result<(), Stopped> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Err(Stopped::Cancelled);
        }
        if Instant::now() >= self.deadline {
            return Err(Stopped::Deadline);
        }
        Ok(())
    }

    /// Tells the work to stop.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn allowed(&self) -> Duration {
        self.allowed
    }

    /// How long since the budget was given.
    pub fn spent(&self) -> Duration {
        self.started.elapsed()
    }

    /// A guard that cancels the budget when dropped: held by the caller,
    /// so a caller that goes away stops the work.
    pub fn cancel_on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// Cancels its budget when dropped.
pub struct CancelOnDrop(Budget);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_stops_at_its_deadline_or_when_cancelled() {
        let budget = Budget::new(Duration::from_secs(60));
        assert_eq!(budget.check(), Ok(()));
        drop(budget.cancel_on_drop());
        assert_eq!(budget.check(), Err(Stopped::Cancelled));
        let spent = Budget::new(Duration::ZERO);
        assert_eq!(spent.check(), Err(Stopped::Deadline));
    }
}
