//! The command surface: help that explains itself, `unit` printing what
//! would be installed (and installing nothing), every unit's command line
//! accepted by its binary's own CLI, and a missing cargo in one line.

mod support;

use clap::Parser;
use crabtalk_command::component::run_command;
use support::{Sandbox, stderr, stdout};

#[test]
fn help_explains_every_command() {
    let sandbox = Sandbox::new();
    let help = sandbox.ok(&["--help"]);
    for word in [
        "pull",
        "rm",
        "update",
        "list",
        "ps",
        "up",
        "doctor",
        "daemon",
        "telegram",
        "search",
        "cron",
        "CRABTALK_SERVICE_MANAGER",
        "CARGO_HOME",
    ] {
        assert!(
            help.contains(word),
            "--help does not mention {word}:\n{help}"
        );
    }
    for (args, words) in [
        (
            &["pull", "--help"][..],
            &["--version", "--path", "--features", "cargo install"][..],
        ),
        (&["ps", "--help"], &["--json", "stale"]),
        (
            &["daemon", "--help"],
            &["start", "stop", "restart", "status", "logs", "unit"],
        ),
        (&["daemon", "logs", "--help"], &["--lines", "--follow"]),
        (
            &["search", "unit", "--help"],
            &["launchd", "systemd", "schtasks", "process"],
        ),
        (&["up", "--help"], &["--path"]),
        (&["doctor", "--help"], &["linger"]),
    ] {
        let text = sandbox.ok(args);
        for word in words {
            assert!(text.contains(word), "{args:?} help lacks {word}:\n{text}");
        }
    }
    let bad = sandbox.crabup(&["daemon", "launch"]);
    assert_eq!(bad.status.code(), Some(2));
    let tui = sandbox.crabup(&["tui", "start"]);
    assert!(!tui.status.success());
    assert!(stderr(&tui).contains("not a service"), "{}", stderr(&tui));
}

/// The argv of the `ExecStart=` line of a rendered systemd unit.
fn exec_start_argv(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    // Quoted words; the sandbox's paths hold no quotes, escapes or `%`/`$`.
    line.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, word)| word.to_owned())
        .collect()
}

#[test]
fn every_unit_is_printed_and_its_command_line_parses_with_the_binary_cli() {
    let sandbox = Sandbox::new();
    for name in ["daemon", "telegram", "search", "cron"] {
        for manager in ["systemd", "launchd", "schtasks", "process"] {
            let text = sandbox.ok(&[name, "unit", "--manager", manager]);
            assert!(
                text.contains(&sandbox.home.display().to_string()),
                "{name} {manager}:\n{text}"
            );
            assert!(
                text.contains(&format!("logs/{name}.log")),
                "{name} {manager}:\n{text}"
            );
        }
        let unit = sandbox.ok(&[name, "unit", "--manager", "systemd"]);
        let argv = exec_start_argv(&unit);
        let binary = if name == "daemon" {
            "crabtalkd".to_owned()
        } else {
            format!("crabtalk-{name}")
        };
        assert!(argv[0].ends_with(&format!("/bin/{binary}")), "{argv:?}");
        if name == "daemon" {
            // The daemon's own clap definition (its library's cli module).
            if let Err(err) = crabtalkd::cli::Cli::try_parse_from(&argv) {
                panic!("the daemon rejects its unit's command line {argv:?}: {err}");
            }
        } else {
            // Components share the component main helper's CLI.
            let cli = run_command("crabtalk-component", "component");
            if let Err(err) = cli.try_get_matches_from(&argv) {
                panic!("{name} rejects its unit's command line {argv:?}: {err}");
            }
        }
    }
    // `unit` installs nothing and starts nothing.
    assert!(!sandbox.home.exists() || sandbox.run_files().is_empty());
    assert!(!sandbox.home.join("logs").exists());
}

#[test]
fn the_default_unit_is_the_selected_managers() {
    let sandbox = Sandbox::new();
    let text = stdout(
        &sandbox
            .command(&["daemon", "unit"])
            .env("CRABTALK_SERVICE_MANAGER", "systemd")
            .output()
            .unwrap(),
    );
    assert!(text.contains("[Service]"), "{text}");
    let text = sandbox.ok(&["daemon", "unit"]);
    assert!(text.contains("process backend"), "{text}");
    let bad = sandbox
        .command(&["ps"])
        .env("CRABTALK_SERVICE_MANAGER", "upstart")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("upstart") && stderr(&bad).contains("process, systemd"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn missing_cargo_is_one_line_pointing_at_rustup() {
    let mut sandbox = Sandbox::new();
    let empty = sandbox.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    sandbox.path_override = Some(empty.display().to_string());
    for args in [&["pull", "daemon"][..], &["update"][..]] {
        // `update` only calls cargo when something is installed.
        if args == ["update"] {
            std::fs::write(
                sandbox.cargo_home.join(".crates2.json"),
                r#"{"installs":{"crabtalkd 0.1.0 (registry+https://github.com/rust-lang/crates.io-index)":{"bins":["crabtalkd"]}}}"#,
            )
            .unwrap();
        }
        let out = sandbox.crabup(args);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("https://rustup.rs"), "{err}");
    }
}

#[test]
fn doctor_reports_each_check_and_fails_only_on_real_problems() {
    let sandbox = Sandbox::new();
    let out = sandbox.crabup(&["doctor"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    for check in [
        "cargo",
        "PATH",
        "service manager: process (forced",
        "run files",
        "daemon",
        "providers",
    ] {
        assert!(
            text.contains(check),
            "doctor does not check {check}:\n{text}"
        );
    }
    assert!(text.contains("[warn] providers"), "{text}");
    // A crashed service's pid file is called out.
    std::fs::create_dir_all(sandbox.home.join("run")).unwrap();
    std::fs::write(
        sandbox.home.join("run/search.pid"),
        format!("{}\n", u32::MAX - 7),
    )
    .unwrap();
    let text = sandbox.ok(&["doctor"]);
    assert!(
        text.contains("[warn] run files") && text.contains("search.pid"),
        "{text}"
    );
    // Without cargo the check fails, and so does doctor.
    let mut no_cargo = Sandbox::new();
    let empty = no_cargo.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    no_cargo.path_override = Some(empty.display().to_string());
    let out = no_cargo.crabup(&["doctor"]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("[FAIL] cargo"), "{}", stdout(&out));
}
