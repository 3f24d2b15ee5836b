//! [`Cache`]: answers kept for a while, bounded in entries and in bytes.
//!
//! Least recently used goes first when either bound is reached; an entry
//! older than the TTL is dropped when it is next looked at (nothing runs
//! in the background: an idle service stays asleep). A value larger than
//! the whole byte budget is not kept. Only successes are put in — the
//! callers never insert a failure.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use crate::answer::SearchAnswer;
use crate::fetch::Page;

/// What the service keeps: search answers and fetched pages, in one cache
/// so one budget bounds both.
#[derive(Debug, Clone)]
pub enum Cached {
    Search(Arc<SearchAnswer>),
    Page(Arc<Page>),
}

/// An LRU cache with a TTL. Its lock is held for a few map operations,
/// never across an await.
pub struct Cache<V> {
    inner: Mutex<Inner<V>>,
    ttl: Duration,
    max_entries: usize,
    max_bytes: usize,
}

struct Inner<V> {
    map: HashMap<String, Slot<V>>,
    /// Use tick → key; the smallest tick is the least recently used.
    order: BTreeMap<u64, String>,
    tick: u64,
    bytes: usize,
}

struct Slot<V> {
    value: V,
    size: usize,
    stored: Instant,
    tick: u64,
}

/// What is in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub entries: usize,
    pub bytes: usize,
}

impl<V: Clone> Cache<V> {
    /// A cache keeping values for `ttl` (zero: nothing is kept).
    pub fn new(ttl: Duration, max_entries: usize, max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                order: BTreeMap::new(),
                tick: 0,
                bytes: 0,
            }),
            ttl,
            max_entries,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value under `key` and its age, if it is there and fresh at `now`.
    pub fn get(&self, key: &str, now: Instant) -> Option<(V, Duration)> {
        let mut inner = self.lock();
        let (stored, old_tick) = {
            let slot = inner.map.get(key)?;
            (slot.stored, slot.tick)
        };
        let age = now.saturating_duration_since(stored);
        if age >= self.ttl {
            inner.remove(key);
            return None;
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.order.remove(&old_tick);
        inner.order.insert(tick, key.to_owned());
        let slot = inner.map.get_mut(key)?;
        slot.tick = tick;
        Some((slot.value.clone(), age))
    }

    /// Keeps `value` (about `size` bytes) under `key`, evicting the least
    /// recently used entries to stay within both bounds.
    pub fn insert(&self, key: String, value: V, size: usize, now: Instant) {
        if self.ttl.is_zero() || self.max_entries == 0 || size > self.max_bytes {
            return;
        }
        let mut inner = self.lock();
        inner.remove(&key);
        inner.tick += 1;
        let tick = inner.tick;
        inner.order.insert(tick, key.clone());
        inner.bytes += size;
        inner.map.insert(
            key,
            Slot {
                value,
                size,
                stored: now,
                tick,
            },
        );
        while inner.map.len() > self.max_entries || inner.bytes > self.max_bytes {
            let Some((_, oldest)) = inner.order.pop_first() else {
                break;
            };
            if let Some(slot) = inner.map.remove(&oldest) {
                inner.bytes -= slot.size;
            }
        }
    }

    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            entries: inner.map.len(),
            bytes: inner.bytes,
        }
    }
}

impl<V> Inner<V> {
    fn remove(&mut self, key: &str) {
        if let Some(slot) = self.map.remove(key) {
            self.order.remove(&slot.tick);
            self.bytes -= slot.size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_the_ttl() {
        let cache = Cache::new(Duration::from_secs(10), 10, 1_000);
        let start = Instant::now();
        cache.insert("a".into(), 1, 10, start);
        assert_eq!(
            cache.get("a", start + Duration::from_secs(9)),
            Some((1, Duration::from_secs(9)))
        );
        assert_eq!(cache.get("a", start + Duration::from_secs(10)), None);
        assert_eq!(
            cache.stats(),
            CacheStats {
                entries: 0,
                bytes: 0
            }
        );
    }

    #[test]
    fn the_least_recently_used_goes_first_by_count_and_by_bytes() {
        let now = Instant::now();
        let cache = Cache::new(Duration::from_secs(60), 3, 100);
        cache.insert("a".into(), 'a', 10, now);
        cache.insert("b".into(), 'b', 10, now);
        cache.insert("c".into(), 'c', 10, now);
        assert!(cache.get("a", now).is_some()); // a is now the freshest
        cache.insert("d".into(), 'd', 10, now);
        assert!(
            cache.get("b", now).is_none(),
            "b was the least recently used"
        );
        assert!(cache.get("a", now).is_some());
        // A big entry pushes out as many as needed to fit 100 bytes.
        cache.insert("e".into(), 'e', 85, now);
        assert_eq!(cache.stats().entries, 2);
        assert!(cache.stats().bytes <= 100);
        assert!(cache.get("e", now).is_some());
        // One larger than the budget is not kept at all.
        cache.insert("huge".into(), 'h', 101, now);
        assert!(cache.get("huge", now).is_none());
        // Replacing a key does not count it twice.
        cache.insert("e".into(), 'E', 5, now);
        assert_eq!(cache.get("e", now).map(|(v, _)| v), Some('E'));
        assert!(cache.stats().bytes <= 15);
    }

    #[test]
    fn a_zero_ttl_keeps_nothing() {
        let cache = Cache::new(Duration::ZERO, 10, 100);
        cache.insert("a".into(), 1, 1, Instant::now());
        assert_eq!(cache.stats().entries, 0);
    }
}
