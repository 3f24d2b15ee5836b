//! When to try a server again.
//!
//! The pause before the next attempt starts at `first` and doubles after
//! every attempt, up to `max`. It goes back to `first` only after a
//! connection that stayed up for at least `max`: a server that crashes soon
//! after every start — it answers the handshake, then dies — keeps slowing
//! down instead of being restarted every second forever. A server that ran
//! for a while and then died is a new incident, retried quickly.

use std::time::Duration;

/// `[mcp] restart_backoff_ms` and `restart_backoff_max_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RestartPolicy {
    pub first: Duration,
    pub max: Duration,
}

impl RestartPolicy {
    /// How long a connection must stay up to count as healthy again.
    pub(crate) fn stable_after(&self) -> Duration {
        self.max
    }
}

/// The growing pause of one server.
#[derive(Debug)]
pub(super) struct Backoff {
    policy: RestartPolicy,
    next: Duration,
}

impl Backoff {
    pub(super) fn new(policy: RestartPolicy) -> Self {
        Self {
            policy,
            next: policy.first,
        }
    }

    /// The pause before the next attempt, after one that connected and
    /// stayed up for `uptime` (`None`: it did not connect).
    pub(super) fn pause_after(&mut self, uptime: Option<Duration>) -> Duration {
        if uptime.is_some_and(|uptime| uptime >= self.policy.stable_after()) {
            self.next = self.policy.first;
        }
        let pause = self.next.min(self.policy.max);
        self.next = (self.next * 2).min(self.policy.max);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RestartPolicy = RestartPolicy {
        first: Duration::from_secs(1),
        max: Duration::from_secs(60),
    };

    fn secs(pauses: impl IntoIterator<Item = Duration>) -> Vec<u64> {
        pauses.into_iter().map(|pause| pause.as_secs()).collect()
    }

    #[test]
    fn a_server_that_dies_soon_after_each_start_slows_down_to_the_cap() {
        let mut backoff = Backoff::new(POLICY);
        let short = Some(Duration::from_millis(300));
        let pauses: Vec<Duration> = (0..9).map(|_| backoff.pause_after(short)).collect();
        assert_eq!(secs(pauses), [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn failures_to_connect_slow_down_too() {
        let mut backoff = Backoff::new(POLICY);
        let pauses: Vec<Duration> = (0..4).map(|_| backoff.pause_after(None)).collect();
        assert_eq!(secs(pauses), [1, 2, 4, 8]);
    }

    #[test]
    fn a_connection_that_stayed_up_resets_the_pause() {
        let mut backoff = Backoff::new(POLICY);
        backoff.pause_after(None);
        backoff.pause_after(None);
        assert_eq!(
            backoff.pause_after(Some(Duration::from_secs(59))).as_secs(),
            4
        );
        assert_eq!(
            backoff.pause_after(Some(Duration::from_secs(60))).as_secs(),
            1
        );
        assert_eq!(backoff.pause_after(None).as_secs(), 2);
    }

    #[test]
    fn a_first_pause_above_the_cap_is_capped() {
        let mut backoff = Backoff::new(RestartPolicy {
            first: Duration::from_secs(90),
            max: Duration::from_secs(60),
        });
        assert_eq!(backoff.pause_after(None).as_secs(), 60);
    }
}
