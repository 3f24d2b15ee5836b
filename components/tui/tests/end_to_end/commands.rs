//! Slash commands and skills in the chat, each against the real daemon.

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_testkit::Reply;
use crabtalk_testkit::turn::{Turn, message};

use crate::support::*;

#[tokio::test]
async fn slash_kill_stops_a_turn_another_client_runs_on_this_conversation() {
    let (llm, daemon) = daemon().await;
    let mut tui = Tui::start(daemon.path(), &[], 30, 100).await;

    // With nothing running, /kill says what it asked for and the chat goes on.
    tui.line("/kill");
    tui.wait_for("asked the daemon to stop any turn running on crab/tester")
        .await;
    tui.wait_for_prompt().await;

    // A script runs a slow turn on the same conversation (crab, tester).
    llm.push(Reply::Stall("Working on i".into()));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", USER, "a long job"))
        .await
        .expect("start the other turn");
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |event| matches!(event, Event::Chunk(_)))
        .await;

    tui.line("/kill");
    tui.wait_for_prompt().await;
    let mut rest = Turn::collect(stream).await;
    turn.events.append(&mut rest.events);
    assert_eq!(turn.end().error, "cancelled by the user", "{turn:?}");

    // The conversation is free again for the chat.
    llm.push(Reply::text("Ready for more."));
    tui.line("next");
    tui.wait_for("Ready for more.").await;
}
