//! A broken daemon configuration never takes a running daemon down:
//! `crabup daemon restart`, `up` and `start` ask `crabtalkd check` first and
//! print its problems before anything else; `crabup doctor` reports them,
//! and a provider whose `base_url` does not answer.
//!
//! The daemon is the workspace's own `crabtalkd` (built by `cargo test
//! --workspace`), linked into the sandbox's `CARGO_HOME/bin` as if
//! `crabup pull daemon` had installed it; the process backend runs it.

use std::path::Path;

use crate::support::{Sandbox, stderr, stdout};

fn install_daemon(sandbox: &Sandbox) {
    let binary = crabtalk_testkit::daemon_binary();
    std::os::unix::fs::symlink(&binary, sandbox.cargo_home.join("bin/crabtalkd")).unwrap();
}

fn write_config(sandbox: &Sandbox, text: &str) {
    std::fs::create_dir_all(&sandbox.home).unwrap();
    std::fs::write(sandbox.home.join("config.toml"), text).unwrap();
}

const GOOD: &str = "[transport]\ntcp = \"127.0.0.1:0\"\n";
const TYPO: &str = "[transport]\ntcp = \"127.0.0.1:0\"\n\n[llm]\nmax_retrys = 3\n";

fn daemon_pid(sandbox: &Sandbox) -> u32 {
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["state"], "running", "{row}");
    row["pid"].as_u64().expect("a pid") as u32
}

fn config_file(sandbox: &Sandbox) -> String {
    Path::new(&sandbox.home)
        .join("config.toml")
        .display()
        .to_string()
}

#[test]
fn a_broken_config_leaves_the_running_daemon_alone_and_says_why_first() {
    let sandbox = Sandbox::new();
    install_daemon(&sandbox);
    write_config(&sandbox, GOOD);
    sandbox.ok(&["daemon", "start"]);
    let pid = daemon_pid(&sandbox);

    write_config(&sandbox, TYPO);
    let problem = format!(
        "{}:5:1: unknown key `max_retrys` in [llm]; did you mean `max_retries`?",
        config_file(&sandbox)
    );
    for args in [&["daemon", "restart"][..], &["up"][..]] {
        let out = sandbox.crabup(args);
        let err = stderr(&out);
        assert!(
            !out.status.success(),
            "{args:?} succeeded: {}",
            stdout(&out)
        );
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(&problem),
            "{args:?}: the error is not first:\n{err}"
        );
        assert!(
            err.contains(&format!("it keeps running as it is (pid {pid})"))
                || err.contains("a running daemon keeps running as it is"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("no LLM provider yet"), "{args:?}: {err}");
        assert_eq!(daemon_pid(&sandbox), pid, "{args:?} touched the daemon");
        let row = sandbox.ps_row("daemon");
        assert_eq!(row["health"]["status"], "ok", "{row}");
    }

    // doctor reports the same problem, and fails.
    let out = sandbox.crabup(&["doctor"]);
    assert!(!out.status.success());
    let report = stdout(&out);
    assert!(
        report.contains("[FAIL] configuration: crabtalkd would refuse it"),
        "{report}"
    );
    assert!(report.contains(&problem), "{report}");

    // Fixed, the restart goes through.
    write_config(&sandbox, GOOD);
    let restarted = sandbox.ok(&["daemon", "restart"]);
    assert!(restarted.contains(&format!("was pid {pid}")), "{restarted}");
    assert_ne!(daemon_pid(&sandbox), pid);

    // A stopped daemon with a broken config is not started either.
    sandbox.ok(&["daemon", "stop"]);
    write_config(&sandbox, TYPO);
    let out = sandbox.crabup(&["daemon", "start"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.lines().next().unwrap_or_default().contains(&problem),
        "{err}"
    );
    assert!(err.contains("The daemon was not started"), "{err}");
    assert_eq!(sandbox.ps_row("daemon")["state"], "stopped");
}

#[test]
fn doctor_reports_a_provider_whose_base_url_does_not_answer() {
    let sandbox = Sandbox::new();
    install_daemon(&sandbox);
    let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let open_port = open.local_addr().unwrap().port();
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    write_config(
        &sandbox,
        &format!(
            "{GOOD}\n[[providers]]\nname = \"local\"\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{open_port}/v1\"\nmodels = [\"a\"]\n\n[[providers]]\nname = \"gone\"\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{closed_port}/v1\"\nmodels = [\"b\"]\n"
        ),
    );
    let out = sandbox.crabup(&["doctor"]);
    let report = stdout(&out);
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("[ok  ] configuration: the configuration in"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "[ok  ] provider local: http://127.0.0.1:{open_port}/v1 answers"
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "[FAIL] provider gone: http://127.0.0.1:{closed_port}/v1 does not answer"
        )),
        "{report}"
    );
    drop(open);
}

/// A first `crabup daemon start` in a home that does not exist yet makes
/// it, `run/` and `logs/` private (0700), so the daemon finds nothing to
/// warn about in what crabup chose.
#[test]
fn a_first_start_makes_the_home_private_so_the_daemon_has_nothing_to_warn_about() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    install_daemon(&sandbox);
    assert!(!sandbox.home.exists());
    sandbox.ok(&["daemon", "start"]);
    for dir in [
        sandbox.home.clone(),
        sandbox.home.join("run"),
        sandbox.home.join("logs"),
    ] {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{} is {mode:o}", dir.display());
    }
    daemon_pid(&sandbox);
    let log = std::fs::read_to_string(sandbox.home.join("logs/daemon.log")).unwrap();
    assert!(!log.contains("has mode"), "{log}");
    sandbox.ok(&["daemon", "stop"]);
}
