//! How much CPU a process uses, for idle checks.
//!
//! A service that sits idle must cost next to nothing: no busy polling, no
//! timers firing many times a second. [`CpuTime::of`] reads a process's
//! user + system time from `/proc/<pid>/stat` (Linux); the difference over
//! a window of wall time gives its share of one core. [`of_threads`]
//! reads the CPU time of some of its threads, by name.

use std::time::{Duration, Instant};

/// CPU time a process has used so far (user + system, its own threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CpuTime(pub Duration);

impl CpuTime {
    /// The CPU time of `pid` so far; `None` where `/proc` cannot tell
    /// (not Linux, or the process is gone).
    pub fn of(pid: u32) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count
        // fields after its closing parenthesis. utime and stime are fields
        // 14 and 15, so the 12th and 13th after it.
        let after_name = &stat[stat.rfind(')')? + 1..];
        let mut fields = after_name.split_whitespace().skip(11);
        let utime: u64 = fields.next()?.parse().ok()?;
        let stime: u64 = fields.next()?.parse().ok()?;
        Some(Self(ticks(utime + stime)))
    }
}

/// CPU time of `pid`'s threads whose names start with `prefix`, summed,
/// and how many there are (`/proc/<pid>/task/*/schedstat`, nanoseconds);
/// `None` where `/proc` cannot tell.
pub fn of_threads(pid: u32, prefix: &str) -> Option<(usize, Duration)> {
    let mut threads = 0;
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let dir = task.ok()?.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("schedstat")).unwrap_or_default();
        threads += 1;
        total += stat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some((threads, Duration::from_nanos(total)))
}

/// Clock ticks to time.
fn ticks(count: u64) -> Duration {
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(100);
    Duration::from_nanos(count.saturating_mul(1_000_000_000) / per_second)
}

/// What a process used over a measured window.
#[derive(Debug, Clone, Copy)]
pub struct CpuUse {
    pub cpu: Duration,
    pub wall: Duration,
}

impl CpuUse {
    /// Its share of one core, in percent.
    pub fn percent_of_a_core(&self) -> f64 {
        100.0 * self.cpu.as_secs_f64() / self.wall.as_secs_f64().max(f64::EPSILON)
    }
}

/// Measures `pid`'s CPU use over `window` of wall time (awaiting, so the
/// test's own runtime stays free). `None` where `/proc` cannot tell.
pub async fn measure_cpu(pid: u32, window: Duration) -> Option<CpuUse> {
    let (before, started) = (CpuTime::of(pid)?, Instant::now());
    tokio::time::sleep(window).await;
    let (after, wall) = (CpuTime::of(pid)?, started.elapsed());
    Some(CpuUse {
        cpu: after.0.saturating_sub(before.0),
        wall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_named_thread_s_work_is_counted_under_its_name() {
        let worker = std::thread::Builder::new()
            .name("cpu-test-spin".into())
            .spawn(|| {
                let started = Instant::now();
                let mut n = 0u64;
                while started.elapsed() < Duration::from_millis(30) {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
                of_threads(std::process::id(), "cpu-test-spin")
            })
            .unwrap();
        let (threads, spent) = worker.join().unwrap().unwrap();
        assert_eq!(threads, 1);
        assert!(spent > Duration::ZERO, "{spent:?}");
        let (none, _) = of_threads(std::process::id(), "no-thread-is-named-so").unwrap();
        assert_eq!(none, 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_reading_grows_with_work_done() {
        let pid = std::process::id();
        let before = CpuTime::of(pid).unwrap();
        let deadline = Instant::now() + crate::PATIENCE;
        let mut spins = 0u64;
        // However busy the machine, this thread's work shows up as CPU time.
        while CpuTime::of(pid).unwrap().0 < before.0 + Duration::from_millis(50) {
            for _ in 0..100_000 {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
            assert!(Instant::now() < deadline, "no CPU time was counted");
        }
        assert!(CpuTime::of(u32::MAX).is_none());
    }
}
