//! Idle conversations leave RAM after `[conversations] idle_evict_secs`
//! without use; their next use loads them from disk again.
//!
//! A sweeper looks for them every half of that time (at most once a minute,
//! at most four times a second), so a conversation stays at most one and a
//! half idle times after its last use. It reads the setting from the current
//! snapshot each round, and a reload wakes it, so a changed setting applies
//! at once.

use std::sync::Arc;
use std::time::Duration;

use super::Runtime;

/// The longest wait between two sweeps.
const MAX_SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// The shortest wait between two sweeps.
const MIN_SWEEP_INTERVAL: Duration = Duration::from_millis(250);

/// How long the sweeper waits between looks for conversations idle for
/// `idle`.
pub(super) fn sweep_interval(idle: Duration) -> Duration {
    (idle / 2).clamp(MIN_SWEEP_INTERVAL, MAX_SWEEP_INTERVAL)
}

impl Runtime {
    /// Evicts idle conversations until the task is dropped.
    pub(crate) async fn evict_idle_conversations(self: Arc<Self>) {
        let mut reloads = self.reloads.subscribe();
        loop {
            let idle = Duration::from_secs(self.snapshot().config.conversations.idle_evict_secs);
            tokio::select! {
                () = tokio::time::sleep(sweep_interval(idle)) => {}
                changed = reloads.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // Start over with the new setting.
                    continue;
                }
            }
            let evicted = self.conversations.evict_idle(idle);
            if evicted > 0 {
                tracing::debug!("evicted {evicted} conversations idle for {idle:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_follows_the_idle_time_within_bounds() {
        let secs = Duration::from_secs;
        assert_eq!(sweep_interval(secs(1800)), MAX_SWEEP_INTERVAL);
        assert_eq!(sweep_interval(secs(120)), MAX_SWEEP_INTERVAL);
        assert_eq!(sweep_interval(secs(30)), secs(15));
        assert_eq!(sweep_interval(secs(1)), Duration::from_millis(500));
        assert_eq!(sweep_interval(Duration::ZERO), MIN_SWEEP_INTERVAL);
    }
}
