//! `ask_user` as inline keyboards.

use crabtalk_fake_bot_api::{FakeBotApi, Fault, Sent};
use crabtalk_testkit::{Reply, ToolCall};
use serde_json::{Value, json};

use crate::support::{Setup, alice};

/// The callback data of the button labelled `label` (contains) on `message`.
fn button(message: &Sent, label: &str) -> String {
    let keyboard = message.keyboard.as_ref().expect("a keyboard");
    keyboard["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .find(|b| b["text"].as_str().unwrap().contains(label))
        .and_then(|b| b["callback_data"].as_str())
        .unwrap_or_else(|| panic!("no button {label:?} in {keyboard}"))
        .to_owned()
}

fn questions() -> Value {
    json!({"questions": [
        {"question": "Which size?", "header": "Size", "options": [{"label": "Small"}, {"label": "Large", "description": "the big one"}]},
        {"question": "Which toppings?", "header": "Toppings", "multi_select": true, "options": [{"label": "Cheese"}, {"label": "Olives"}, {"label": "Basil"}]},
        {"question": "Anything else?", "header": "Notes", "options": [{"label": "No"}]}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_multi_and_other_answers_go_back_in_one_reply() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::tools(vec![ToolCall::new(
        "ask1",
        "ask_user",
        questions(),
    )]));
    setup.llm.push(Reply::text("Ordered."));
    setup.api.text(&alice(), "order a pizza");

    let size = setup.api.wait_for_text(chat, "Which size?").await;
    assert!(size.text.contains("Large — the big one"), "{}", size.text);
    setup
        .api
        .callback(&alice(), chat, size.id, &button(&size, "Large"));

    let toppings = setup.api.wait_for_text(chat, "Which toppings?").await;
    setup
        .api
        .callback(&alice(), chat, toppings.id, &button(&toppings, "Cheese"));
    setup
        .api
        .wait_until("the Cheese mark", |api| {
            api.messages(chat).iter().any(|m| {
                m.id == toppings.id
                    && m.keyboard
                        .as_ref()
                        .is_some_and(|k| k.to_string().contains("✅ Cheese"))
            })
        })
        .await;
    setup
        .api
        .callback(&alice(), chat, toppings.id, &button(&toppings, "Basil"));
    setup
        .api
        .wait_until("the Basil mark", |api| {
            api.messages(chat).iter().any(|m| {
                m.id == toppings.id
                    && m.keyboard
                        .as_ref()
                        .is_some_and(|k| k.to_string().contains("✅ Basil"))
            })
        })
        .await;
    setup
        .api
        .callback(&alice(), chat, toppings.id, &button(&toppings, "Done"));

    let notes = setup.api.wait_for_text(chat, "Anything else?").await;
    setup
        .api
        .callback(&alice(), chat, notes.id, &button(&notes, "Other"));
    setup.api.wait_for_text(chat, "Type your answer").await;
    setup.api.text(&alice(), "extra crispy");

    setup.api.wait_for_text(chat, "Ordered.").await;
    let requests = setup.llm.requests();
    let tool_result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        tool_result.contains("Size: Large\\nToppings: Cheese, Basil\\nNotes: extra crispy"),
        "{tool_result}"
    );
    // Every press answered; the answered questions have no keyboard left.
    assert_eq!(setup.api.calls_of("answerCallbackQuery").len(), 5);
    for id in [size.id, toppings.id, notes.id] {
        let message = setup
            .api
            .messages(chat)
            .into_iter()
            .find(|m| m.id == id)
            .unwrap();
        assert!(message.keyboard.is_none(), "{message:?}");
        assert!(message.text.contains('→'), "{}", message.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_of_a_closed_question_is_answered_and_cleared() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::text("plain answer"));
    setup.api.text(&alice(), "hi");
    let message = setup.api.wait_for_text(chat, "plain answer").await;
    setup.api.callback(&alice(), chat, message.id, "a:999:0:1");
    setup
        .api
        .wait_until("the stale press answered", |api| {
            !api.calls_of("answerCallbackQuery").is_empty()
        })
        .await;
    let answer = &setup.api.calls_of("answerCallbackQuery")[0];
    assert!(
        answer.params["text"]
            .as_str()
            .unwrap()
            .contains("no longer open"),
        "{:?}",
        answer.params
    );
    setup
        .api
        .wait_until("the keyboard cleared", |api| {
            !api.calls_of("editMessageReplyMarkup").is_empty()
        })
        .await;
    setup.log_says("no longer open was pressed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_clears_an_open_question() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::tools(vec![ToolCall::new(
        "ask2",
        "ask_user",
        json!({"questions": [{"question": "Sure?", "options": [{"label": "Yes"}]}]}),
    )]));
    setup.api.text(&alice(), "do it");
    let question = setup.api.wait_for_text(chat, "Sure?").await;
    setup.api.text(&alice(), "/stop");
    setup
        .api
        .wait_until("the keyboard cleared", |api| {
            api.messages(chat)
                .iter()
                .any(|m| m.id == question.id && m.keyboard.is_none())
        })
        .await;
    setup.api.wait_for_text(chat, "Stopped").await;
}

/// The daemon gives up on a question after this long (its
/// `[conversations] ask_timeout_secs`).
const SHORT_ASK_TIMEOUT: &str = "[conversations]\nask_timeout_secs = 3\n";

fn where_to() -> Value {
    json!({"questions": [{"question": "Where to?", "options": [{"label": "Lisbon"}, {"label": "Oslo"}]}]})
}

/// Whether message `id` in `chat` shows no keyboard any more.
fn keyboard_gone(api: &FakeBotApi, chat: i64, id: i64) -> bool {
    api.messages(chat)
        .iter()
        .any(|m| m.id == id && m.keyboard.is_none())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_times_out_loses_its_keyboard_and_a_late_press_is_told() {
    let mut setup = Setup::start_with_daemon(SHORT_ASK_TIMEOUT, "").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::tools(vec![ToolCall::new(
        "ask3",
        "ask_user",
        where_to(),
    )]));
    setup.llm.push(Reply::text("Going on without an answer."));
    setup.api.text(&alice(), "plan a trip");
    let question = setup.api.wait_for_text(chat, "Where to?").await;
    let lisbon = button(&question, "Lisbon");

    // Nobody answers: the daemon's ask times out, the keyboard goes, and
    // the message says why.
    setup
        .api
        .wait_until("the keyboard cleared after the timeout", |api| {
            keyboard_gone(api, chat, question.id)
        })
        .await;
    let closed = setup
        .api
        .messages(chat)
        .into_iter()
        .find(|m| m.id == question.id)
        .unwrap();
    assert!(closed.text.contains("no answer in time"), "{}", closed.text);
    setup
        .api
        .wait_for_text(chat, "Going on without an answer.")
        .await;
    let tool_result = setup.llm.requests()[1]["messages"].to_string();
    assert!(
        tool_result.contains("did not answer within 3 s"),
        "{tool_result}"
    );

    // A press that comes too late is answered in words, once, and the
    // gateway goes on.
    let pressed = tokio::time::Instant::now();
    setup.api.callback(&alice(), chat, question.id, &lisbon);
    setup
        .api
        .wait_until("the late press answered", |api| {
            !api.calls_of("answerCallbackQuery").is_empty()
        })
        .await;
    let answers = setup.api.calls_of("answerCallbackQuery");
    assert!(
        answers[0].params["text"]
            .as_str()
            .is_some_and(|t| t.contains("no longer open")),
        "{:?}",
        answers[0].params
    );
    setup.log_says("no longer open was pressed").await;
    setup.llm.push(Reply::text("Still here."));
    setup.api.text(&alice(), "hello?");
    setup.api.wait_for_text(chat, "Still here.").await;
    setup.two_polls_after(pressed).await;
    assert_eq!(setup.api.calls_of("answerCallbackQuery").len(), 1);
    let touched = setup
        .api
        .calls()
        .into_iter()
        .filter(|c| c.at > pressed && c.params["message_id"] == json!(question.id))
        .count();
    assert!(touched <= 1, "the old question was changed {touched} times");
    assert_eq!(setup.llm.requests().len(), 3, "the press reached the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_times_out_before_telegram_shows_it_loses_its_keyboard_too() {
    let mut setup = Setup::start_with_daemon("[conversations]\nask_timeout_secs = 1\n", "").await;
    setup.start_gateway().await;
    let chat = alice().id;
    // Flood control holds the chat longer than the agent waits.
    setup
        .api
        .fail_next("sendMessage", Some(chat), Fault::RetryAfter(5));
    setup.llm.push(Reply::tools(vec![ToolCall::new(
        "ask4",
        "ask_user",
        where_to(),
    )]));
    setup.llm.push(Reply::text("Going on without an answer."));
    setup.api.text(&alice(), "plan a trip");
    setup.llm.wait_for_requests(2).await;
    let question = setup.api.wait_for_text(chat, "Where to?").await;
    setup
        .api
        .wait_until("the late question's keyboard cleared", |api| {
            keyboard_gone(api, chat, question.id)
        })
        .await;
    setup
        .api
        .wait_for_text(chat, "Going on without an answer.")
        .await;
}
