//! The binary's command line is real (`run`, `-v`, `--help`), and `run`
//! says the service is not built yet with its own exit code.

use std::process::{Command, Output, Stdio};

fn telegram(args: &[&str], home: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crabtalk-telegram"))
        .args(args)
        .env("CRABTALK_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn help_run_and_verbosity_parse_and_run_says_it_is_not_built() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["-v", "run", "--help"],
    ] {
        let out = telegram(args, home.path());
        assert!(out.status.success(), "{args:?}: {out:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("crabtalk-telegram"), "{args:?}: {help}");
        assert!(help.contains("--verbose"), "{args:?}: {help}");
    }
    let top = String::from_utf8_lossy(&telegram(&["--help"], home.path()).stdout).into_owned();
    assert!(top.contains("run") && top.contains("crabup"), "{top}");

    let run = telegram(&["run", "-vv"], home.path());
    assert_eq!(run.status.code(), Some(69), "{run:?}");
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("telegram service is not built yet") && err.contains("crabup telegram stop"),
        "{err}"
    );

    for bad in [&[][..], &["start"], &["run", "extra"]] {
        assert_eq!(telegram(bad, home.path()).status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn the_library_cli_is_the_binarys() {
    let parse = |args: &[&str]| {
        crabtalk_telegram::cli::command()
            .try_get_matches_from(args)
            .is_ok()
    };
    assert!(parse(&["crabtalk-telegram", "run"]));
    assert!(parse(&["crabtalk-telegram", "-v", "run"]));
    assert!(!parse(&["crabtalk-telegram", "start"]));
    assert_eq!(
        crabtalk_telegram::cli::service().binary(),
        "crabtalk-telegram"
    );
    assert_eq!(crabtalk_telegram::cli::service().name(), "telegram");
}
