//! The poll loop: restarts, repeats, junk, conflicts, bad tokens.

use std::time::Duration;

use crabtalk_testkit::Reply;
use serde_json::json;

use crate::support::{Setup, alice};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_kill_9_neither_replays_nor_loses_an_update() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.llm.push(Reply::text("one"));
    let first = setup.api.text(&alice(), "first");
    setup.api.wait_for_text(alice().id, "one").await;
    crabtalk_testkit::eventually("the offset to be persisted", || {
        setup.offset() == Some(first + 1)
    })
    .await;
    setup.kill9_gateway();
    // Telegram still holds what it was not told was handled; a message
    // arrives while the gateway is down.
    setup.llm.push(Reply::text("two"));
    setup.api.text(&alice(), "second");
    setup.start_gateway().await;
    setup.api.wait_for_text(alice().id, "two").await;
    assert_eq!(
        setup.llm.requests().len(),
        2,
        "an update was replayed or lost"
    );
    assert_eq!(setup.model_saw(1), "second");
    // SIGTERM: clean exit, offset persisted, port file gone.
    let status = setup.stop_gateway().await;
    assert!(status.success(), "{status:?}\n{}", setup.log());
    assert_eq!(setup.offset(), Some(first + 2));
    assert!(!setup.home().port_file("telegram").unwrap().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_and_malformed_updates_are_skipped_and_the_gateway_goes_on() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.llm.push(Reply::text("answer one"));
    let id = setup.api.text(&alice(), "once");
    setup.api.wait_for_text(alice().id, "answer one").await;
    crabtalk_testkit::eventually("the offset", || setup.offset() == Some(id + 1)).await;
    // The same update again, junk, an update without an id, then a good one.
    setup.api.repeat_update(id, json!({"message": {"message_id": 9, "date": 0, "chat": {"id": 111, "type": "private"}, "from": {"id": 111, "is_bot": false, "first_name": "Alice"}, "text": "once"}}));
    setup
        .api
        .push_update(json!({"message": {"chat": "not a chat"}}));
    setup.api.push_update(json!({"surprise": {"x": 1}}));
    setup.api.push_raw(json!({"no": "id"}));
    setup.llm.push(Reply::text("answer two"));
    setup.api.text(&alice(), "twice");
    setup.api.wait_for_text(alice().id, "answer two").await;
    assert_eq!(setup.llm.requests().len(), 2, "{:?}", setup.llm.requests());
    setup.log_says("cannot read was skipped").await;
    setup.log_says("without an update_id was skipped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_deleted_and_another_poller_is_explained() {
    let mut setup = Setup::start("").await;
    setup.api.set_webhook();
    setup.api.conflict_polls(1);
    setup.start_gateway().await;
    setup.log_says("another program is polling this bot").await;
    assert!(!setup.api.webhook(), "the webhook was not deleted");
    setup.llm.push(Reply::text("still here"));
    setup.api.text(&alice(), "hello");
    setup.api.wait_for_text(alice().id, "still here").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_without_an_answer_is_started_again() {
    let mut setup = Setup::start("poll_timeout_secs = 1\npoll_restart_secs = 6").await;
    setup.api.stall_polls(1);
    setup.spawn_gateway();
    setup.log_says("getUpdates gave no answer").await;
    setup.llm.push(Reply::text("back"));
    setup.api.text(&alice(), "are you there");
    setup.api.wait_for_text(alice().id, "back").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_keeps_the_gateway_running_until_the_file_is_fixed() {
    let mut setup = Setup::start("").await;
    let good = std::fs::read_to_string(setup.home().component_config("telegram").unwrap()).unwrap();
    let bad = good.replace(crabtalk_fake_bot_api::TOKEN, "700000001:WRONG");
    crabtalk_home::write_atomic_private(
        &setup.home().component_config("telegram").unwrap(),
        bad.as_bytes(),
    )
    .unwrap();
    setup.spawn_gateway();
    setup.log_says("Telegram refused the bot token").await;
    let health = setup.health().await;
    assert!(health.contains("refused the bot token"), "{health}");
    assert!(
        setup
            .gateway
            .as_mut()
            .unwrap()
            .try_wait()
            .unwrap()
            .is_none(),
        "the gateway exited"
    );
    // Fixed: picked up without a restart.
    crabtalk_home::write_atomic_private(
        &setup.home().component_config("telegram").unwrap(),
        good.as_bytes(),
    )
    .unwrap();
    setup
        .log_says("connected to Telegram as @crab_test_bot")
        .await;
    setup.llm.push(Reply::text("fixed"));
    setup.api.text(&alice(), "hello");
    setup.api.wait_for_text(alice().id, "fixed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_is_logged_and_retried() {
    let mut setup = Setup::start("").await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let text = std::fs::read_to_string(setup.home().component_config("telegram").unwrap()).unwrap();
    let text = text.replace(&setup.api.url(), &format!("http://127.0.0.1:{port}"));
    crabtalk_home::write_atomic_private(
        &setup.home().component_config("telegram").unwrap(),
        text.as_bytes(),
    )
    .unwrap();
    setup.spawn_gateway();
    setup.log_says("did not answer").await;
    setup.mcp_port().await;
    assert!(
        setup
            .gateway
            .as_mut()
            .unwrap()
            .try_wait()
            .unwrap()
            .is_none(),
        "the gateway exited"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_without_a_token_exits_78_naming_the_key() {
    let mut setup = Setup::start("").await;
    let path = setup.home().component_config("telegram").unwrap();
    std::fs::write(&path, "allow = [1]\n").unwrap();
    setup.spawn_gateway();
    let status = setup.stop_gateway_when_exited().await;
    assert_eq!(status.code(), Some(78), "{}", setup.log());
    assert!(
        setup
            .log()
            .contains("telegram.toml:1:1: token: no bot token"),
        "{}",
        setup.log()
    );
}

impl Setup {
    async fn stop_gateway_when_exited(&mut self) -> std::process::ExitStatus {
        let mut child = self.gateway.take().unwrap();
        crabtalk_testkit::poll_until("the gateway to exit", async || child.try_wait().unwrap())
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_a_reply_streams_exits_cleanly_and_the_update_is_not_handled_again() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    // Long enough that Telegram's pace (one send or edit a second) keeps
    // the chat's lane busy for several seconds after the model is done.
    let mut report = String::from("# Report\n\n");
    for i in 0..300 {
        report.push_str(&format!("Line {i}: **bold** words and `code` 漢字 😀.\n\n"));
    }
    setup.llm.push(Reply::text(&report));
    let update = setup.api.text(&alice(), "write the report");
    setup
        .api
        .wait_until("the reply under way", |api| {
            !api.messages(chat).is_empty()
                && api.calls_of("editMessageText").len() + api.calls_of("sendMessage").len() >= 2
        })
        .await;
    let whole: String = crabtalk_telegram::render::render(report.trim_end())
        .into_iter()
        .map(|p| p.text)
        .collect();
    assert_ne!(
        setup.api.chat_text(chat),
        whole,
        "the reply was done already"
    );

    let asked = tokio::time::Instant::now();
    let status = setup.stop_gateway().await;
    let took = asked.elapsed();
    assert!(status.success(), "{status:?}\n{}", setup.log());
    assert!(
        took < Duration::from_secs(10),
        "exited {took:?} after SIGTERM"
    );
    assert_eq!(
        setup.offset(),
        Some(update + 1),
        "the offset was not persisted"
    );
    let log = setup.log();
    assert!(log.contains("polling stopped"), "{log}");
    assert!(!log.contains("ERROR"), "{log}");
    assert!(
        log.matches("WARN").count() <= 2,
        "warnings at shutdown:\n{log}"
    );
    // What was shown stays as Telegram took it: HTML it could parse (the
    // fake refuses anything else), no half-written message.
    let shown = setup.api.messages(chat);
    assert!(!shown.is_empty());
    for message in &shown {
        assert!(message.html.is_some(), "{message:?}");
        assert!(!message.text.trim().is_empty(), "{message:?}");
    }

    // Restarted: it polls from past that update and does not answer it
    // again; the next message is answered as usual.
    let restarted = tokio::time::Instant::now();
    setup.start_gateway().await;
    let first_poll = setup
        .api
        .calls_of("getUpdates")
        .into_iter()
        .find(|c| c.at > restarted)
        .unwrap();
    assert_eq!(
        first_poll.params["offset"],
        json!(update + 1),
        "{:?}",
        first_poll.params
    );
    setup.llm.push(Reply::text("next answer"));
    setup.api.text(&alice(), "next");
    setup.api.wait_for_text(chat, "next answer").await;
    assert_eq!(
        setup.llm.requests().len(),
        2,
        "the update was handled again"
    );
    assert_eq!(setup.model_saw(1), "next");
    let reports = setup
        .api
        .messages(chat)
        .iter()
        .filter(|m| m.text.starts_with("Report"))
        .count();
    assert_eq!(reports, 1, "the report was started twice");
}
