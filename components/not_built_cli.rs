//! Checks shared by the components whose service is not built yet: their
//! binary's command line is real (`run`, `-v`, `--help`), `run` says the
//! service is not built with its own exit code, and the library's clap
//! definition is the one the binary parses with. Each component's
//! `tests/cli.rs` includes this file and calls it with its own binary.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crabtalk_home::Service;

fn run(exe: &str, args: &[&str], home: &Path) -> Output {
    Command::new(exe)
        .args(args)
        .env("CRABTALK_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The binary at `exe` (service `name`) parses `--help`, `run` and `-v`,
/// refuses anything else with exit 2, and `run` exits 69 saying so.
pub fn the_binary_parses_and_run_says_it_is_not_built(exe: &str, name: &str) {
    let home = tempfile::tempdir().unwrap();
    let binary = format!("crabtalk-{name}");
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["-v", "run", "--help"],
    ] {
        let out = run(exe, args, home.path());
        assert!(out.status.success(), "{args:?}: {out:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains(&binary), "{args:?}: {help}");
        assert!(help.contains("--verbose"), "{args:?}: {help}");
    }
    let top = String::from_utf8_lossy(&run(exe, &["--help"], home.path()).stdout).into_owned();
    assert!(top.contains("run") && top.contains("crabup"), "{top}");

    let out = run(exe, &["run", "-vv"], home.path());
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{name} service is not built yet"))
            && err.contains(&format!("crabup {name} stop")),
        "{err}"
    );

    for bad in [&[][..], &["start"], &["run", "extra"]] {
        assert_eq!(run(exe, bad, home.path()).status.code(), Some(2), "{bad:?}");
    }
}

/// The library's `command()` and `service()` describe the binary `name`.
pub fn the_library_cli_is_the_binarys(command: clap::Command, service: Service, name: &str) {
    let binary = format!("crabtalk-{name}");
    let parse = |args: &[&str]| command.clone().try_get_matches_from(args).is_ok();
    assert!(parse(&[&binary, "run"]));
    assert!(parse(&[&binary, "-v", "run"]));
    assert!(!parse(&[&binary, "start"]));
    assert_eq!(service.binary(), binary);
    assert_eq!(service.name(), name);
}
