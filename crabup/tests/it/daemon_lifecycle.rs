//! The daemon end to end with the process backend, as a person would do it:
//! `crabup pull --path <checkout> daemon` really installs `crabtalkd` with
//! `cargo install` into a temp `CARGO_HOME`, then start → ps (running, pid,
//! port, health ping) → logs -n and logs -f → restart (new pid) → stop (no
//! stale files) → kill -9 (ps shows it failed and its port file stale) →
//! start recovers.
//!
//! It runs only with `CRABTALK_SLOW_TESTS` set. The install is the slow
//! part. Its build goes to a persistent folder in
//! the target dir (`crabup-install/`), with the release profile turned down
//! to a debug-speed build through cargo's `CARGO_PROFILE_RELEASE_*`
//! variables, so reruns reuse it. For the same reason the test's own
//! `CARGO_HOME` lives there too (`crabup-install/cargo-home`, emptied of
//! binaries and install records at the start): cargo fingerprints sources
//! by their path under `CARGO_HOME`, so a new temp folder per run would
//! rebuild every dependency. Its registry is linked to the real cargo
//! home's, so nothing is downloaded twice.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;

use crate::support::{Sandbox, TIMEOUT, slow_tests_enabled, stderr, stdout, wait_for};

fn checkout() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// `<target>/crabup-install`, beside the profile folders of this build.
pub(crate) fn install_target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().join("crabup-install")
}

fn real_cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs_home().join(".cargo"))
}

fn dirs_home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME"))
}

fn pid_gone(pid: u32) -> bool {
    // SAFETY: kill(pid, 0) only checks existence.
    let exists = unsafe { libc::kill(pid as i32, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    });
    !exists || zombie
}

/// A test-owned `CARGO_HOME` with no binaries and no install records
/// (`crabup-install/<name>`: one per test, as tests run at once).
pub(crate) fn fresh_cargo_home(name: &str) -> PathBuf {
    let cargo_home = install_target_dir().join(name);
    let _ = std::fs::remove_dir_all(cargo_home.join("bin"));
    for records in [".crates.toml", ".crates2.json"] {
        let _ = std::fs::remove_file(cargo_home.join(records));
    }
    std::fs::create_dir_all(cargo_home.join("bin")).unwrap();
    for shared in ["registry", "git"] {
        let real = real_cargo_home().join(shared);
        let link = cargo_home.join(shared);
        if real.exists() && std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&real, &link).unwrap();
        }
    }
    cargo_home
}

/// Builds of the slow tests: in [`install_target_dir`], with the release
/// profile turned down to a debug-speed build.
pub(crate) fn quick_builds(command: &mut std::process::Command) -> &mut std::process::Command {
    command
        .env("CARGO_TARGET_DIR", install_target_dir())
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "true")
}

fn install_daemon(sandbox: &Sandbox) {
    let root = checkout().display().to_string();
    let out = quick_builds(&mut sandbox.command(&["pull", "--path", &root, "daemon"]))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pull failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn daemon_installs_starts_logs_restarts_stops_and_recovers_from_kill_9() {
    if !slow_tests_enabled("daemon_installs_starts_logs_restarts_stops_and_recovers_from_kill_9") {
        return;
    }
    let mut sandbox = Sandbox::new();
    sandbox.cargo_home = fresh_cargo_home("cargo-home");
    assert!(!sandbox.cargo_home.join("bin/crabtalkd").exists());
    install_daemon(&sandbox);
    let binary = sandbox.cargo_home.join("bin/crabtalkd");
    assert!(
        binary.is_file(),
        "cargo install put no crabtalkd in {}",
        binary.display()
    );
    let listed = sandbox.ok(&["list"]);
    assert!(
        listed.contains("daemon") && listed.contains("crabtalkd") && listed.contains("path"),
        "{listed}"
    );
    // The installed binary accepts the command line its units run.
    let help = std::process::Command::new(&binary)
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(
        help.status.success(),
        "crabtalkd rejects `run`: {}",
        stderr(&help)
    );

    // Its own port, not the default 6688 another daemon on this machine may
    // hold (config.toml is the daemon's; tcp = "off" would also do).
    std::fs::create_dir_all(&sandbox.home).unwrap();
    std::fs::write(
        sandbox.home.join("config.toml"),
        "[transport]\ntcp = \"127.0.0.1:0\"\n",
    )
    .unwrap();

    // start, without a terminal and without providers: it starts anyway.
    let out = sandbox.crabup(&["daemon", "start"]);
    assert!(
        out.status.success(),
        "start failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("daemon started (pid"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("no LLM provider yet"),
        "{}",
        stderr(&out)
    );
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["state"], "running", "{row}");
    let pid = row["pid"].as_u64().expect("a pid") as u32;
    assert!(row["port"].as_u64().is_some(), "{row}");
    assert_eq!(row["health"]["status"], "ok", "{row}");
    assert!(sandbox.ok(&["daemon", "start"]).contains("already running"));
    let table = sandbox.ok(&["ps"]);
    assert!(
        table.contains(&pid.to_string()) && table.contains("running"),
        "{table}"
    );

    // logs -n: the end of logs/daemon.log.
    let log = sandbox.home.join("logs/daemon.log");
    wait_for("the ready line", TIMEOUT, || {
        std::fs::read_to_string(&log)
            .ok()?
            .contains("ready")
            .then_some(())
    });
    let tail = sandbox.ok(&["daemon", "logs", "-n", "5"]);
    assert!((1..=5).contains(&tail.lines().count()), "{tail}");
    let last_line = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    assert_eq!(tail.lines().last().unwrap(), last_line);

    // logs -f: lines written after it started show up.
    let mut follower = sandbox
        .command(&["daemon", "logs", "-f", "-n", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let reader = BufReader::new(follower.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in reader.lines() {
            if lines_tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    assert_eq!(lines.recv_timeout(TIMEOUT).unwrap(), last_line);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(b"a line written while following\n")
        .unwrap();
    assert_eq!(
        lines.recv_timeout(TIMEOUT).unwrap(),
        "a line written while following"
    );
    follower.kill().unwrap();
    follower.wait().unwrap();

    // restart: a new process.
    let restarted = sandbox.ok(&["daemon", "restart"]);
    assert!(restarted.contains(&format!("was pid {pid}")), "{restarted}");
    let row = sandbox.ps_row("daemon");
    let new_pid = row["pid"].as_u64().unwrap() as u32;
    assert_ne!(new_pid, pid);
    assert!(pid_gone(pid));
    assert_eq!(row["health"]["status"], "ok", "{row}");

    // stop: stopped, and nothing stale left behind.
    assert!(sandbox.ok(&["daemon", "stop"]).contains("daemon stopped"));
    assert!(sandbox.ok(&["daemon", "stop"]).contains("not running"));
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["state"], "stopped", "{row}");
    assert_eq!(row["port_file"], "missing", "{row}");
    assert_no_stale_files(&sandbox);

    // kill -9: ps calls it failed with a stale port file; start recovers.
    sandbox.ok(&["daemon", "start"]);
    let pid = sandbox.ps_row("daemon")["pid"].as_u64().unwrap() as u32;
    // SAFETY: kill(2) on the daemon this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    wait_for("the daemon to die", TIMEOUT, || pid_gone(pid).then_some(()));
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["state"], "failed", "{row}");
    assert_eq!(row["port_file"], "stale", "{row}");
    let doctor = sandbox.ok(&["doctor"]);
    assert!(doctor.contains("stale"), "{doctor}");
    let recovered = sandbox.ok(&["daemon", "start"]);
    assert!(recovered.contains("daemon started"), "{recovered}");
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["state"], "running", "{row}");
    assert_ne!(row["pid"].as_u64().unwrap() as u32, pid);
    assert_eq!(row["health"]["status"], "ok", "{row}");
    sandbox.ok(&["daemon", "stop"]);
    assert_no_stale_files(&sandbox);
}

fn assert_no_stale_files(sandbox: &Sandbox) {
    let stale: Vec<String> = sandbox
        .run_files()
        .into_iter()
        .filter(|f| f.ends_with(".port") || f.ends_with(".pid") || f.ends_with(".sock"))
        .collect();
    assert!(stale.is_empty(), "left behind: {stale:?}");
}
