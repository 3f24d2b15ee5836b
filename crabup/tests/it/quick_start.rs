//! The README's quick start from a checkout: `up --path <checkout>` really
//! builds the family with one `cargo build --release --workspace --bins`
//! and installs it into a temp `CARGO_HOME` (crabup, crabtalk-tui, crabtalkd, crabtalk-cron,
//! crabtalk-search), starts the services, and then the commands the README
//! gives next work — `crabup ps`, `crabtalk-tui -p "hello"` (against the
//! scripted model, configured in `config.toml`), `crabup daemon logs`.
//!
//! It runs only with `CRABTALK_SLOW_TESTS` set. Its builds share
//! `daemon_lifecycle`'s folder and debug-speed release profile, so a rerun
//! builds nothing again.

use std::path::Path;
use std::process::{Command, Stdio};

use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon};

use crate::daemon_lifecycle::{fresh_cargo_home, quick_builds};
use crate::support::{Sandbox, slow_tests_enabled, stderr, stdout};

/// What `up` installs into `$CARGO_HOME/bin` (telegram has no config).
const INSTALLED: [&str; 5] = [
    "crabup",
    "crabtalk-tui",
    "crabtalkd",
    "crabtalk-cron",
    "crabtalk-search",
];

#[test]
fn the_readme_quick_start_installs_the_family_and_crabtalk_tui_answers_hello() {
    if !slow_tests_enabled(
        "the_readme_quick_start_installs_the_family_and_crabtalk_tui_answers_hello",
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let llm = runtime.block_on(ScriptedLlm::start());
    llm.set_default(Reply::text("Hello from the scripted model."));
    let mut sandbox = Sandbox::new();
    sandbox.cargo_home = fresh_cargo_home("cargo-home-up");
    std::fs::create_dir_all(&sandbox.home).unwrap();
    std::fs::write(
        sandbox.home.join("config.toml"),
        TestDaemon::config_for(&llm.base_url()),
    )
    .unwrap();

    // `target/release/crabup up --path .`
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out =
        quick_builds(&mut sandbox.command(&["up", "--path", &checkout.display().to_string()]))
            .env("CRABUP_READY_TIMEOUT_SECS", "60")
            .output()
            .unwrap();
    let said = stdout(&out);
    assert!(out.status.success(), "{said}\n{}", stderr(&out));
    for binary in INSTALLED {
        let path = sandbox.cargo_home.join("bin").join(binary);
        assert!(
            path.is_file(),
            "{} was not installed:\n{said}",
            path.display()
        );
    }
    assert!(said.contains("installed 5 of 5"), "{said}");
    assert!(
        said.contains("Next: ") && said.contains("crabtalk-tui"),
        "{said}"
    );
    assert!(
        !stderr(&out).contains("no LLM provider"),
        "{}",
        stderr(&out)
    );

    // Then, by name from cargo's bin folder, as the README goes on.
    let readme = |program: &str, args: &[&str]| {
        let output = Command::new(program)
            .args(args)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    sandbox.cargo_home.join("bin").display(),
                    sandbox.path()
                ),
            )
            .env("CRABTALK_HOME", &sandbox.home)
            .env("CARGO_HOME", &sandbox.cargo_home)
            .env("CRABTALK_SERVICE_MANAGER", "process")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}\n{}",
            stdout(&output),
            stderr(&output)
        );
        stdout(&output)
    };
    let ps = readme("crabup", &["ps"]);
    for name in ["daemon", "search", "cron"] {
        assert!(
            ps.lines().any(|line| line.starts_with(name)
                && line.contains("running")
                && line.split_whitespace().any(|cell| cell == "ok")),
            "{name}:\n{ps}"
        );
    }
    let reply = readme("crabtalk-tui", &["-p", "hello"]);
    assert!(reply.contains("Hello from the scripted model."), "{reply}");
    let request = llm.requests().last().cloned().expect("the model was asked");
    assert!(
        request["messages"].to_string().contains("hello"),
        "{request}"
    );
    let logs = readme("crabup", &["daemon", "logs", "-n", "20"]);
    assert!(!logs.is_empty());
    for name in ["daemon", "search", "cron"] {
        readme("crabup", &[name, "stop"]);
    }
}
