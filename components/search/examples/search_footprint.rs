//! What the search service costs when idle: resident memory and CPU time
//! over a quiet window, measured on the release binary.
//!
//! ```sh
//! cargo build --release -p crabtalk-search --bins --examples
//! target/release/examples/search_footprint 30
//! ```
//!
//! It starts `target/release/crabtalk-search run` in a fresh temp
//! `CRABTALK_HOME` (default settings: nothing is asked of any engine
//! while idle), waits for its port file and two seconds more, then reads
//! `/proc/<pid>/stat` and `/proc/<pid>/status` at the start and end of
//! the window, and prints where the resident pages are (`/proc/<pid>/smaps_rollup`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_home::{Home, PortFile};

fn binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-search")
}

/// utime + stime, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn status_kib(pid: u32, key: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0)
}

fn main() {
    let secs: u64 = std::env::args().nth(1).map_or(30, |n| n.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
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
    let port_file = home.port_file("search").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while PortFile::read(&port_file).is_err() {
        assert!(Instant::now() < deadline, "no port file");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_secs(2));
    let ticks_before = cpu_ticks(pid);
    let rss_before = status_kib(pid, "VmRSS:") / 1024.0;
    std::thread::sleep(Duration::from_secs(secs));
    let ticks = cpu_ticks(pid) - ticks_before;
    let rss_after = status_kib(pid, "VmRSS:") / 1024.0;
    let anon = status_kib(pid, "RssAnon:") / 1024.0;
    let file = status_kib(pid, "RssFile:") / 1024.0;
    let threads = status_kib(pid, "Threads:");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
    let cpu_secs = ticks as f64 / 100.0; // USER_HZ on Linux
    println!(
        "idle RSS {rss_before:.1} MiB at the start, {rss_after:.1} MiB after {secs} s (anonymous {anon:.1} MiB, file-backed {file:.1} MiB; {threads} threads); CPU {cpu_secs:.2} s over {secs} s = {:.3}% of one core",
        100.0 * cpu_secs / secs as f64
    );
}
