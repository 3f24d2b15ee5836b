//! The command surface: help that explains itself, `unit` printing what
//! would be installed (and installing nothing), every unit's command line
//! (systemd, launchd and Task Scheduler) accepted by its binary's own CLI,
//! and a missing cargo in one line.

use crate::support::{Sandbox, stderr, stdout};
use clap::CommandFactory;

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
        (&["rm", "--help"], &["Stop", "cargo uninstall", "stay"]),
        (&["update", "--help"], &["crabup's own version", "features"]),
        (&["list", "--help"], &["versions", "CARGO_HOME"]),
        (&["daemon", "status", "--help"], &["exit code 3"]),
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

// The sandbox's paths hold no quotes, escapes, `%` or `$`, so these
// decoders stay small; every escape and hostile value is checked in
// command/command/tests/it/units.rs.

/// The argv of the `ExecStart=` line of a rendered systemd unit.
fn systemd_argv(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    line.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, word)| word.to_owned())
        .collect()
}

/// The `ProgramArguments` of a rendered launchd plist.
fn launchd_argv(plist: &str) -> Vec<String> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(plist, options)
        .unwrap_or_else(|e| panic!("invalid plist: {e}\n{plist}"));
    let mut entries = doc.descendants().filter(|n| n.is_element());
    entries
        .find(|n| n.has_tag_name("key") && n.text() == Some("ProgramArguments"))
        .expect("a ProgramArguments key");
    let array = entries.next().expect("its value");
    assert!(array.has_tag_name("array"), "{plist}");
    array
        .children()
        .filter(|n| n.has_tag_name("string"))
        .map(|n| n.text().unwrap_or_default().to_owned())
        .collect()
}

/// The program words of a rendered task's `cmd.exe /c "… && "prog" "arg"
/// >>"log" 2>&1"` action.
fn schtasks_argv(task: &str) -> Vec<String> {
    // Parsed as printed: the declaration says what the text is.
    assert!(
        task.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
        "{task}"
    );
    let doc = roxmltree::Document::parse(task)
        .unwrap_or_else(|e| panic!("invalid task XML: {e}\n{task}"));
    let text_of = |tag: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name(tag))
            .and_then(|n| n.text())
            .unwrap_or_else(|| panic!("no {tag} in\n{task}"))
            .to_owned()
    };
    assert_eq!(text_of("Command"), "cmd.exe");
    let arguments = text_of("Arguments");
    let line = arguments
        .strip_prefix("/d /v:off /s /c \"")
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("unexpected arguments {arguments:?}"));
    let (commands, _log) = line.rsplit_once(" >>").expect("a log redirection");
    let program = commands.rsplit(" && ").next().unwrap();
    program
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .expect("quoted words")
        .split("\" \"")
        .map(str::to_owned)
        .collect()
}

/// The clap definition of the binary behind `name`: the daemon's library
/// `cli` module, or the component crate's.
fn binary_cli(name: &str) -> clap::Command {
    match name {
        "daemon" => crabtalkd::cli::Cli::command(),
        "search" => crabtalk_search::cli::command(),
        "telegram" => crabtalk_telegram::cli::command(),
        "cron" => crabtalk_cron::cli::command(),
        other => panic!("no binary CLI for {other}"),
    }
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
        let binary = if name == "daemon" {
            "crabtalkd".to_owned()
        } else {
            format!("crabtalk-{name}")
        };
        for (manager, argv_of) in [
            ("systemd", systemd_argv as fn(&str) -> Vec<String>),
            ("launchd", launchd_argv),
            ("schtasks", schtasks_argv),
        ] {
            let argv = argv_of(&sandbox.ok(&[name, "unit", "--manager", manager]));
            assert!(
                argv[0].ends_with(&format!("/bin/{binary}")),
                "{name} {manager}: {argv:?}"
            );
            if let Err(err) = binary_cli(name).try_get_matches_from(&argv) {
                panic!("{binary} rejects its {manager} unit's command line {argv:?}: {err}");
            }
        }
        // And a command line the binary does not have is refused by it.
        let wrong = [format!("/bin/{binary}"), "start".to_owned()];
        assert!(binary_cli(name).try_get_matches_from(wrong).is_err());
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
fn without_the_variable_the_machines_manager_is_used_and_process_where_none_runs() {
    let sandbox = Sandbox::new();
    let text = stdout(
        &sandbox
            .command(&["daemon", "unit"])
            .env_remove("CRABTALK_SERVICE_MANAGER")
            .output()
            .unwrap(),
    );
    // This check's own answer: CI containers have no user systemd.
    if crabtalk_command::manager::systemd::user_manager_available() {
        assert!(text.contains("[Service]"), "{text}");
    } else {
        assert!(text.contains("process backend"), "{text}");
    }
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
    // Without cargo the check warns: release binaries need no cargo,
    // building from source does.
    let mut no_cargo = Sandbox::new();
    let empty = no_cargo.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    no_cargo.path_override = Some(empty.display().to_string());
    let out = no_cargo.crabup(&["doctor"]);
    let text = stdout(&out);
    assert!(
        text.contains("[warn] cargo") && text.contains("https://rustup.rs"),
        "{text}"
    );
}

#[test]
fn a_typo_installs_nothing_and_names_the_family_program() {
    let sandbox = Sandbox::new().with_cargo_shim();
    for (args, likely) in [
        (&["pull", "deamon"][..], "daemon"),
        (&["pull", "crabtalk-serch"], "crabtalk-search"),
        (&["rm", "telegrma"], "telegram"),
        (&["pull", "cron", "tuii"], "tui"),
    ] {
        let out = sandbox.crabup(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(
            err.contains(&format!("Did you mean `{likely}`?")) && err.contains("--third-party"),
            "{args:?}: {err}"
        );
    }
    // Nothing reached cargo: not even the good name before the typo.
    assert!(
        sandbox.cargo_calls().is_empty(),
        "{:?}",
        sandbox.cargo_calls()
    );
    // A service command with a name outside the family is refused too.
    let out = sandbox.crabup(&["serch", "start"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Did you mean `search`?"),
        "{}",
        stderr(&out)
    );
    assert!(sandbox.run_files().is_empty(), "{:?}", sandbox.run_files());
    // Said explicitly, a third-party crate goes to cargo as it is.
    let out = sandbox.crabup(&["pull", "--third-party", "some-tool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        sandbox.cargo_calls().len(),
        1,
        "{:?}",
        sandbox.cargo_calls()
    );
    assert!(sandbox.cargo_calls()[0].contains(&"some-tool".to_owned()));
}
