//! `crabup search start|status|logs|restart|stop`, `ps` health, `up` and
//! `doctor` with the real `crabtalk-search` binary (built by `cargo test
//! --workspace`), put in the sandbox's `$CARGO_HOME/bin` as `cargo install`
//! would.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;

use crate::support::{Sandbox, TIMEOUT, stdout, wait_for};

/// `target/<profile>/crabtalk-search`, next to this test's folder.
fn search_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let binary = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-search");
    assert!(
        binary.exists(),
        "{} is not built; run the tests through cargo test --workspace",
        binary.display()
    );
    binary
}

fn sandbox_with_search(config: Option<&str>) -> Sandbox {
    let sandbox = Sandbox::new();
    std::os::unix::fs::symlink(
        search_binary(),
        sandbox.cargo_home.join("bin/crabtalk-search"),
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    if let Some(config) = config {
        std::fs::write(sandbox.home.join("config/search.toml"), config).unwrap();
    }
    sandbox
}

/// Engines nobody can reach (a closed port), so nothing leaves the machine.
const CONFIG: &str = "[engines.duckduckgo]\nbase_url = \"http://127.0.0.1:9\"\n\n[engines.bing]\nenabled = false\n\n[engines.mojeek]\nenabled = false\n\n[engines.wikipedia]\nenabled = false\n";

/// Bing blocked and suspended, as the service would have written it.
fn mark_blocked(sandbox: &Sandbox) {
    let health = serde_json::json!({"engines": {"duckduckgo": {
        "status": "blocked", "detail": "bot check (anomaly/CAPTCHA page)",
        "checked_at": "2026-01-01T00:00:00Z", "suspended_until": "2099-01-01T00:00:00Z", "refusals": 1
    }}});
    std::fs::create_dir_all(sandbox.home.join("search")).unwrap();
    std::fs::write(sandbox.home.join("search/health.json"), health.to_string()).unwrap();
}

#[test]
fn start_status_logs_ps_restart_and_stop_with_the_real_binary() {
    let sandbox = sandbox_with_search(Some(CONFIG));
    sandbox.ok(&["search", "start"]);
    let row = wait_for("search to answer its health check", TIMEOUT, || {
        let row = sandbox.ps_row("search");
        (row["health"]["status"] == "ok").then_some(row)
    });
    assert!(
        row["state"].as_str().unwrap().starts_with("running"),
        "{row}"
    );
    assert!(sandbox.ok(&["search", "status"]).contains("running"));

    // A suspended engine makes the health degraded, naming it.
    mark_blocked(&sandbox);
    let health = sandbox.ps_row("search")["health"].clone();
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(
        health["problems"]
            .to_string()
            .contains("duckduckgo blocked"),
        "{health}"
    );

    let logs = sandbox.ok(&["search", "logs", "-n", "50"]);
    assert!(logs.contains("engines: duckduckgo"), "{logs}");

    // logs -f shows what the restarted service writes.
    let mut follow = sandbox
        .command(&["search", "logs", "-f", "-n", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let out = follow.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    sandbox.ok(&["search", "restart"]);
    wait_for("the restart in logs -f", TIMEOUT, || {
        lines.try_iter().find(|line| line.contains("serving MCP"))
    });
    let _ = follow.kill();
    let _ = follow.wait();

    sandbox.ok(&["search", "stop"]);
    assert!(
        !sandbox.run_files().iter().any(|f| f == "search.port"),
        "{:?}",
        sandbox.run_files()
    );
}

#[test]
fn up_starts_search_when_it_is_installed() {
    let sandbox = sandbox_with_search(None).with_installing_cargo_shim();
    let out = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        stdout(&out),
        crate::support::stderr(&out)
    );
    // Search was installed; crabup, the client, the daemon and cron were not.
    let version = format!("={}", env!("CARGO_PKG_VERSION"));
    let expected: Vec<Vec<String>> = ["crabup", "crabtalk-tui", "crabtalkd", "crabtalk-cron"]
        .iter()
        .map(|name| {
            vec![
                "install".to_owned(),
                (*name).to_owned(),
                "--version".to_owned(),
                version.clone(),
            ]
        })
        .collect();
    assert_eq!(sandbox.cargo_calls(), expected);
    wait_for("search running", TIMEOUT, || {
        (sandbox.ps_row("search")["health"]["status"] == "ok").then_some(())
    });
    for name in ["search", "cron", "daemon"] {
        assert!(sandbox.ok(&[name, "stop"]).contains("stopped"), "{name}");
    }
}

#[test]
fn doctor_checks_that_search_toml_parses_and_shows_engines_health() {
    let sandbox = sandbox_with_search(Some(CONFIG));
    let text = stdout(&sandbox.crabup(&["doctor"]));
    assert!(
        text.contains(
            "[ok  ] search: search.toml parses; engines' last health: duckduckgo unknown"
        ),
        "{text}"
    );

    mark_blocked(&sandbox);
    let text = stdout(&sandbox.crabup(&["doctor"]));
    assert!(
        text.contains("[warn] search: search.toml parses; engines' last health: duckduckgo blocked (suspended until 2099-01-01T00:00:00Z)"),
        "{text}"
    );

    std::fs::write(
        sandbox.home.join("config/search.toml"),
        "[engines.duckduckgo]\ntimeout_ms = 1\n",
    )
    .unwrap();
    let out = sandbox.crabup(&["doctor"]);
    let text = stdout(&out);
    assert!(!out.status.success());
    assert!(
        text.contains("[FAIL] search.toml:")
            && text.contains("search.toml:2:1: engines.duckduckgo.timeout_ms: must be from 100 to 120000 milliseconds (got 1)"),
        "{text}"
    );
}
