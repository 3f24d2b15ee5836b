//! Slash commands and skills in the chat, each against the real daemon.

use crabtalk_proto::msg::CreateAgentMsg;
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary};
use serde_json::Value;

use crate::support::*;

/// The content of the last message of a recorded model request.
fn last_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|message| message["content"].as_str())
        .unwrap_or_else(|| panic!("no last message in {request}"))
        .to_owned()
}

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

#[tokio::test]
async fn slash_model_switches_the_model_the_next_turn_uses() {
    let llm = ScriptedLlm::start().await;
    let config = TestDaemon::config_for(&llm.base_url()).replace(
        r#"models = ["scripted"]"#,
        r#"models = ["scripted", "other"]"#,
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    llm.set_default(Reply::text("ok"));
    let mut tui = Tui::start(daemon.path(), &[], 30, 100).await;

    // A model no provider serves is refused, with the ones that exist.
    tui.line("/model nosuch");
    tui.wait_for(
        "model \"nosuch\" is not served by any configured provider; known models: other, scripted",
    )
    .await;
    tui.wait_for_prompt().await;

    tui.line("/model other");
    tui.wait_for("This conversation now uses other, the default model.")
        .await;
    tui.wait_for("not saved").await;
    tui.wait_for_prompt().await;
    tui.line("/model");
    tui.wait_for("This conversation (crab) uses other, from the daemon's default model")
        .await;
    tui.wait_for("other ← this conversation, default").await;

    tui.line("which model?");
    tui.wait_for("other · 21 in · 7 out").await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0]["model"], "other");
    assert_eq!(last_message(&requests[0]), "which model?");
}

#[tokio::test]
async fn slash_clear_empties_the_screen_and_keeps_the_prompt() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::text("Something to clear away."));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("say something");
    tui.wait_for("Something to clear away.").await;
    tui.wait_for_prompt().await;

    tui.line("/clear");
    tui.wait_until("a cleared screen with only the prompt", |screen| {
        screen.contents().trim_end() == "crab ›" && screen.cursor_position() == (0, 7)
    })
    .await;
    tui.wait_for_prompt().await;

    // Ctrl-L clears the same way, keeping what is being typed.
    tui.line("/help");
    tui.wait_for("Ctrl-L  clear the screen").await;
    tui.send("half typed");
    tui.send("\x0c");
    tui.wait_until("a cleared screen with the input kept", |screen| {
        screen.contents().trim_end() == "crab › half typed"
    })
    .await;
}

#[tokio::test]
async fn slash_quit_exits_with_status_zero() {
    let (_llm, daemon) = daemon().await;
    let mut tui = Tui::start(daemon.path(), &[], 20, 80).await;
    tui.line("/quit");
    assert_eq!(tui.wait_exit().await, 0);
}

#[tokio::test]
async fn skills_complete_and_run_from_the_daemon() {
    let (llm, daemon) = daemon().await;
    let skill = daemon.path().join("skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greet someone warmly\n---\nGreet the person by name, with a crab pun.\n",
    )
    .unwrap();
    llm.push(Reply::text("Shell-o, Ferris!"));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;

    // A unique completion comes with the space before the argument.
    tui.send("/gre\t");
    tui.wait_for("› /greet").await;
    tui.send("Ferris");
    tui.wait_for("› /greet Ferris").await;
    tui.send(ENTER);
    tui.wait_for("Shell-o, Ferris!").await;
    tui.wait_for_prompt().await;

    let sent = last_message(&llm.requests()[0]);
    assert!(sent.starts_with("<skill name=\"greet\">"), "{sent}");
    assert!(sent.contains("with a crab pun."), "{sent}");
    assert!(sent.ends_with("Ferris"), "{sent}");

    // A name that is neither a command nor a skill reaches nobody.
    tui.line("/greeting Ferris");
    tui.wait_for("unknown command /greeting").await;
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn slash_agent_alone_lists_the_agents_and_marks_the_current_one() {
    let (_llm, daemon) = daemon().await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "ranger".into(),
            config: "{}".into(),
            prompt: "You are Ranger.".into(),
        })
        .await
        .unwrap();
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("/agent");
    tui.wait_for("Agents:").await;
    tui.wait_for("• crab ← current").await;
    tui.wait_for("• ranger").await;
    assert!(
        !tui.contents().contains("ranger ← current"),
        "{}",
        tui.contents()
    );
}

#[tokio::test]
async fn an_unknown_agent_at_startup_lists_the_agents_and_exits_1() {
    let (_llm, daemon) = daemon().await;
    let mut tui = Tui::spawn(
        daemon.path(),
        daemon.path(),
        &["--agent", "nosuch"],
        20,
        100,
    );
    assert_eq!(tui.wait_exit().await, 1);
    tui.wait_for("there is no agent \"nosuch\"; the agents are: crab")
        .await;
}
