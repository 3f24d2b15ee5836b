//! What a process costs, as the kernel counts it: CPU time (user + system)
//! and resident memory, read from `/proc/<pid>/stat` (Linux only).
//!
//! Idle-cost checks measure a window of wall time and compare the CPU time
//! the process used in it with the window: a process that sleeps until
//! something happens uses almost none, one that polls or loops shows at
//! once. CPU time is what the process itself consumed, so a busy machine
//! does not inflate it the way it inflates wall-clock latencies.
//!
//! ```no_run
//! # async fn demo(pid: u32) -> std::io::Result<()> {
//! use std::time::Duration;
//! let idle = crabtalk_testkit::usage::measure_idle(pid, Duration::from_secs(10)).await?;
//! assert!(idle.core_share() <= 0.01, "{idle}");
//! # Ok(()) }
//! ```

use std::io;
use std::time::Duration;

/// A process's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// User plus system CPU time since the process started.
    pub cpu: Duration,
    /// Resident set size.
    pub rss_bytes: u64,
}

impl Usage {
    /// Reads the counters of `pid`.
    pub fn of(pid: u32) -> io::Result<Self> {
        read_stat(pid)
    }
}

/// The CPU a process used over a window of wall time.
#[derive(Debug, Clone, Copy)]
pub struct IdleCost {
    pub cpu: Duration,
    pub window: Duration,
    /// Resident memory at the end of the window.
    pub rss_bytes: u64,
}

impl IdleCost {
    /// The fraction of one core used: CPU time over wall time.
    pub fn core_share(&self) -> f64 {
        self.cpu.as_secs_f64() / self.window.as_secs_f64()
    }
}

impl std::fmt::Display for IdleCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ms of CPU in {:.1} s ({:.2}% of one core), RSS {:.1} MB",
            self.cpu.as_millis(),
            self.window.as_secs_f64(),
            self.core_share() * 100.0,
            self.rss_bytes as f64 / 1e6
        )
    }
}

/// Measures what `pid` uses during the next `window`. The caller makes sure
/// nothing talks to the process meanwhile.
pub async fn measure_idle(pid: u32, window: Duration) -> io::Result<IdleCost> {
    let before = Usage::of(pid)?;
    let started = std::time::Instant::now();
    // The window itself is the measurement, not a wait for an event.
    tokio::time::sleep(window).await;
    let after = Usage::of(pid)?;
    Ok(IdleCost {
        cpu: after.cpu.saturating_sub(before.cpu),
        window: started.elapsed(),
        rss_bytes: after.rss_bytes,
    })
}

#[cfg(target_os = "linux")]
fn read_stat(pid: u32) -> io::Result<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&stat, clock_ticks_per_second(), page_size()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/proc/{pid}/stat has an unexpected shape: {stat:?}"),
        )
    })
}

#[cfg(not(target_os = "linux"))]
fn read_stat(pid: u32) -> io::Result<Usage> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("reading the CPU time of process {pid} needs /proc (Linux)"),
    ))
}

/// Fields of `/proc/<pid>/stat` after the command name, which is in
/// parentheses and may itself hold spaces and parentheses: so the line is
/// split after the last `)`. Counting from `state` (field 3 of proc(5)) as
/// index 0: utime is 11, stime 12, rss (pages) 21.
fn parse_stat(stat: &str, ticks_per_second: u64, page_size: u64) -> Option<Usage> {
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let rss_pages: u64 = fields.get(21)?.parse().ok()?;
    let ticks = utime + stime;
    Some(Usage {
        cpu: Duration::from_nanos(ticks * 1_000_000_000 / ticks_per_second.max(1)),
        rss_bytes: rss_pages * page_size,
    })
}

#[cfg(target_os = "linux")]
fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

#[cfg(target_os = "linux")]
fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let stat = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 50 0 0 20 0 3 0 12345 100000000 2048 18446744073709551615";
        let usage = parse_stat(stat, 100, 4096).unwrap();
        assert_eq!(usage.cpu, Duration::from_secs(3));
        assert_eq!(usage.rss_bytes, 2048 * 4096);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_counters() {
        let usage = Usage::of(std::process::id()).unwrap();
        assert!(usage.rss_bytes > 0);
    }
}
