//! What the cron service costs when idle: resident memory and CPU time
//! over a quiet minute, with a small schedule and with 10,000 entries.
//!
//! ```sh
//! cargo build --release -p crabtalk-cron --examples --bins
//! target/release/examples/cron_footprint 60
//! ```
//!
//! It starts `target/release/crabtalk-cron run` in a fresh temp
//! `CRABTALK_HOME` (no daemon: nothing fires in the window, every entry's
//! next slot is hours away), waits for its port file, then reads
//! `/proc/<pid>/stat` and `/proc/<pid>/status` at the start and the end of
//! the window.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_home::{Home, PortFile};

fn binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent().unwrap().parent().unwrap().join("crabtalk-cron")
}

/// utime + stime, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3, utime 14, stime 15 (1-based).
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

/// Entries that do not fire within the hour (2026: far from any slot of
/// a yearly schedule, so nothing runs while measured).
fn crons(entries: usize) -> String {
    (0..entries)
        .map(|n| format!("[[cron]]\nid = \"e{n}\"\ncron = \"{} {} 1 1 *\"\ntz = \"Europe/London\"\nmessage = \"m{n}\"\n\n", n % 60, n % 24))
        .collect()
}

fn measure(entries: usize, window: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    std::fs::write(
        home.component_config_dir().join("crons.toml"),
        crons(entries),
    )
    .unwrap();
    let mut child = Command::new(binary())
        .arg("run")
        .env("CRABTALK_HOME", dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let port_file = home.port_file("cron").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while PortFile::read(&port_file).is_err() {
        assert!(Instant::now() < deadline, "no port file");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Let start-up (reading the file, the first plan) finish.
    std::thread::sleep(Duration::from_secs(2));
    let ticks_before = cpu_ticks(pid);
    let rss_before = rss_mib(pid);
    std::thread::sleep(window);
    let ticks = cpu_ticks(pid) - ticks_before;
    let rss_after = rss_mib(pid);
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
    let hz = 100.0; // USER_HZ on Linux
    let cpu_secs = ticks as f64 / hz;
    println!(
        "{entries:>6} entries: RSS {rss_before:.1} MiB idle, {rss_after:.1} MiB after {}s; CPU {cpu_secs:.2}s over {}s = {:.3}% of one core",
        window.as_secs(),
        window.as_secs(),
        100.0 * cpu_secs / window.as_secs_f64()
    );
}

fn main() {
    let secs: u64 = std::env::args().nth(1).map_or(60, |n| n.parse().unwrap());
    for entries in [5, 10_000] {
        measure(entries, Duration::from_secs(secs));
    }
}
