//! `pull`, `rm`, `update` and `list` against a cargo shim that records its
//! arguments, in a temp `CARGO_HOME`.

use std::path::Path;

use crate::support::{Sandbox, TIMEOUT, wait_for};

fn checkout() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

#[test]
fn pull_maps_short_names_and_passes_options_to_cargo_install() {
    let sandbox = Sandbox::new().with_cargo_shim();
    sandbox.ok(&["pull", "daemon", "tui", "some-gateway"]);
    sandbox.ok(&[
        "pull",
        "search",
        "--version",
        "0.3.1",
        "--features",
        "bing,brave",
        "-F",
        "cache",
    ]);
    let root = checkout().display().to_string();
    sandbox.ok(&["pull", "--path", &root, "cron", "daemon"]);
    let calls = sandbox.cargo_calls();
    let want: Vec<Vec<String>> = [
        vec!["install", "crabtalkd"],
        vec!["install", "crabtalk-tui"],
        vec!["install", "some-gateway"],
        vec![
            "install",
            "crabtalk-search",
            "--version",
            "0.3.1",
            "--features",
            "bing,brave,cache",
        ],
        vec![
            "install",
            "--path",
            &format!("{root}/components/cron"),
            "--locked",
        ],
        vec!["install", "--path", &format!("{root}/daemon"), "--locked"],
    ]
    .iter()
    .map(|call| call.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(calls, want);
    let missing = sandbox.crabup(&["pull", "--path", &root, "nope"]);
    assert!(!missing.status.success());
    assert!(crate::support::stderr(&missing).contains("no package nope"));
}

#[test]
fn update_reinstalls_every_crabtalk_crate_keeping_its_features_and_source() {
    let sandbox = Sandbox::new().with_cargo_shim();
    std::fs::write(
        sandbox.cargo_home.join(".crates2.json"),
        r#"{"installs":{
          "crabtalkd 0.1.0 (path+file:///src/crabtalk/daemon)":{"bins":["crabtalkd"],"features":["otel"],"all_features":false,"no_default_features":false},
          "crabtalk-search 0.2.0 (registry+https://github.com/rust-lang/crates.io-index)":{"bins":["crabtalk-search"],"features":["bing"],"all_features":false,"no_default_features":true},
          "crabtalk-cron 0.2.0 (registry+https://github.com/rust-lang/crates.io-index)":{"bins":["crabtalk-cron"],"features":[],"all_features":true,"no_default_features":false},
          "ripgrep 14.1.0 (registry+https://github.com/rust-lang/crates.io-index)":{"bins":["rg"],"features":[]}
        }}"#,
    )
    .unwrap();
    sandbox.ok(&["update"]);
    let calls = sandbox.cargo_calls();
    let want: Vec<Vec<&str>> = vec![
        vec!["install", "crabtalk-cron", "--all-features"],
        vec![
            "install",
            "crabtalk-search",
            "--features",
            "bing",
            "--no-default-features",
        ],
        vec![
            "install",
            "--path",
            "/src/crabtalk/daemon",
            "--locked",
            "--features",
            "otel",
        ],
    ];
    assert_eq!(
        calls,
        want.iter()
            .map(|c| c.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
}

#[test]
fn list_reads_cargos_install_records_in_cargo_home() {
    let sandbox = Sandbox::new();
    let empty = sandbox.ok(&["list"]);
    assert!(empty.contains("no crabtalk binaries"), "{empty}");
    std::fs::write(
        sandbox.cargo_home.join(".crates.toml"),
        "[v1]\n\"crabtalk-cron 0.3.1 (registry+https://github.com/rust-lang/crates.io-index)\" = [\"crabtalk-cron\"]\n\"ripgrep 14.1.0 (registry+https://github.com/rust-lang/crates.io-index)\" = [\"rg\"]\n",
    )
    .unwrap();
    let listed = sandbox.ok(&["list"]);
    assert!(
        listed.contains("cron") && listed.contains("crabtalk-cron") && listed.contains("0.3.1"),
        "{listed}"
    );
    assert!(!listed.contains("ripgrep"), "{listed}");
    // .crates2.json wins when both exist (it also records features).
    std::fs::write(
        sandbox.cargo_home.join(".crates2.json"),
        r#"{"installs":{"crabtalkd 0.4.0 (path+file:///src/daemon)":{"bins":["crabtalkd"],"features":["x"]}}}"#,
    )
    .unwrap();
    let listed = sandbox.ok(&["list"]);
    assert!(
        listed.contains("daemon") && listed.contains("0.4.0") && listed.contains("path"),
        "{listed}"
    );
}

#[test]
fn rm_stops_the_service_before_uninstalling() {
    let sandbox = Sandbox::new().with_cargo_shim();
    // A third-party component that runs until stopped.
    sandbox.fake_binary(
        "crabtalk-sleeper",
        "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n",
    );
    // It never announces a port: do not wait the default 15 s for one.
    let out = sandbox
        .command(&["sleeper", "start"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let started = crate::support::stdout(&out);
    assert!(started.contains("sleeper started"), "{started}");
    let pid = sandbox.ps_row("sleeper")["pid"].as_u64().unwrap() as i32;
    let removed = sandbox.ok(&["rm", "sleeper"]);
    assert!(removed.contains("sleeper stopped"), "{removed}");
    // SAFETY: kill(pid, 0) only checks existence.
    wait_for("the sleeper to be gone", TIMEOUT, || {
        let gone = unsafe { libc::kill(pid, 0) } != 0
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z"));
        gone.then_some(())
    });
    assert_eq!(
        sandbox.cargo_calls(),
        vec![vec!["uninstall".to_owned(), "sleeper".to_owned()]]
    );
    assert!(sandbox.run_files().is_empty(), "{:?}", sandbox.run_files());
}

#[test]
fn up_installs_what_is_missing_and_starts_the_daemon_and_configured_components() {
    let sandbox = Sandbox::new().with_installing_cargo_shim();
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    std::fs::write(sandbox.home.join("config/crons.toml"), "").unwrap();
    let out = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        crate::support::stdout(&out),
        crate::support::stderr(&out)
    );
    assert_eq!(
        sandbox.cargo_calls(),
        vec![
            vec!["install".to_owned(), "crabtalkd".to_owned()],
            vec!["install".to_owned(), "crabtalk-cron".to_owned()],
        ]
    );
    for name in ["daemon", "cron"] {
        assert_eq!(sandbox.ps_row(name)["state"], "running", "{name}");
    }
    assert_eq!(sandbox.ps_row("search")["state"], "not installed");
    // Up again: nothing to install, everything already running.
    let again = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(
        crate::support::stdout(&again).contains("daemon is already running"),
        "{}",
        crate::support::stdout(&again)
    );
    assert_eq!(sandbox.cargo_calls().len(), 2);
    for name in ["daemon", "cron"] {
        assert!(sandbox.ok(&[name, "stop"]).contains("stopped"));
    }
    assert!(sandbox.run_files().is_empty(), "{:?}", sandbox.run_files());
}
