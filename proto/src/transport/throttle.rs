//! [`Throttle`]: failed handshakes cost their source more time each.
//!
//! Every first frame of a token-protected connection is an *attempt*:
//! a `Hello` with the right token succeeds; anything else (a wrong token,
//! another message, a frame too large to be a `Hello`, bytes that do not
//! decode) fails. After `n` failures from one source, its next attempt is
//! judged only `base · 2ⁿ⁻¹` (at most `max`) after the last failure, and
//! attempts from one source are judged one at a time — so a source that
//! keeps guessing gets an answer every few seconds instead of thousands of
//! times a second, however many connections it opens (and those it opens
//! wait in the listener's bounded set of unadmitted connections).
//!
//! A success forgets the source's failures, and so does a quiet spell of
//! [`FORGET_AFTER`]. A source is an IPv4 address, or an IPv6 /64 (one host
//! usually owns a whole /64). The table holds at most [`MAX_SOURCES`]
//! sources: when it is full, sources whose failures are forgotten go first,
//! then the one that failed longest ago.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

/// The first pause after a failure; it doubles with every further one.
pub(crate) const RETRY_DELAY: Duration = Duration::from_millis(100);

/// The longest pause (kept under the handshake timeout, so a client that
/// waits its turn is still judged).
pub(crate) const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

/// A source that has not failed for this long starts again from nothing.
pub(crate) const FORGET_AFTER: Duration = Duration::from_secs(10 * 60);

/// Sources remembered at most.
pub(crate) const MAX_SOURCES: usize = 1024;

/// Where connections come from, as far as throttling is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Source(IpAddr);

impl Source {
    pub(crate) fn of(addr: IpAddr) -> Self {
        let addr = match addr {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let mut octets = v6.octets();
                    octets[8..].fill(0);
                    IpAddr::from(octets)
                }
            },
            v4 => v4,
        };
        Self(addr)
    }
}

/// How long failures cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Delays {
    pub(crate) base: Duration,
    pub(crate) max: Duration,
}

impl Default for Delays {
    fn default() -> Self {
        Self {
            base: RETRY_DELAY,
            max: MAX_RETRY_DELAY,
        }
    }
}

impl Delays {
    /// The pause before the next attempt after `failures` failures.
    fn after(self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let doublings = (failures - 1).min(31);
        self.base
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// One source's record.
#[derive(Debug, Default)]
struct Record {
    failures: u32,
    last_failure: Option<Instant>,
}

impl Record {
    fn forgotten(&self, now: Instant) -> bool {
        self.last_failure
            .is_none_or(|last| now.saturating_duration_since(last) >= FORGET_AFTER)
    }
}

/// The failed-handshake table of one listener.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    sources: Mutex<HashMap<Source, Arc<tokio::sync::Mutex<Record>>>>,
    delays: Delays,
}

/// The right to have one first frame judged; say how it went.
pub(crate) struct Attempt {
    record: OwnedMutexGuard<Record>,
}

impl Throttle {
    pub(crate) fn new(delays: Delays) -> Self {
        Self {
            sources: Mutex::default(),
            delays,
        }
    }

    /// Waits until `source` may be judged again: after any attempt of the
    /// same source being judged, and after its penalty.
    pub(crate) async fn attempt(&self, source: Source) -> Attempt {
        let record = self.record(source);
        let mut record = record.lock_owned().await;
        let now = Instant::now();
        if record.forgotten(now) {
            *record = Record::default();
        }
        if let Some(last) = record.last_failure {
            tokio::time::sleep_until(last + self.delays.after(record.failures)).await;
        }
        Attempt { record }
    }

    fn record(&self, source: Source) -> Arc<tokio::sync::Mutex<Record>> {
        let mut sources = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(record) = sources.get(&source) {
            return record.clone();
        }
        if sources.len() >= MAX_SOURCES {
            make_room(&mut sources);
        }
        sources.entry(source).or_default().clone()
    }

    /// How many sources are remembered (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Drops forgotten sources; if none is, the one that failed longest ago.
/// A record being judged right now (locked) is left alone.
fn make_room(sources: &mut HashMap<Source, Arc<tokio::sync::Mutex<Record>>>) {
    let now = Instant::now();
    sources.retain(|_, record| match record.try_lock() {
        Ok(record) => !record.forgotten(now),
        Err(_) => true,
    });
    if sources.len() < MAX_SOURCES {
        return;
    }
    let oldest = sources
        .iter()
        .filter_map(|(source, record)| Some((*source, record.try_lock().ok()?.last_failure)))
        .min_by_key(|(_, last)| *last)
        .map(|(source, _)| source);
    if let Some(oldest) = oldest {
        sources.remove(&oldest);
    }
}

impl Attempt {
    pub(crate) fn failed(mut self) {
        self.record.failures = self.record.failures.saturating_add(1);
        self.record.last_failure = Some(Instant::now());
    }

    pub(crate) fn succeeded(mut self) {
        *self.record = Record::default();
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn v4(last: u8) -> Source {
        Source::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn delays_double_up_to_the_maximum() {
        let delays = Delays {
            base: Duration::from_millis(100),
            max: Duration::from_secs(5),
        };
        let got: Vec<u64> = (0..10)
            .map(|n| delays.after(n).as_millis() as u64)
            .collect();
        assert_eq!(got, [0, 100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        assert_eq!(delays.after(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn an_ipv6_host_is_its_slash_64_and_mapped_ipv4_is_ipv4() {
        let a: Ipv6Addr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a.into()), Source::of(b.into()));
        assert_ne!(Source::of(a.into()), Source::of(c.into()));
        let mapped: Ipv6Addr = "::ffff:10.0.0.7".parse().unwrap();
        assert_eq!(Source::of(mapped.into()), v4(7));
    }

    #[tokio::test(start_paused = true)]
    async fn each_failure_makes_the_next_attempt_of_that_source_wait_longer() {
        let throttle = Throttle::new(Delays {
            base: Duration::from_millis(100),
            max: Duration::from_secs(5),
        });
        let mut waits = Vec::new();
        for _ in 0..5 {
            let asked = Instant::now();
            let attempt = throttle.attempt(v4(1)).await;
            waits.push(asked.elapsed().as_millis());
            attempt.failed();
        }
        assert_eq!(waits, [0, 100, 200, 400, 800]);
        // Another source is not affected.
        let asked = Instant::now();
        throttle.attempt(v4(2)).await.failed();
        assert_eq!(asked.elapsed(), Duration::ZERO);
        // A success forgets the failures.
        throttle.attempt(v4(1)).await.succeeded();
        let asked = Instant::now();
        throttle.attempt(v4(1)).await.failed();
        assert_eq!(asked.elapsed(), Duration::ZERO);
        // So does a quiet spell.
        tokio::time::advance(FORGET_AFTER).await;
        let asked = Instant::now();
        throttle.attempt(v4(1)).await.failed();
        assert_eq!(asked.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_attempts_of_one_source_are_judged_one_at_a_time() {
        let throttle = Arc::new(Throttle::new(Delays {
            base: Duration::from_millis(100),
            max: Duration::from_secs(5),
        }));
        let started = Instant::now();
        let attempts: Vec<_> = (0..4)
            .map(|_| {
                let throttle = throttle.clone();
                tokio::spawn(async move {
                    let attempt = throttle.attempt(v4(9)).await;
                    let judged = started.elapsed();
                    attempt.failed();
                    judged
                })
            })
            .collect();
        let mut judged = Vec::new();
        for attempt in attempts {
            judged.push(attempt.await.unwrap().as_millis());
        }
        judged.sort();
        assert_eq!(judged, [0, 100, 300, 700]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded() {
        let throttle = Throttle::default();
        for n in 0..(MAX_SOURCES as u32 + 500) {
            let source = Source::of(IpAddr::V4(Ipv4Addr::from(n)));
            throttle.attempt(source).await.failed();
        }
        assert!(throttle.len() <= MAX_SOURCES, "{}", throttle.len());
    }
}
