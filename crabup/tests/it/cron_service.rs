//! `crabup cron start|status|logs|stop`, `ps` health and `doctor` with the
//! real `crabtalk-cron` binary (built by `cargo test --workspace`), put in
//! the sandbox's `$CARGO_HOME/bin` as `cargo install` would.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;

use crate::support::{Sandbox, TIMEOUT, stdout, wait_for};

/// `target/<profile>/crabtalk-cron`, next to this test's folder.
fn cron_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let binary = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-cron");
    assert!(
        binary.exists(),
        "{} is not built; run the tests through cargo test --workspace",
        binary.display()
    );
    binary
}

fn sandbox_with_cron(crons: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    std::os::unix::fs::symlink(cron_binary(), sandbox.cargo_home.join("bin/crabtalk-cron"))
        .unwrap();
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    std::fs::write(sandbox.home.join("config/crons.toml"), crons).unwrap();
    sandbox
}

const ENTRY: &str = "[[cron]]\nid = \"flaky\"\nevery = \"1h\"\ntz = \"UTC\"\nmessage = \"m\"\n";

/// A process of the test, killed when the test ends, passed or failed.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Marks `flaky` as failed three times in a row, as the engine would.
fn mark_failing(sandbox: &Sandbox) {
    let state = serde_json::json!({"entries": {"flaky": {
        "seen": "2026-01-01T00:00:00Z", "schedule": "every=1h tz=UTC", "failures": 3,
        "last_status": "error", "last_error": "the daemon did not answer"
    }}});
    std::fs::create_dir_all(sandbox.home.join("cron")).unwrap();
    std::fs::write(sandbox.home.join("cron/state.json"), state.to_string()).unwrap();
}

#[test]
fn start_status_logs_ps_and_stop_with_the_real_binary() {
    let sandbox = sandbox_with_cron(ENTRY);
    sandbox.ok(&["cron", "start"]);
    let row = wait_for("cron to answer its health check", TIMEOUT, || {
        let row = sandbox.ps_row("cron");
        (row["health"]["status"] == "ok").then_some(row)
    });
    assert!(
        row["state"].as_str().unwrap().starts_with("running"),
        "{row}"
    );
    assert!(sandbox.ok(&["cron", "status"]).contains("running"));

    // Failing entries make the health degraded, with their names.
    mark_failing(&sandbox);
    let health = sandbox.ps_row("cron")["health"].clone();
    assert_eq!(health["status"], "degraded", "{health}");
    let problems = health["problems"].to_string();
    assert!(
        problems.contains("failing entries") && problems.contains("flaky"),
        "{health}"
    );

    let logs = sandbox.ok(&["cron", "logs", "-n", "50"]);
    assert!(logs.contains("scheduler started"), "{logs}");

    // logs -f shows what the service writes after it started following.
    let mut follow = KillOnDrop(
        sandbox
            .command(&["cron", "logs", "-f", "-n", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (lines_tx, lines) = mpsc::channel();
    let out = follow.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // Following once a line appended now comes through (the reload must
    // not happen before the follower has opened the log): appended until
    // one shows.
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(sandbox.home.join("logs/cron.log"))
        .unwrap();
    wait_for("logs -f following", TIMEOUT, || {
        std::io::Write::write_all(&mut log, b"a line of the test\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        lines.try_iter().find(|line| line == "a line of the test")
    });
    std::fs::write(
        sandbox.home.join("config/crons.toml"),
        format!(
            "{ENTRY}\n[[cron]]\nid = \"more\"\nevery = \"2h\"\ntz = \"UTC\"\nmessage = \"m\"\n"
        ),
    )
    .unwrap();
    wait_for("the reload in logs -f", TIMEOUT, || {
        lines
            .try_iter()
            .find(|line| line.contains("schedule loaded entries=2"))
    });
    drop(follow);

    sandbox.ok(&["cron", "stop"]);
    assert!(
        !sandbox.run_files().iter().any(|f| f == "cron.port"),
        "{:?}",
        sandbox.run_files()
    );
}

#[test]
fn doctor_checks_that_crons_toml_parses_and_names_failing_entries() {
    let sandbox = sandbox_with_cron(ENTRY);
    let text = stdout(&sandbox.crabup(&["doctor"]));
    assert!(
        text.contains("[ok  ] crons.toml: 1 entries parse, none failing"),
        "{text}"
    );

    mark_failing(&sandbox);
    let text = stdout(&sandbox.crabup(&["doctor"]));
    assert!(
        text.contains(
            "[warn] cron: failing entries (3+ errors in a row): flaky (the daemon did not answer)"
        ),
        "{text}"
    );

    std::fs::write(
        sandbox.home.join("config/crons.toml"),
        "[[cron]]\nid = \"a\"\nevery = \"soon\"\nmessage = \"m\"\n",
    )
    .unwrap();
    let out = sandbox.crabup(&["doctor"]);
    let text = stdout(&out);
    assert!(!out.status.success());
    assert!(
        text.contains("[FAIL] crons.toml:") && text.contains("crons.toml:3:9: `every` = \"soon\""),
        "{text}"
    );
}
