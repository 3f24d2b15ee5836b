//! First-run setup without a terminal: a service that cannot run without
//! its config is refused before anything is installed or started, with a
//! message that says what to do; one that can (the daemon without
//! providers) is not held back.

mod support;

use support::{Sandbox, stderr};

#[test]
fn telegram_without_a_token_and_without_a_terminal_fails_clearly_and_starts_nothing() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary("crabtalk-telegram", "echo started >&2\nexec sleep 600\n");
    let out = sandbox.crabup(&["telegram", "start"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("no bot token") && err.contains("config/telegram.toml"),
        "{err}"
    );
    assert!(err.contains("crabup telegram start"), "{err}");
    assert!(
        sandbox.run_files().is_empty(),
        "something was started: {:?}",
        sandbox.run_files()
    );
    assert!(!sandbox.home.join("logs/telegram.log").exists());
    assert_eq!(sandbox.ps_row("telegram")["state"], "stopped");
}

#[test]
fn a_service_that_is_not_installed_says_how_to_install_it() {
    let sandbox = Sandbox::new();
    let out = sandbox.crabup(&["search", "start"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("crabup pull search"),
        "{}",
        stderr(&out)
    );
    let status = sandbox.crabup(&["search", "status"]);
    assert_eq!(status.status.code(), Some(3));
    let stop = sandbox.ok(&["search", "stop"]);
    assert!(stop.contains("search is not running"), "{stop}");
}
