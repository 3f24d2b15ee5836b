//! What the gateway costs when idle: resident memory and CPU time over a
//! quiet window, polling a fake Bot API (long polls of 30 s) with no
//! daemon running.
//!
//! ```sh
//! cargo build --release -p crabtalk-telegram --examples --bins
//! target/release/examples/telegram_footprint 60
//! ```
//!
//! It starts `target/release/crabtalk-telegram run` (the binary next to
//! this example) in a fresh temp `CRABTALK_HOME`, waits until it polls,
//! lets start-up settle (5 s), then reads `/proc/<pid>/stat` and
//! `/proc/<pid>/status` at the start and the end of the window, and
//! prints where the resident memory is (`/proc/<pid>/smaps_rollup`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crabtalk_fake_bot_api::{FakeBotApi, TOKEN};
use crabtalk_testkit::usage;

fn binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-telegram")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let secs: u64 = std::env::args().nth(1).map_or(60, |n| n.parse().unwrap());
    let api = FakeBotApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("telegram.toml"),
        format!(
            "token = \"{TOKEN}\"\napi_base_url = \"{}\"\nallow = [1]\n",
            api.url()
        ),
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
    api.wait_until("the first poll", |api| {
        !api.calls_of("getUpdates").is_empty()
    })
    .await;
    // Start-up settles: the gateway gives back its start-up pages after 3 s.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let calls_before = api.calls().len();
    let before = usage::Usage::of(pid).unwrap();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let after = usage::Usage::of(pid).unwrap();
    let cpu = after.cpu.saturating_sub(before.cpu);
    println!(
        "idle {secs} s: CPU {:.3} s ({:.3}% of one core); RSS {:.1} MiB at the start, {:.1} MiB at the end; {} Bot API calls in the window",
        cpu.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / secs as f64,
        before.rss_bytes as f64 / 1048576.0,
        after.rss_bytes as f64 / 1048576.0,
        api.calls().len() - calls_before,
    );
    if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        for line in rollup.lines().filter(|l| {
            l.starts_with("Rss")
                || l.starts_with("Anonymous")
                || l.starts_with("Shared_Clean")
                || l.starts_with("Private_Clean")
        }) {
            println!("  {line}");
        }
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}
