//! `$CRABTALK_HOME/env` read by the daemon itself: a provider key that is
//! only in the env file (not in the daemon's environment) reaches the
//! provider, and a malformed env file stops the daemon with `file:line`.

use std::process::{Command, Stdio};

use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary};

/// The variable the provider's key comes from; nothing else sets it.
const KEY_VAR: &str = "CRABTALK_ENV_FILE_E2E_KEY";

fn config_with_key_from_env(base_url: &str) -> String {
    format!(
        "default_model = \"scripted\"\n\n\
         [[providers]]\n\
         kind = \"openai-compatible\"\n\
         base_url = \"{base_url}\"\n\
         api_key_env = \"{KEY_VAR}\"\n\
         models = [\"scripted\"]\n\n\
         [transport]\n\
         tcp = \"127.0.0.1:0\"\n"
    )
}

#[tokio::test]
async fn a_provider_key_only_in_the_env_file_reaches_the_provider() {
    assert!(
        std::env::var_os(KEY_VAR).is_none(),
        "{KEY_VAR} must not be set for this test"
    );
    let llm = ScriptedLlm::start().await;
    let mut daemon =
        TestDaemon::start(daemon_binary(), &config_with_key_from_env(&llm.base_url())).await;
    // Without the env file the provider lacks its key.
    let log = daemon.log();
    assert!(
        log.contains(KEY_VAR) && log.contains("is not set"),
        "expected a missing-key problem in the log:\n{log}"
    );
    daemon.stop().await;

    std::fs::write(
        daemon.home().env_file(),
        format!("# written by the test\nexport {KEY_VAR}=\"sk-from-env-file\"\n"),
    )
    .unwrap();
    daemon.spawn().await;
    llm.push(Reply::text("the key arrived"));
    let turn = Turn::run(&daemon.client().await, message("crab", "user", "hi")).await;
    assert_eq!(turn.text(), "the key arrived", "log:\n{}", daemon.log());
}

#[test]
fn a_malformed_env_file_stops_the_daemon_naming_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("env"),
        "# keys\nOPENAI_API_KEY=sk-1\nthis is not an assignment\n",
    )
    .unwrap();
    let out = Command::new(daemon_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let env_line = format!("{}:3:", home.path().join("env").display());
    assert!(stderr.contains(&env_line), "{stderr}");
    assert!(!home.path().join("run/crabtalk.sock").exists());
}
