//! Where each binary really is (finding 5 of issue 27): binaries found on
//! PATH rather than in cargo's records are listed with their path and
//! version, and `up` names the client as it can be run — never a path in
//! `$CARGO_HOME/bin` that does not exist.

use crate::support::{Sandbox, script, stdout};

#[test]
fn list_and_up_say_where_binaries_found_on_path_really_are() {
    let mut sandbox = Sandbox::new().with_cargo_shim();
    let elsewhere = sandbox.dir.path().join("opt-bin");
    let version = env!("CARGO_PKG_VERSION");
    for binary in [
        "crabtalk-tui",
        "crabtalkd",
        "crabtalk-search",
        "crabtalk-cron",
    ] {
        script(
            &elsewhere.join(binary),
            &format!(
                "case \"$1\" in --version) echo \"{binary} {version}\"; exit 0;; check) echo \"error: unrecognized subcommand 'check'\" >&2; exit 2;; esac\n\
                 trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n"
            ),
        );
    }
    // crabup itself is this build's, found on PATH as well.
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_crabup"), elsewhere.join("crabup")).unwrap();
    sandbox.path_prefix.push(elsewhere.clone());

    let listed = sandbox.ok(&["list"]);
    assert!(!listed.contains("no crabtalk binaries"), "{listed}");
    for binary in [
        "crabtalkd",
        "crabtalk-tui",
        "crabtalk-search",
        "crabtalk-cron",
        "crabup",
    ] {
        let path = elsewhere.join(binary);
        assert!(
            listed.contains(&format!(
                "{} (on PATH, not from cargo install)",
                path.display()
            )),
            "{binary}: {listed}"
        );
    }
    let daemon = listed
        .lines()
        .find(|line| line.starts_with("daemon "))
        .unwrap();
    assert!(
        daemon.contains(version) && daemon.contains("PATH"),
        "{daemon}"
    );

    let out = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    let said = stdout(&out);
    assert!(
        out.status.success(),
        "{said}{}",
        crate::support::stderr(&out)
    );
    assert!(
        sandbox.cargo_calls().is_empty(),
        "{:?}",
        sandbox.cargo_calls()
    );
    let next = said
        .lines()
        .find(|line| line.starts_with("Next: "))
        .unwrap();
    assert!(next.starts_with("Next: crabtalk-tui "), "{said}");
    assert!(
        !said.contains(&sandbox.cargo_home.join("bin").display().to_string()),
        "a path that does not exist: {said}"
    );
    for name in ["daemon", "cron", "search"] {
        sandbox.ok(&[name, "stop"]);
    }
}
