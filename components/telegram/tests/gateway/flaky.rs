//! A Bot API that fails as the real one does: 5xx, nginx's 502 page,
//! answers cut short. Nothing is lost, nothing is sent twice, and what
//! finally cannot be delivered is told.

use crabtalk_fake_bot_api::{FakeBotApi, Fault, TOKEN};
use crabtalk_telegram::{BotClient, CallError};
use crabtalk_testkit::{Reply, ToolCall};
use serde_json::json;

use crate::support::{Setup, alice};

#[tokio::test]
async fn the_client_reads_every_shape_the_bot_api_answers_in() {
    let api = FakeBotApi::start().await;
    let url = url::Url::parse(&api.url()).unwrap();
    let client = BotClient::new(&url, TOKEN, std::time::Duration::from_secs(10));
    let send = json!({"chat_id": 5, "text": "hi"});
    // Method names in any case, as the real Bot API takes them.
    let sent = client.call("SENDMESSAGE", &send).await.unwrap();
    assert_eq!(sent["text"], "hi");
    api.fail_next("sendMessage", None, Fault::RetryAfter(3));
    assert!(matches!(
        client.call("sendMessage", &send).await,
        Err(CallError::Refused {
            code: 429,
            retry_after: Some(3),
            ..
        })
    ));
    api.fail_next("sendMessage", None, Fault::ServerError(500));
    let err = client.call("sendMessage", &send).await.unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert_eq!(err.to_string(), "500 Internal Server Error");
    api.fail_next("sendMessage", None, Fault::BadGateway);
    let err = client.call("sendMessage", &send).await.unwrap_err();
    assert!(
        matches!(err, CallError::NotJson { status: 502, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("<title>502 Bad Gateway</title>"),
        "{err}"
    );
    api.fail_next("sendMessage", None, Fault::NotJson);
    let err = client.call("sendMessage", &send).await.unwrap_err();
    assert!(
        matches!(err, CallError::NotJson { status: 200, .. }),
        "{err}"
    );
    assert!(err.is_transient());
    // A refusal is not worth trying again, and no error shows the token.
    let err = client
        .call("sendMessage", &json!({"text": "no chat"}))
        .await
        .unwrap_err();
    assert!(!err.is_transient(), "{err}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = url::Url::parse(&format!("http://{}", closed.local_addr().unwrap())).unwrap();
    drop(closed);
    let err = BotClient::new(&gone, TOKEN, std::time::Duration::from_secs(10))
        .call("getMe", &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Network(_)), "{err}");
    assert!(!err.to_string().contains(TOKEN), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_or_an_answer_that_is_not_json_on_send_is_retried_and_sent_once() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup
        .api
        .fail_next("sendMessage", Some(chat), Fault::ServerError(500));
    setup
        .api
        .fail_next("sendMessage", Some(chat), Fault::NotJson);
    setup.llm.push(Reply::text("delivered after all"));
    setup.api.text(&alice(), "hi");
    setup.api.wait_for_text(chat, "delivered after all").await;
    let texts: Vec<String> = setup
        .api
        .messages(chat)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["delivered after all"]);
    assert_eq!(setup.api.calls_of("sendMessage").len(), 3);
    setup.log_says("500 Internal Server Error").await;
    setup
        .log_says("200 OK with an answer that is not the Bot API's JSON")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_on_an_edit_is_retried_as_an_edit_never_as_a_second_copy() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    // The reply is shown, then edited once the model continues.
    setup.llm.push(Reply::Tools {
        text: "Let me look.".into(),
        calls: vec![ToolCall::new(
            "c1",
            "read",
            json!({"path": "/nonexistent/file"}),
        )],
    });
    setup.llm.push(Reply::Gated("Found nothing there.".into()));
    setup.api.text(&alice(), "look it up");
    setup.api.wait_for_text(chat, "Let me look.").await;
    setup.llm.wait_for_requests(2).await;
    setup
        .api
        .fail_next("editMessageText", Some(chat), Fault::BadGateway);
    setup.llm.release();
    let message = setup.api.wait_for_text(chat, "Found nothing there.").await;
    assert!(message.text.starts_with("Let me look."), "{}", message.text);
    let messages = setup.api.messages(chat);
    assert_eq!(
        messages.len(),
        1,
        "the reply was continued in a second message: {messages:?}"
    );
    assert!(setup.api.calls_of("editMessageText").len() >= 2);
    setup.log_says("502 Bad Gateway").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_on_get_updates_is_logged_as_what_it_was_and_polling_goes_on() {
    // A poll that takes 6 s is abandoned: the HTTP library's own 10 s
    // pause after a 5xx made the log blame that instead of the 502.
    let mut setup = Setup::start("poll_timeout_secs = 1\npoll_restart_secs = 6").await;
    setup.api.fail_next("getUpdates", None, Fault::BadGateway);
    setup.start_gateway().await;
    setup
        .log_says("getUpdates failed: the Bot API is unavailable: 502 Bad Gateway")
        .await;
    setup.llm.push(Reply::text("polling again"));
    setup.api.text(&alice(), "still there?");
    setup.api.wait_for_text(alice().id, "polling again").await;
    assert!(
        !setup.log().contains("gave no answer"),
        "the log blamed the poll's restart: {}",
        setup.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_cannot_be_delivered_is_told_to_health_the_chat_and_the_agent() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.api.fail_next(
        "sendMessage",
        Some(chat),
        Fault::Error(
            400,
            "Bad Request: not enough rights to send text messages to the chat".into(),
        ),
    );
    setup.llm.push(Reply::text("the first answer"));
    setup.api.text(&alice(), "first");
    setup.log_says("a reply could not be delivered").await;
    let health = setup.health().await;
    assert!(
        health.contains("a reply could not be delivered (chats 111)")
            && health.contains("not enough rights"),
        "{health}"
    );
    // The next message: the chat hears of it first, the agent with it.
    setup.llm.push(Reply::text("the second answer"));
    setup.api.text(&alice(), "second");
    setup.api.wait_for_text(chat, "the second answer").await;
    let texts: Vec<String> = setup
        .api
        .messages(chat)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[0].contains("An earlier reply could not be delivered"),
        "{texts:?}"
    );
    let saw = setup.model_saw(1);
    assert!(
        saw.starts_with(
            "[note from the Telegram gateway: a reply to this chat could not be delivered"
        ) && saw.ends_with("second"),
        "{saw}"
    );
    let health = setup.health().await;
    assert!(!health.contains("could not be delivered"), "{health}");
    // Told once.
    setup.llm.push(Reply::text("the third answer"));
    setup.api.text(&alice(), "third");
    setup.api.wait_for_text(chat, "the third answer").await;
    assert_eq!(setup.model_saw(2), "third");
}
