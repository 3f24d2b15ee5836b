//! The process backend's supervisor (finding 2 of issue 27), with the real
//! `crabtalk-search`: killed with SIGKILL it is back within its backoff,
//! `ps` counts the restart and says how it ended, the log has a line for
//! it; `stop` is not a crash — nothing starts it again.

use crate::support::{Sandbox, TIMEOUT, kill, stdout, wait_for};

const CONFIG: &str = "[engines.duckduckgo]\nbase_url = \"http://127.0.0.1:9\"\n\n[engines.bing]\nenabled = false\n\n[engines.mojeek]\nenabled = false\n\n[engines.wikipedia]\nenabled = false\n";

#[test]
fn a_killed_component_comes_back_within_its_backoff_and_a_stop_stays_a_stop() {
    let sandbox = Sandbox::new();
    sandbox.install_built("crabtalk-search");
    sandbox.config("search.toml", CONFIG);
    sandbox.ok(&["search", "start"]);
    let row = wait_for("search healthy", TIMEOUT, || {
        let row = sandbox.ps_row("search");
        (row["health"]["status"] == "ok").then_some(row)
    });
    assert_eq!(row["restarts"], 0, "{row}");
    let pid = row["pid"].as_u64().unwrap() as u32;
    let supervisor = sandbox.pid_file("search").unwrap().supervisor.unwrap();

    kill(pid, libc::SIGKILL);
    let back = wait_for("search back on its own", TIMEOUT, || {
        let row = sandbox.ps_row("search");
        (row["state"] == "running"
            && row["pid"].as_u64() != Some(pid as u64)
            && row["health"]["status"] == "ok")
            .then_some(row)
    });
    assert_eq!(back["restarts"], 1, "{back}");
    assert_eq!(back["last_exit"], "killed by signal 9 (SIGKILL)", "{back}");
    let table = sandbox.ok(&["ps"]);
    assert!(
        table
            .contains("↳ restarted 1 time by its manager; last exit: killed by signal 9 (SIGKILL)"),
        "{table}"
    );
    let logs = sandbox.ok(&["search", "logs", "-n", "50"]);
    assert!(
        logs.contains(&format!(
            "WARN supervisor: crabtalk-search (pid {pid}) killed by signal 9 (SIGKILL); starting it again in 1 s"
        )),
        "{logs}"
    );
    // The backoff was the first one: 1 s (the log says when it started it
    // again; the times are the supervisor's, so no timing is asserted here).
    assert!(logs.contains("started again (pid"), "{logs}");

    let new_pid = back["pid"].as_u64().unwrap() as u32;
    let stopped = sandbox.ok(&["search", "stop"]);
    assert!(
        stopped.contains(&format!("search stopped (pid {new_pid})")),
        "{stopped}"
    );
    assert!(!crabtalk_command::liveness::pid_alive(new_pid));
    assert!(!crabtalk_command::liveness::pid_alive(supervisor));
    // Only the owner's credential stays: it outlives every process.
    assert_eq!(sandbox.run_files(), ["token"]);
    let out = sandbox.crabup(&["ps"]);
    assert!(
        out.status.success(),
        "a stop is not a failure: {}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("search     stopped"),
        "{}",
        stdout(&out)
    );
}
