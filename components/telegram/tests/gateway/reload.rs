//! `telegram.toml` edited while the gateway runs: who may talk changes at
//! once; what is read only at start is named, with the command.

use crabtalk_testkit::Reply;

use crate::support::{Setup, alice, mallory};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_turned_on_while_running_applies_without_a_restart() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.api.text(&mallory(), "let me in");
    setup.llm.push(Reply::text("hello alice"));
    setup.api.text(&alice(), "hi");
    setup.api.wait_for_text(alice().id, "hello alice").await;
    assert!(
        setup.api.messages(mallory().id).is_empty(),
        "pairing is off"
    );
    setup.write_config("pairing = true");
    setup.log_says("who may talk is read again").await;
    setup.api.text(&mallory(), "let me in");
    setup
        .api
        .wait_for_text(mallory().id, "give the owner this code")
        .await;
    // A key read only at start: named, with the command that applies it.
    setup.write_config("pairing = true\ntool_status = \"off\"");
    setup.log_says("take effect after a restart").await;
    let health = setup.health().await;
    assert!(
        health.contains("changed tool_status") && health.contains("crabup telegram restart"),
        "{health}"
    );
    // A file with a problem changes nothing and is named.
    setup.write_config("pairing = maybe");
    setup
        .log_says("the gateway keeps the settings it has")
        .await;
    setup.llm.push(Reply::text("still here"));
    setup.api.text(&alice(), "hi again");
    setup.api.wait_for_text(alice().id, "still here").await;
}
