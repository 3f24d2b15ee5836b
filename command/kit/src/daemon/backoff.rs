//! [`Backoff`]: how long to wait before trying the daemon again.

use std::time::Duration;

/// Exponential delays between attempts: `first`, doubling up to `cap`.
/// A restarted daemon is found within a fraction of a second; a daemon that
/// stays away costs one connect attempt per `cap`.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    cap: Duration,
    next: Duration,
}

impl Backoff {
    /// The delays a [`DaemonLink`](super::DaemonLink) uses by default.
    pub const DEFAULT_FIRST: Duration = Duration::from_millis(25);
    pub const DEFAULT_CAP: Duration = Duration::from_secs(2);

    pub fn new(first: Duration, cap: Duration) -> Self {
        Self {
            first,
            cap: cap.max(first),
            next: first,
        }
    }

    /// The delay before the next attempt; each call doubles the following
    /// one, up to the cap.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.cap);
        delay
    }

    /// Back to the first delay (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(Self::DEFAULT_FIRST, Self::DEFAULT_CAP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::new(ms(10), ms(50));
        let delays: Vec<_> = (0..5).map(|_| backoff.next_delay()).collect();
        assert_eq!(delays, [ms(10), ms(20), ms(40), ms(50), ms(50)]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), ms(10));
    }
}
