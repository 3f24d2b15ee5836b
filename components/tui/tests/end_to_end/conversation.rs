//! The conversation on screen: its tail when it is opened, turns other
//! clients run in it, `/new`, `/sessions N`, and a daemon that goes away
//! and comes back — in a pseudo-terminal.

use crabtalk_proto::msg::*;
use crabtalk_testkit::Reply;
use crabtalk_testkit::turn::{Turn, message};
use serde_json::Value;

use crate::support::*;

fn user_messages(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn reopening_shows_the_tail_of_the_conversation() {
    let (llm, daemon) = daemon().await;
    let client = daemon.client().await;
    for n in 1..=4 {
        llm.push(Reply::text(&format!("Answer number {n}.")));
        Turn::run(&client, message("crab", USER, &format!("question {n}"))).await;
    }
    let tui = Tui::start(daemon.path(), &[], 40, 80).await;
    tui.wait_for("Answer number 4.").await;
    let screen = tui.contents();
    // The last three turns, each as it was drawn: the question after a ›,
    // the answer under the agent's name.
    for shown in [
        "… 2 earlier messages",
        "› question 2",
        "● crab",
        "Answer number 2.",
        "› question 4",
    ] {
        assert!(screen.contains(shown), "{shown:?} missing:\n{screen}");
    }
    assert!(!screen.contains("question 1"), "{screen}");
    drop(tui);

    // After a compaction, the summary is marked as such.
    llm.push(Reply::text("We went through four numbered questions."));
    client
        .compact(CompactMsg {
            agent: "crab".into(),
            sender: USER.into(),
            fresh: false,
        })
        .await
        .unwrap();
    llm.push(Reply::text("Five it is."));
    Turn::run(&client, message("crab", USER, "question 5")).await;
    let tui = Tui::start(daemon.path(), &[], 40, 80).await;
    tui.wait_for("── summary of the conversation so far ──")
        .await;
    tui.wait_for("We went through four numbered questions.")
        .await;
    tui.wait_for("› question 5").await;
    assert!(!tui.contents().contains("question 4"), "{}", tui.contents());
}

#[tokio::test]
async fn a_turn_from_another_client_appears_live_and_labelled() {
    let (llm, daemon) = daemon().await;
    let tui = Tui::start(daemon.path(), &[], 40, 80).await;
    llm.push(Reply::Stall("Half of the ans".into()));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", USER, "asked from a script"))
        .await
        .unwrap();
    // While it streams, the open chat shows it.
    tui.wait_for("↪ from another client, as tester").await;
    tui.wait_for("› asked from a script").await;
    tui.wait_for("Half of the ans").await;
    client
        .kill(KillMsg {
            agent: "crab".into(),
            sender: USER.into(),
        })
        .await
        .unwrap();
    Turn::default()
        .read_until(&mut stream, |event| {
            matches!(event, stream_event::Event::End(_))
        })
        .await;
    tui.wait_for("✗ cancelled by the user").await;

    // A second chat on the same conversation sees the first one's turn.
    let mut first = tui;
    let second = Tui::start(daemon.path(), &[], 40, 80).await;
    llm.push(Reply::text("Seen by both."));
    first.line("hello from the first chat");
    second.wait_for("› hello from the first chat").await;
    second.wait_for("Seen by both.").await;
    first.wait_for("Seen by both.").await;
    // The first chat draws its own turn once, not again as another's.
    first.wait_for_prompt().await;
    let mine = first.contents().matches("Seen by both.").count();
    assert_eq!(mine, 1, "{}", first.contents());
    // Another conversation (another sender) does not show up.
    llm.push(Reply::text("Not for this chat."));
    Turn::run(&client, message("crab", "someone-else", "elsewhere")).await;
    llm.push(Reply::text("Marker after."));
    Turn::run(&client, message("crab", USER, "marker")).await;
    first.wait_for("Marker after.").await;
    assert!(!first.contents().contains("Not for this chat."));
}

#[tokio::test]
async fn slash_new_starts_afresh_and_sessions_opens_a_listed_conversation() {
    let (llm, daemon) = daemon().await;
    llm.set_default(Reply::text("noted"));
    let client = daemon.client().await;
    Turn::run(&client, message("crab", "bob", "bob's secret is 42")).await;
    let mut tui = Tui::start(daemon.path(), &[], 40, 100).await;
    tui.line("my cat is Miso");
    tui.wait_for_prompt().await;
    llm.wait_for_requests(2).await;

    tui.line("/new");
    tui.wait_for("a fresh conversation with crab").await;
    tui.wait_for_prompt().await;
    tui.line("who is my cat?");
    llm.wait_for_requests(3).await;
    tui.wait_for_prompt().await;
    let sent = user_messages(&llm.requests()[2]);
    assert_eq!(sent, ["who is my cat?"], "the old messages are not sent");

    // The conversations are listed with their titles, and one opens.
    tui.line("/sessions");
    tui.wait_for("/sessions N opens conversation N").await;
    let screen = tui.contents();
    assert!(screen.contains("bob's secret is 42"), "titles: {screen}");
    assert!(screen.contains("who is my cat?"), "titles: {screen}");
    let bob_row = screen
        .lines()
        .find(|line| line.contains("│ bob"))
        .expect("bob's conversation is listed");
    let number: usize = bob_row
        .trim_start_matches(['│', ' '])
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    tui.line(&format!("/sessions {number}"));
    tui.wait_for("now in crab's conversation with bob").await;
    tui.wait_for("› bob's secret is 42").await;
    tui.line("and now?");
    llm.wait_for_requests(4).await;
    let sent = user_messages(&llm.requests()[3]);
    assert_eq!(sent, ["bob's secret is 42", "and now?"]);
}

#[tokio::test]
async fn a_message_sent_while_the_daemon_is_away_is_sent_once_it_is_back() {
    let (llm, mut daemon) = daemon().await;
    llm.set_default(Reply::text("Back and answering."));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;

    daemon.stop().await;
    tui.wait_for("the connection to the daemon was lost; reconnecting")
        .await;
    tui.line("are you there?");
    tui.wait_for("⧗ waiting for the daemon: are you there?")
        .await;

    daemon.spawn().await;
    tui.wait_for("reconnected to the daemon").await;
    tui.wait_for("Back and answering.").await;
    assert_eq!(
        user_messages(&llm.requests()[0]),
        ["are you there?"],
        "the message reached the model once"
    );
    let list = daemon
        .client()
        .await
        .list_conversations(ListConversationsMsg::default())
        .await
        .unwrap();
    assert_eq!(list.conversations[0].title, "are you there?");
}

#[tokio::test]
async fn the_first_message_after_a_daemon_restart_is_not_lost() {
    let (llm, mut daemon) = daemon().await;
    llm.set_default(Reply::text("Answered after the restart."));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    daemon.restart().await;
    // Sent at once: the chat may or may not have noticed the restart yet.
    tui.line("first after restart");
    tui.wait_for("Answered after the restart.").await;
    let file_path = crabtalk_testkit::poll_until("the message in the log", async || {
        let client = daemon.client().await;
        let list = client
            .list_conversations(ListConversationsMsg::default())
            .await
            .unwrap();
        list.conversations.first().map(|c| c.file_path.clone())
    })
    .await;
    let history = daemon
        .client()
        .await
        .get_conversation_history(GetConversationHistoryMsg { file_path })
        .await
        .unwrap();
    let users: Vec<&str> = history
        .messages
        .iter()
        .filter(|m| m.role == "user")
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(users, ["first after restart"]);
}
