//! Who is talking and what is running: the agent in the prompt and on
//! replies, spinners on running tools, `/events` as it streams, completion
//! that learns new agents and skills, `/model` — in a pseudo-terminal.

use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::message;
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary};
use serde_json::json;

use crate::support::*;

/// The row and column where `text` starts on the screen.
fn find(screen: &vt100::Screen, text: &str) -> Option<(u16, u16)> {
    let cols = screen.size().1.get();
    screen.rows(0, cols).enumerate().find_map(|(row, line)| {
        let byte = line.find(text)?;
        let col = unicode_width::UnicodeWidthStr::width(&line[..byte]);
        Some((row as u16, col as u16))
    })
}

#[tokio::test]
async fn the_prompt_and_every_reply_name_the_agent_and_guests_are_marked() {
    let (llm, daemon) = daemon().await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "ranger".into(),
            config: "{}".into(),
            prompt: "You are Ranger.".into(),
        })
        .await
        .unwrap();
    let mut tui = Tui::start(daemon.path(), &["--agent", "ranger"], 30, 80).await;
    tui.wait_for("ranger ›").await;
    llm.push(Reply::text("Ranger reporting."));
    tui.line("hello");
    tui.wait_for("Ranger reporting.").await;
    tui.with_screen(|screen| {
        let (label, _) = find(screen, "● ranger").expect("the reply is labelled");
        let (reply, _) = find(screen, "Ranger reporting.").unwrap();
        assert_eq!(label + 1, reply, "{}", screen.contents());
        let (row, col) = find(screen, "ranger").unwrap();
        assert!(screen.cell(row, col).unwrap().bold());
    });
    llm.push(Reply::text("Crab's opinion."));
    tui.line("/guest crab what do you say?");
    tui.wait_for("● crab · guest in ranger's conversation")
        .await;
    tui.wait_for("Crab's opinion.").await;
}

#[tokio::test]
async fn a_running_tool_spins_with_its_elapsed_time() {
    let (llm, daemon) = daemon().await;
    let fifo = daemon.path().join("hold");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    llm.push(Reply::tools(vec![ToolCall::new(
        "c1",
        "bash",
        json!({"command": format!("cat {}", fifo.display())}),
    )]));
    llm.push(Reply::text("The tool is done."));
    let mut tui = Tui::start(daemon.path(), &[], 30, 100).await;
    tui.line("run the slow thing");

    // A spinner beside the call, with the seconds it has run; it moves.
    let spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
    let frame_of = |screen: &vt100::Screen| {
        screen.contents().lines().find_map(|line| {
            let first = line.chars().next()?;
            (spinner.contains(first)
                && line.contains("bash  command: \"cat ")
                && line.ends_with('s'))
            .then_some(first)
        })
    };
    tui.wait_until("a spinning bash call", |screen| frame_of(screen).is_some())
        .await;
    let first = tui.with_screen(frame_of).unwrap();
    tui.wait_until("the spinner to move", |screen| {
        frame_of(screen).is_some_and(|frame| frame != first)
    })
    .await;
    // It ends with the whole seconds it has run so far.
    let line = tui
        .contents()
        .lines()
        .find(|line| line.contains("bash  command: \"cat "))
        .unwrap()
        .to_owned();
    let seconds = line.rsplit(" · ").next().unwrap();
    assert!(
        seconds
            .strip_suffix('s')
            .is_some_and(|n| n.parse::<u64>().is_ok()),
        "{line}"
    );

    // The tool ends: the call is printed with its result, no spinner left.
    std::fs::write(&fifo, "released\n").unwrap();
    tui.wait_for("The tool is done.").await;
    let screen = tui.contents();
    assert!(screen.contains("⚙ bash  command: \"cat "), "{screen}");
    assert!(screen.contains("⎿ released"), "{screen}");
    assert!(tui.with_screen(frame_of).is_none(), "{screen}");
}

#[tokio::test]
async fn slash_events_streams_text_before_the_turn_is_complete() {
    let (llm, daemon) = daemon().await;
    let mut tui = Tui::start(daemon.path(), &[], 30, 100).await;
    tui.line("/events");
    tui.wait_for("watching events").await;
    llm.set_default(Reply::Stall("The story so f".into()));
    let client = daemon.client().await;
    // The subscription starts a moment after the footer: keep turns coming
    // (each stalls until killed) until one is seen streaming.
    crabtalk_testkit::poll_until("streamed text in /events", async || {
        let stream = client
            .stream(message("crab", "someone", "tell me a story"))
            .await
            .unwrap();
        let streaming = async || {
            tui.contents()
                .contains("crab/someone  text      The story so f")
                .then_some(())
        };
        let shown =
            crabtalk_testkit::poll_within(std::time::Duration::from_secs(2), streaming).await;
        client
            .kill(KillMsg {
                agent: "crab".into(),
                sender: "someone".into(),
            })
            .await
            .unwrap();
        crabtalk_testkit::turn::Turn::collect(stream).await;
        shown
    })
    .await;
    tui.send(ESC);
    tui.wait_for("stopped watching events").await;
}

#[tokio::test]
async fn tab_completes_agents_and_skills_added_after_the_start() {
    let (_llm, daemon) = daemon().await;
    let mut tui = Tui::start(daemon.path(), &[], 30, 100).await;
    tui.line("/help");
    tui.wait_for("Skills: none").await;

    // An agent file and a skill appear, and the daemon reloads.
    std::fs::write(
        daemon.path().join("agents/owl.toml"),
        "description = \"wise\"\n",
    )
    .unwrap();
    let skill = daemon.path().join("skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greet someone\n---\nGreet warmly.\n",
    )
    .unwrap();
    daemon.client().await.reload(ReloadMsg {}).await.unwrap();

    tui.send("/agent o");
    tui.send(TAB);
    tui.wait_for("crab › /agent owl").await;
    tui.send(CTRL_C);
    tui.wait_for_prompt().await;
    tui.send("/gre");
    tui.send(TAB);
    tui.wait_for("crab › /greet").await;
    tui.send(CTRL_C);
    tui.wait_for_prompt().await;
    tui.line("/help");
    tui.wait_for("Skills: /greet").await;
}

#[tokio::test]
async fn slash_model_says_which_model_the_conversation_uses_and_why() {
    let llm = ScriptedLlm::start().await;
    let config = TestDaemon::config_for(&llm.base_url()).replace(
        r#"models = ["scripted"]"#,
        r#"models = ["scripted", "mock-2"]"#,
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    daemon
        .client()
        .await
        .create_agent(CreateAgentMsg {
            name: "fixed".into(),
            config: r#"{"model":"mock-2"}"#.into(),
            prompt: "You use mock-2.".into(),
        })
        .await
        .unwrap();
    let mut tui = Tui::start(daemon.path(), &["--agent", "fixed"], 30, 110).await;
    tui.line("/model");
    tui.wait_for("This conversation (fixed) uses mock-2, from agents/fixed.toml.")
        .await;
    tui.wait_for("mock-2 ← this conversation").await;
    tui.wait_for("scripted ← default").await;

    tui.line("/model scripted");
    tui.wait_for(
        "The default model is now scripted, but fixed keeps using mock-2 (from agents/fixed.toml)",
    )
    .await;
    tui.wait_for("not saved").await;

    // An unknown model is refused in a sentence, without a status code.
    tui.line("/model nosuch");
    tui.wait_for(
        "model \"nosuch\" is not served by any configured provider; known models: mock-2, scripted",
    )
    .await;
    assert!(!tui.contents().contains("(404)"), "{}", tui.contents());
}
