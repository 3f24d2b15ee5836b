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
    sandbox.ok(&["pull", "--third-party", "daemon", "tui", "some-gateway"]);
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
    let family = format!("={}", env!("CARGO_PKG_VERSION"));
    let want: Vec<Vec<String>> = [
        vec!["install", "crabtalkd", "--version", &family],
        vec!["install", "crabtalk-tui", "--version", &family],
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
    let missing = sandbox.crabup(&["pull", "--third-party", "--path", &root, "nope"]);
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
    let family = format!("={}", env!("CARGO_PKG_VERSION"));
    let want: Vec<Vec<&str>> = vec![
        vec![
            "install",
            "crabtalk-cron",
            "--version",
            &family,
            "--all-features",
        ],
        vec![
            "install",
            "crabtalk-search",
            "--version",
            &family,
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
        .command(&["sleeper", "start", "--third-party"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let started = crate::support::stdout(&out);
    assert!(started.contains("sleeper started"), "{started}");
    let pid = sandbox.ps_row("sleeper")["pid"].as_u64().unwrap() as i32;
    let removed = sandbox.ok(&["rm", "--third-party", "sleeper"]);
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
    // crabup itself and the client, then the services; telegram has no
    // config, so it is neither installed nor started.
    let version = format!("={}", env!("CARGO_PKG_VERSION"));
    let expected: Vec<Vec<String>> = [
        "crabup",
        "crabtalk-tui",
        "crabtalkd",
        "crabtalk-search",
        "crabtalk-cron",
    ]
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
    for name in ["daemon", "cron", "search"] {
        assert_eq!(sandbox.ps_row(name)["state"], "running", "{name}");
    }
    assert_eq!(sandbox.ps_row("telegram")["state"], "not installed");
    let said = crate::support::stdout(&out);
    assert!(said.contains("[5/5] crabtalk-cron installed in"), "{said}");
    assert!(said.contains("NAME") && said.contains("HEALTH"), "{said}");
    let tui = sandbox.cargo_home.join("bin/crabtalk-tui");
    assert!(
        said.contains(&format!("Next: {}", tui.display())),
        "the next command, with its path (cargo's bin is not on PATH here): {said}"
    );
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
    assert_eq!(sandbox.cargo_calls().len(), 5);
    for name in ["daemon", "cron", "search"] {
        assert!(sandbox.ok(&[name, "stop"]).contains("stopped"));
    }
    assert!(sandbox.run_files().is_empty(), "{:?}", sandbox.run_files());
}

/// A service binary that runs until SIGTERM.
const RUNS_UNTIL_TERM: &str = "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n";

#[test]
fn up_from_a_checkout_builds_the_family_once_installs_it_and_restarts_the_services() {
    let sandbox = Sandbox::new().with_cargo_shim();
    for binary in [
        "crabtalkd",
        "crabtalk-cron",
        "crabtalk-search",
        "crabtalk-telegram",
    ] {
        sandbox.fake_binary(binary, RUNS_UNTIL_TERM);
    }
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    std::fs::write(
        sandbox.home.join("config/telegram.toml"),
        "token = \"123:abc\"\nallow = [1]\n",
    )
    .unwrap();
    let root = checkout();
    let out = sandbox
        .command(&["up", "--path", &root.display().to_string()])
        .env_remove("CARGO_TARGET_DIR")
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    let said = crate::support::stdout(&out);
    assert!(
        out.status.success(),
        "{said}{}",
        crate::support::stderr(&out)
    );
    // One build of the whole workspace, not one `cargo install` each.
    assert_eq!(
        sandbox.cargo_calls(),
        vec![
            [
                "build",
                "--release",
                "--workspace",
                "--bins",
                "--locked",
                "--message-format=json-render-diagnostics"
            ]
            .map(String::from)
            .to_vec()
        ]
    );
    assert!(
        said.contains(&format!(
            "building 6 (crabup, tui, daemon, telegram, search, cron) from {} in one cargo build",
            root.display()
        )),
        "{said}"
    );
    // Each built binary installed into $CARGO_HOME/bin and recorded.
    let built = sandbox.dir.path().join("shim-target/release");
    let records: serde_json::Value = serde_json::from_slice(
        &std::fs::read(sandbox.cargo_home.join(".crabup-installs.json")).unwrap(),
    )
    .unwrap();
    for binary in [
        "crabup",
        "crabtalk-tui",
        "crabtalkd",
        "crabtalk-telegram",
        "crabtalk-search",
        "crabtalk-cron",
    ] {
        let installed = sandbox.cargo_home.join("bin").join(binary);
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            std::fs::read(built.join(binary)).unwrap(),
            "{binary}"
        );
        assert!(
            said.contains(&format!("{binary} installed in {}", installed.display())),
            "{said}"
        );
        let record = &records["binaries"][binary];
        assert_eq!(record["version"], env!("CARGO_PKG_VERSION"), "{records}");
        assert_eq!(
            record["source"],
            format!("path+file://{}", root.display()),
            "{records}"
        );
    }
    for name in ["daemon", "telegram", "search", "cron"] {
        assert_eq!(sandbox.ps_row(name)["state"], "running", "{name}");
        assert!(sandbox.ok(&[name, "stop"]).contains("stopped"));
    }
}

#[test]
fn up_without_a_checkout_says_how_to_install_from_one_when_the_registry_lacks_the_family() {
    let sandbox = Sandbox::new().with_cargo_shim();
    registry_with_only_another_release(&sandbox);
    let out = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = crate::support::stderr(&out);
    assert!(
        err.contains("is not published")
            && err.contains("crabup up --path <checkout>")
            && err.contains("Nothing was started"),
        "{err}"
    );
    // It stopped at the first crate the registry lacks.
    assert_eq!(
        sandbox.cargo_calls().len(),
        1,
        "{:?}",
        sandbox.cargo_calls()
    );
    assert!(sandbox.run_files().is_empty(), "{:?}", sandbox.run_files());
}

/// A cargo that answers like crates.io where `crabtalkd` is published only
/// at 0.0.23 (another crabtalk release): asked for a version it does not
/// have, it fails with cargo's own message; asked for 0.0.23, or for no
/// version, it installs 0.0.23.
fn registry_with_only_another_release(sandbox: &crate::support::Sandbox) {
    let shim = sandbox.path_prefix.last().unwrap().join("cargo");
    let recorder = std::fs::read_to_string(&shim).unwrap();
    let recorder = recorder.strip_prefix("#!/bin/sh\n").unwrap();
    let registry = r#"
if [ "$1" = install ] && [ "${2#--}" = "$2" ]; then
  case "$3 $4" in
    "--version =0.0.23"|"--version 0.0.23"|" ") ;;
    *) echo "error: could not find \`$2\` in registry \`crates-io\` with version \`$4\`" >&2; exit 101 ;;
  esac
  printf '#!/bin/sh\necho crabtalkd 0.0.23\n' > "$CARGO_HOME/bin/$2"
  chmod +x "$CARGO_HOME/bin/$2"
fi
"#;
    crate::support::script(&shim, &format!("{recorder}{registry}"));
}

#[test]
fn pull_never_installs_another_release_of_the_family_without_saying_so() {
    let sandbox = Sandbox::new().with_cargo_shim();
    registry_with_only_another_release(&sandbox);
    let binary = sandbox.cargo_home.join("bin/crabtalkd");

    // Without --version: the matching version is asked for, it is not
    // published, nothing is installed and the user is told what to do.
    let out = sandbox.crabup(&["pull", "daemon"]);
    assert!(!out.status.success());
    let said = crate::support::stderr(&out);
    assert!(
        said.contains("could not find `crabtalkd`"),
        "cargo's own words pass through: {said}"
    );
    assert!(
        said.contains(&format!(
            "crabtalkd {} (the version that matches this crabup) is not published",
            env!("CARGO_PKG_VERSION")
        )) && said.contains("--path <checkout>")
            && said.contains("--git <url>"),
        "{said}"
    );
    assert!(!binary.exists(), "nothing of another version was installed");
    let family = format!("={}", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        sandbox.cargo_calls(),
        vec![vec![
            "install".to_owned(),
            "crabtalkd".into(),
            "--version".into(),
            family
        ]]
    );

    // With --version for another release: installed, with a warning.
    let out = sandbox.crabup(&["pull", "daemon", "--version", "0.0.23"]);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let said = crate::support::stderr(&out);
    assert!(
        said.contains("warning: installing crabtalkd 0.0.23, not")
            && said.contains("--version asked for it"),
        "{said}"
    );
    assert!(binary.exists());

    // From a repository, at a revision.
    sandbox.ok(&[
        "pull",
        "cron",
        "--git",
        "https://example.com/crabtalk.git",
        "--rev",
        "v0.1.0",
    ]);
    assert_eq!(
        sandbox.cargo_calls().last().unwrap(),
        &[
            "install",
            "--git",
            "https://example.com/crabtalk.git",
            "--rev",
            "v0.1.0",
            "crabtalk-cron",
            "--locked"
        ]
        .map(String::from)
        .to_vec()
    );
}

#[test]
fn list_update_and_doctor_point_out_a_binary_of_another_release() {
    let sandbox = Sandbox::new().with_cargo_shim();
    std::fs::write(
        sandbox.cargo_home.join(".crates2.json"),
        r#"{"installs":{"crabtalkd 0.0.23 (registry+https://github.com/rust-lang/crates.io-index)":{"bins":["crabtalkd"],"features":[]}}}"#,
    )
    .unwrap();
    let family = env!("CARGO_PKG_VERSION");
    let listed = sandbox.ok(&["list"]);
    assert!(
        listed.contains(&format!("0.0.23 (crabup is {family})")),
        "{listed}"
    );
    let doctor = sandbox.crabup(&["doctor"]);
    let said = crate::support::stdout(&doctor);
    assert!(
        said.contains("versions")
            && said.contains(&format!(
                "crabtalkd 0.0.23 differ from crabup's version {family}"
            )),
        "{said}"
    );
    let updated = sandbox.ok(&["update"]);
    assert!(
        updated.contains(&format!(
            "crabtalkd 0.0.23 differs from crabup's version {family}"
        )),
        "{updated}"
    );
    let installs: Vec<Vec<String>> = sandbox
        .cargo_calls()
        .into_iter()
        .filter(|call| call.first().is_some_and(|first| first == "install"))
        .collect();
    assert_eq!(
        installs,
        vec![vec![
            "install".to_owned(),
            "crabtalkd".into(),
            "--version".into(),
            format!("={family}")
        ]]
    );
}
