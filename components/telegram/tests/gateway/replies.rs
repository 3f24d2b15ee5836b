//! Streamed replies: pace, limits, splitting, flood control, fallbacks.

use std::time::Duration;

use crabtalk_fake_bot_api::{Fault, pace};
use crabtalk_testkit::{Reply, ToolCall};
use serde_json::json;

use crate::support::{Setup, alice};

/// A long Markdown reply: about 5,000 tokens, with formatting, CJK and
/// emoji.
fn long_reply() -> String {
    let mut text = String::from("# Report\n\n");
    for i in 0..330 {
        text.push_str(&format!(
            "Paragraph {i}: **bold** words, _italics_, `code` and 漢字かな 😀 here.\n\n"
        ));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_long_stream_keeps_the_limits_and_arrives_whole() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let reply = long_reply();
    let expected: String = crabtalk_telegram::render::render(reply.trim_end())
        .into_iter()
        .map(|p| p.text)
        .collect();
    assert!(crabtalk_telegram::render::units(&expected) > 8192);
    setup.llm.push(Reply::text(&reply));
    setup.api.text(&alice(), "write the report");
    let chat = alice().id;
    setup
        .api
        .wait_until("the whole reply", |api| api.chat_text(chat) == expected)
        .await;
    let calls = setup.api.calls();
    let (most, gap) = pace(
        &calls,
        Duration::from_secs(1),
        &["sendMessage", "editMessageText", "deleteMessage"],
    );
    assert!(most <= 30, "{most} calls within one second");
    if let Some((_, gap)) = gap {
        assert!(
            gap >= Duration::from_secs(1),
            "two messages or edits {gap:?} apart in a private chat"
        );
    }
    for message in setup.api.messages(chat) {
        assert!(message.html.is_some(), "sent as HTML");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_pauses_the_chat_and_a_long_one_is_told() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup
        .api
        .fail_next("sendMessage", Some(chat), Fault::RetryAfter(10));
    setup.llm.push(Reply::text("after the pause"));
    setup.api.text(&alice(), "hi");
    setup.api.wait_for_text(chat, "after the pause").await;
    let sends = setup.api.calls_of("sendMessage");
    let refused = sends[0].at;
    let next = sends[1].at;
    assert!(
        next - refused >= Duration::from_secs(10),
        "retried {:?} after a 429 asking for 10 s",
        next - refused
    );
    let texts: Vec<String> = setup
        .api
        .messages(chat)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert!(
        texts[0].contains("Telegram paused this chat for 10 s"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "after the pause");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formatting_telegram_refuses_is_sent_again_as_plain_text() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup
        .api
        .fail_next("sendMessage", Some(chat), Fault::CantParseEntities);
    setup.llm.push(Reply::text("**bold** and <tags>"));
    setup.api.text(&alice(), "hi");
    let message = setup.api.wait_for_text(chat, "bold and <tags>").await;
    assert_eq!(message.html, None, "sent as plain text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_show_as_status_lines_thinking_is_not_sent_and_errors_are_words() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::Thinking {
        thinking: "SECRET PLAN".into(),
        text: "Looking.".into(),
    });
    setup.api.text(&alice(), "think");
    setup.api.wait_for_text(chat, "Looking.").await;
    assert!(!setup.api.chat_text(chat).contains("SECRET"));
    setup.llm.push(Reply::Tools {
        text: "Let me read it.".into(),
        calls: vec![ToolCall::new(
            "c1",
            "read",
            json!({"path": "/nonexistent/file"}),
        )],
    });
    setup.llm.push(Reply::text("It is not there."));
    setup.api.text(&alice(), "read it");
    let message = setup.api.wait_for_text(chat, "It is not there.").await;
    assert!(message.text.contains("🔧 read"), "{}", message.text);
    assert!(
        message.text.starts_with("Let me read it."),
        "{}",
        message.text
    );
    setup
        .llm
        .set_default(Reply::Status(500, "the provider broke".into()));
    setup.api.text(&alice(), "fail");
    let failed = setup.api.wait_for_text(chat, "could not finish").await;
    assert!(failed.text.starts_with("⚠️"), "{}", failed.text);
    assert!(
        !setup.api.calls_of("sendChatAction").is_empty(),
        "no typing was shown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_away_is_told_in_words() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.daemon.stop().await;
    setup.api.text(&alice(), "anyone?");
    setup.api.wait_for_text(alice().id, "not reachable").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn photos_documents_and_voice_notes_are_saved_and_referenced() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.api.add_file("photo-1", b"\xff\xd8 a jpeg");
    setup.llm.push(Reply::text("nice photo"));
    setup.api.photo(&alice(), "photo-1", 10, "look at this");
    setup.api.wait_for_text(chat, "nice photo").await;
    let saw = setup.model_saw(0);
    assert!(saw.starts_with("look at this\n[photo saved at "), "{saw}");
    let path = saw.split("saved at ").nth(1).unwrap().trim_end_matches(']');
    assert!(path.contains("files/telegram/111/"), "{path}");
    assert_eq!(std::fs::read(path).unwrap(), b"\xff\xd8 a jpeg");
    setup.api.add_file("doc-1", b"%PDF");
    setup.llm.push(Reply::text("read the doc"));
    setup
        .api
        .document(&alice(), "doc-1", "../../evil name.pdf", 4);
    setup.api.wait_for_text(chat, "read the doc").await;
    let saw = setup.model_saw(1);
    assert!(
        saw.contains("[document saved at ") && saw.ends_with("-evilname.pdf]"),
        "{saw}"
    );
    setup.llm.push(Reply::text("too big"));
    setup
        .api
        .document(&alice(), "doc-2", "huge.iso", 30 * 1024 * 1024);
    setup.api.wait_for_text(chat, "too big").await;
    assert!(
        setup.model_saw(2).contains("not downloaded"),
        "{}",
        setup.model_saw(2)
    );
    setup.api.add_file("voice-1", b"OggS");
    setup.llm.push(Reply::text("heard"));
    setup.api.voice(&alice(), "voice-1", 4);
    setup.api.wait_for_text(chat, "heard").await;
    assert!(
        setup.model_saw(3).contains("[voice note saved at "),
        "{}",
        setup.model_saw(3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_gets_at_most_one_message_or_edit_every_three_seconds() {
    let group = -100_700;
    let mut setup = Setup::start(&format!("groups = [{group}]\nrequire_mention = false")).await;
    setup.start_gateway().await;
    let reply = long_reply();
    let expected: String = crabtalk_telegram::render::render(reply.trim_end())
        .into_iter()
        .map(|p| p.text)
        .collect();
    setup.llm.push(Reply::text(&reply));
    setup
        .api
        .group_text(group, &crate::support::alice(), "write the report", false);
    setup
        .api
        .wait_until("the whole reply in the group", |api| {
            api.chat_text(group) == expected
        })
        .await;
    let calls: Vec<_> = setup
        .api
        .calls()
        .into_iter()
        .filter(|c| c.chat() == Some(group))
        .collect();
    let (_, gap) = pace(
        &calls,
        Duration::from_secs(1),
        &["sendMessage", "editMessageText", "deleteMessage"],
    );
    let (_, gap) = gap.expect("several messages");
    assert!(
        gap >= Duration::from_secs(3),
        "two messages or edits {gap:?} apart in a group"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_running_turn_waits_its_turn_and_holds_up_nobody() {
    let mut setup = Setup::start("allow = [111, 222]").await;
    setup.start_gateway().await;
    let bob = crabtalk_fake_bot_api::TgUser::new(222, "Bob");
    setup.llm.push(Reply::Gated("first done".into()));
    setup.llm.push(Reply::text("bob's answer"));
    setup.llm.push(Reply::text("second done"));
    setup.api.text(&alice(), "first");
    setup.llm.wait_for_requests(1).await;
    setup.api.text(&alice(), "second");
    setup.api.text(&bob, "me too");
    setup.api.wait_for_text(bob.id, "bob's answer").await;
    setup.llm.release();
    setup.api.wait_for_text(alice().id, "second done").await;
    let texts: Vec<String> = setup
        .api
        .messages(alice().id)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["first done", "second done"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_is_shown_every_four_seconds_while_a_turn_runs_and_stops_with_it() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    let typing_calls = |api: &crabtalk_fake_bot_api::FakeBotApi| {
        api.calls_of("sendChatAction")
            .into_iter()
            .filter(|c| c.chat() == Some(chat))
            .collect::<Vec<_>>()
    };
    // The model holds its answer until three beats of "typing" were sent.
    setup
        .llm
        .push(Reply::Gated("All done after a long think.".into()));
    setup.api.text(&alice(), "think long");
    setup
        .api
        .wait_until("three typing beats", |api| typing_calls(api).len() >= 3)
        .await;
    setup.llm.release();
    setup
        .api
        .wait_for_text(chat, "All done after a long think.")
        .await;
    // The turn had ended by the time its whole text went out.
    let ended = setup
        .api
        .calls()
        .into_iter()
        .find(|c| {
            c.chat() == Some(chat)
                && c.params["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("All done after a long think."))
        })
        .expect("the call that showed the whole reply")
        .at;
    setup.two_polls_after(ended).await;

    let typing = typing_calls(&setup.api);
    for call in &typing {
        assert_eq!(call.params["action"], "typing", "{:?}", call.params);
    }
    let during: Vec<_> = typing.iter().filter(|c| c.at < ended).collect();
    assert!(during.len() >= 3, "{} typing beats", during.len());
    for pair in during.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(
            gap >= Duration::from_secs(3) && gap <= Duration::from_secs(6),
            "typing beats {gap:?} apart"
        );
    }
    let after = typing.len() - during.len();
    assert_eq!(after, 0, "{after} typing beats after the turn ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_pause_in_a_forum_topic_is_told_in_that_topic() {
    let group = -100_800;
    let topic = 77;
    let mut setup = Setup::start(&format!("groups = [{group}]\nrequire_mention = false")).await;
    setup.start_gateway().await;
    setup
        .api
        .fail_next("sendMessage", Some(group), Fault::RetryAfter(10));
    setup.llm.push(Reply::text("after the pause"));
    setup.api.topic_text(group, topic, &alice(), "hi");
    setup.api.wait_for_text(group, "after the pause").await;
    let messages = setup.api.messages(group);
    let notice = messages
        .iter()
        .find(|m| m.text.contains("Telegram paused this chat for 10 s"))
        .expect("the pause was told");
    assert_eq!(notice.topic, Some(topic), "{messages:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_of_flags_takes_the_fewest_messages_and_cuts_no_flag() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    // 8,401 UTF-16 units: three messages, and no space to cut at.
    let flag = "🇩🇪";
    let text = format!("y{}", flag.repeat(2100));
    setup.llm.push(Reply::text(&text));
    setup.api.text(&alice(), "flags");
    setup
        .api
        .wait_until("the whole reply", |api| api.chat_text(chat) == text)
        .await;
    let messages = setup.api.messages(chat);
    assert_eq!(messages.len(), 3);
    for message in &messages {
        assert_eq!(
            message.text.trim_start_matches('y').replace(flag, ""),
            "",
            "a message starts or ends inside a flag"
        );
    }
}
