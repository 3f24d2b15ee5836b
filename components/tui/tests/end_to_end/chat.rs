//! The chat in a pseudo-terminal.

use crabtalk_proto::msg::*;
use crabtalk_testkit::{Reply, ToolCall};
use serde_json::{Value, json};

use crate::support::*;

/// The tool message of a recorded request, by call id.
fn tool_message(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool message for {call_id}: {request}"))
        .to_owned()
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

/// The conversations stored for `agent` and the test user.
async fn history(client: &crabtalk_proto::Client, agent: &str) -> Vec<ConversationMessage> {
    let list = client
        .list_conversations(ListConversationsMsg {
            agent: agent.into(),
            sender: USER.into(),
        })
        .await
        .unwrap();
    let conversation = list.conversations.first().expect("a stored conversation");
    client
        .get_conversation_history(GetConversationHistoryMsg {
            file_path: conversation.file_path.clone(),
        })
        .await
        .unwrap()
        .messages
}

#[tokio::test]
async fn a_message_streams_back_rendered_as_markdown() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::text(
        "# Crab facts\n\nCrabs walk **sideways**.\n\n- ten legs\n- a hard shell\n\n```rust\nlet crab = \"🦀\";\n```\n\n| kind | size |\n|---|---|\n| king | big |",
    ));
    let mut tui = Tui::start(daemon.path(), &[], 40, 80).await;
    tui.wait_for("crab with tester").await;
    tui.line("tell me about crabs");

    tui.wait_for("scripted · 21 in · 7 out").await;
    let screen = tui.contents();
    for shown in [
        "› tell me about crabs",
        "Crab facts",
        "Crabs walk sideways.",
        "• ten legs",
        "• a hard shell",
        "┌─ rust",
        "│ let crab = \"🦀\";",
        "│ king │ big  │",
    ] {
        assert!(
            screen.contains(shown),
            "{shown:?} is not on the screen:\n{screen}"
        );
    }
    assert!(
        !screen.contains("# Crab") && !screen.contains("**"),
        "markup is rendered, not shown:\n{screen}"
    );
    // "sideways" is bold on the screen.
    tui.with_screen(|screen| {
        let (row, col) = find(screen, "sideways").expect("sideways on the screen");
        assert!(screen.cell(row, col).unwrap().bold());
        assert!(!screen.cell(row, 0).unwrap().bold());
    });
    tui.wait_for_prompt().await;

    // The message went to the default agent as the user, and is stored.
    let request = &llm.requests()[0];
    let last = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "tell me about crabs");
    let client = daemon.client().await;
    let messages = history(&client, "crab").await;
    assert_eq!(messages[0].content, "tell me about crabs");

    // Ctrl-D quits cleanly.
    tui.send(CTRL_D);
    assert_eq!(tui.wait_exit().await, 0);
}

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
async fn thinking_is_shown_dimmed_and_the_answer_is_not() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::Thinking {
        thinking: "The user wants a number; seven is lucky.".into(),
        text: "Seven.".into(),
    });
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("pick a number");
    tui.wait_for("Seven.").await;
    tui.wait_for_prompt().await;

    tui.with_screen(|screen| {
        let (row, col) = find(screen, "seven is lucky").expect("the thinking on the screen");
        let cells = (col..col + "seven is lucky".len() as u16)
            .map(|col| screen.cell(row, col).expect("a cell"));
        for cell in cells {
            assert!(
                cell.dim() && cell.italic(),
                "{:?} of the thinking is not dim italic:\n{}",
                cell.contents(),
                screen.contents()
            );
        }
        // The gutter marks the thinking, dim as well.
        assert_eq!(screen.cell(row, 0).unwrap().contents(), "┊");
        assert!(screen.cell(row, 0).unwrap().dim());

        let (row, col) = find(screen, "Seven.").expect("the answer on the screen");
        for col in col..col + "Seven.".len() as u16 {
            let cell = screen.cell(row, col).unwrap();
            assert!(
                !cell.dim() && !cell.italic(),
                "{:?} of the answer is dimmed:\n{}",
                cell.contents(),
                screen.contents()
            );
        }
    });
    // The thinking came before the answer.
    let screen = tui.contents();
    assert!(
        screen.find("seven is lucky") < screen.find("Seven."),
        "{screen}"
    );
}

#[tokio::test]
async fn tool_calls_and_their_results_are_shown_and_expandable() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::Tools {
        text: "Let me look that up.".into(),
        calls: vec![ToolCall::new(
            "c1",
            "lookup",
            json!({"query": "crab facts", "limit": 3}),
        )],
    });
    llm.push(Reply::text("That tool does not exist."));
    let mut tui = Tui::start(daemon.path(), &[], 40, 100).await;
    tui.line("look up crabs");

    tui.wait_for("That tool does not exist.").await;
    let screen = tui.contents();
    assert!(screen.contains("Let me look that up."), "{screen}");
    assert!(
        screen.contains("⚙ lookup  limit: 3, query: \"crab facts\""),
        "{screen}"
    );
    assert!(
        screen.contains("✗ there is no tool named \"lookup\""),
        "{screen}"
    );
    // The error is red.
    tui.with_screen(|screen| {
        let (row, col) = find(screen, "there is no tool").unwrap();
        let colour = screen.cell(row, col).unwrap().fgcolor();
        assert!(
            matches!(colour, vt100::Color::Idx(1 | 9)),
            "{colour:?} is not red"
        );
    });
    tui.wait_for_prompt().await;

    tui.line("/expand 1");
    tui.wait_for("\"limit\": 3").await;
    // The expanded result shows the full error text, past the first line.
    tui.wait_for("available tools: bash").await;
}

#[tokio::test]
async fn ctrl_c_kills_the_running_turn_and_the_prompt_returns() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::Stall("Once upon a ti".into()));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("tell me a long story");
    tui.wait_for("Once upon a ti").await;

    tui.send(CTRL_C);
    tui.wait_for("✗ cancelled by the user").await;
    tui.wait_for_prompt().await;

    // The daemon ended the turn: it is stored, and the conversation goes on.
    let client = daemon.client().await;
    let messages = history(&client, "crab").await;
    assert_eq!(messages[0].content, "tell me a long story");
    llm.push(Reply::text("A fresh start."));
    tui.line("again");
    tui.wait_for("A fresh start.").await;
    tui.wait_for_prompt().await;
    let requests = llm.requests();
    let last = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(last.last().unwrap()["content"], "again");

    // Ctrl-C twice on an empty prompt quits.
    tui.send(CTRL_C);
    tui.wait_for("Press Ctrl-C again or Ctrl-D to quit.").await;
    tui.send(CTRL_C);
    assert_eq!(tui.wait_exit().await, 0);
}

fn question(text: &str, options: &[&str], multi_select: bool) -> Value {
    json!({
        "question": text,
        "options": options.iter().map(|label| json!({"label": label})).collect::<Vec<_>>(),
        "multi_select": multi_select,
    })
}

#[tokio::test]
async fn ask_user_is_answered_from_the_keyboard() {
    let (llm, daemon) = daemon().await;
    let questions = json!({"questions": [
        question("Which colour?", &["red", "blue", "green"], false),
        question("Which toppings?", &["cheese", "ham", "pineapple"], true),
        question("Your name?", &["Ferris"], false),
    ]});
    llm.push(Reply::tools(vec![ToolCall::new(
        "ask1", "ask_user", questions,
    )]));
    llm.push(Reply::text("Thanks, noted."));
    let mut tui = Tui::start(daemon.path(), &[], 40, 80).await;
    tui.line("order for me");

    tui.wait_for("❯ 1. red").await;
    tui.send(DOWN);
    tui.wait_for("❯ 2. blue").await;
    tui.send(ENTER);
    // Multi-select: tick cheese and pineapple.
    tui.wait_for("Which toppings?").await;
    tui.send(" ");
    tui.wait_for("[x] cheese").await;
    tui.send(DOWN);
    tui.send(DOWN);
    tui.wait_for("❯ 3. [ ] pineapple").await;
    tui.send(" ");
    tui.wait_for("[x] pineapple").await;
    tui.send(ENTER);
    // "Other…" takes free text.
    tui.wait_for("Your name?").await;
    tui.send("2");
    tui.wait_for("❯ 2. Other…").await;
    tui.send(ENTER);
    tui.wait_for("✎").await;
    tui.send("Crabby 蟹");
    tui.wait_for("Crabby 蟹").await;
    tui.send(ENTER);

    tui.wait_for("Thanks, noted.").await;
    assert!(tui.contents().contains("? Which colour? → blue"));
    let answer = tool_message(&llm.requests()[1], "ask1");
    assert_eq!(
        answer,
        "Which colour?: blue\nWhich toppings?: cheese, pineapple\nYour name?: Crabby 蟹"
    );
}

#[tokio::test]
async fn a_dismissed_question_is_answered_cancelled() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::tools(vec![ToolCall::new(
        "ask2",
        "ask_user",
        json!({"questions": [question("Proceed?", &["yes", "no"], false)]}),
    )]));
    llm.push(Reply::text("Understood, not proceeding."));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("deploy it");
    tui.wait_for("❯ 1. yes").await;
    tui.send(ESC);
    tui.wait_for("Understood, not proceeding.").await;
    let answer = tool_message(&llm.requests()[1], "ask2");
    assert!(answer.starts_with("cancelled"), "{answer}");
}

#[tokio::test]
async fn ctrl_c_on_an_open_question_ends_the_turn_and_the_question() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::tools(vec![ToolCall::new(
        "ask3",
        "ask_user",
        json!({"questions": [question("Delete everything?", &["yes", "no"], false)]}),
    )]));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("clean up");
    tui.wait_for("❯ 1. yes").await;

    tui.send(CTRL_C);
    tui.wait_for("✗ cancelled by the user").await;
    tui.wait_for_prompt().await;
    assert!(
        !tui.contents().contains("❯ 1. yes"),
        "the question is still shown:\n{}",
        tui.contents()
    );

    // The daemon closed the question: the next turn runs at once, and the
    // model sees the call answered as cancelled, not left waiting.
    llm.push(Reply::text("Nothing deleted."));
    tui.line("never mind");
    tui.wait_for("Nothing deleted.").await;
    tui.wait_for_prompt().await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let answer = tool_message(&requests[1], "ask3");
    assert!(answer.contains("cancelled by the user"), "{answer}");
}

#[tokio::test]
async fn slash_agent_switches_agents_and_lists_them_when_unknown() {
    let (llm, daemon) = daemon().await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "ranger".into(),
            config: r#"{"description":"walks the woods"}"#.into(),
            prompt: "You are Ranger, keeper of the woods.".into(),
        })
        .await
        .unwrap();
    let mut tui = Tui::start(daemon.path(), &[], 40, 100).await;

    tui.line("/agent nosuch");
    tui.wait_for("there is no agent \"nosuch\"; the agents are: crab, ranger")
        .await;
    tui.wait_for_prompt().await;

    tui.send("/agent ra\t");
    tui.wait_for("› /agent ranger").await;
    tui.send(ENTER);
    tui.wait_for("now talking to ranger").await;
    llm.push(Reply::text("Ranger here."));
    tui.line("who are you?");
    tui.wait_for("Ranger here.").await;
    let request = &llm.requests()[0];
    assert!(
        system_prompt(request).contains("You are Ranger"),
        "{}",
        system_prompt(request)
    );
    let messages = history(&client, "ranger").await;
    assert_eq!(messages[0].content, "who are you?");

    // /guest brings crab into ranger's conversation for one message.
    llm.push(Reply::text("Crab, visiting."));
    tui.line("/guest crab what do you think?");
    tui.wait_for("Crab, visiting.").await;
    let request = llm.requests().last().unwrap().clone();
    assert!(
        system_prompt(&request).contains("You are crab, joining this conversation as a guest"),
        "{}",
        system_prompt(&request)
    );
}

#[tokio::test]
async fn cjk_and_emoji_render_and_wrap_without_breaking() {
    let (llm, daemon) = daemon().await;
    let reply = "蟹は海や川に住んでいて、横に歩きます。🦀🦀🦀 Crabs walk sideways — 👩‍🔬 says so.";
    llm.push(Reply::text(reply));
    let mut tui = Tui::start(daemon.path(), &[], 30, 24).await;
    tui.line("蟹について教えて 🦀");
    tui.wait_for("says so.").await;
    tui.wait_for_prompt().await;
    let screen = tui.contents();
    // The input wraps between words: the crab goes to the next row.
    assert!(
        screen.contains("crab › 蟹について教えて\n       🦀\n"),
        "{screen}"
    );
    // Every row fits the 24 columns, and the text reads back whole.
    let rows: Vec<String> = tui.with_screen(|screen| screen.rows(0, 24).collect());
    let joined: String = rows
        .iter()
        .map(|row| row.trim_end())
        .collect::<Vec<_>>()
        .join("");
    for piece in ["蟹は海や川に住んでいて", "🦀🦀🦀", "Crabs", "sideways"] {
        assert!(joined.contains(piece), "{piece:?} missing from:\n{screen}");
    }
    tui.with_screen(|screen| {
        for row in 0..30 {
            assert!(
                !screen.row_wrapped(row),
                "row {row} overflowed:\n{}",
                screen.contents()
            );
        }
    });
    let sent = llm.requests()[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert_eq!(sent, "蟹について教えて 🦀");
}

#[tokio::test]
async fn multi_line_input_and_history_survive_a_restart() {
    let (llm, daemon) = daemon().await;
    llm.set_default(Reply::text("ok"));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.send("first line");
    tui.send(ALT_ENTER);
    tui.send("second line");
    tui.wait_for("  second line").await;
    tui.send(ENTER);
    tui.wait_for("ok").await;
    tui.wait_for_prompt().await;
    let sent = llm.requests()[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert_eq!(sent, "first line\nsecond line");
    tui.send(CTRL_D);
    assert_eq!(tui.wait_exit().await, 0);

    let mut again = Tui::start(daemon.path(), &[], 30, 80).await;
    again.send(UP);
    again.wait_for("› first line").await;
    again.wait_for("  second line").await;
}

#[tokio::test]
async fn search_and_compact_work_and_other_commands_answer() {
    let (llm, daemon) = daemon().await;
    let mut tui = Tui::start(daemon.path(), &[], 30, 100).await;
    llm.push(Reply::text("Crab cakes need fresh crab and little else."));
    tui.line("what do you know about crab recipes?");
    tui.wait_for("little else.").await;
    tui.wait_for_prompt().await;

    tui.line("/search crab cakes");
    tui.wait_for("1. with tester").await;
    tui.wait_for("▶ assistant: Crab cakes need fresh crab")
        .await;
    tui.wait_for_prompt().await;
    tui.line("/search zeppelin");
    tui.wait_for("Nothing in crab's past conversations matches \"zeppelin\".")
        .await;

    llm.push(Reply::text("We talked about crab recipes."));
    tui.line("/compact");
    tui.wait_for("The conversation was compacted. Summary:")
        .await;
    tui.wait_for("We talked about crab recipes.").await;

    tui.line("/model");
    tui.wait_for("scripted ← this conversation, default").await;
    tui.line("/help");
    tui.wait_for("/guest <name> <message>").await;
    tui.line("/nonsense");
    tui.wait_for("unknown command /nonsense").await;
}

#[tokio::test]
async fn slash_sessions_and_events_show_the_daemon_s_conversations() {
    let (llm, daemon) = daemon().await;
    llm.set_default(Reply::text("seen by the watcher"));
    let mut tui = Tui::start(daemon.path(), &[], 40, 100).await;
    tui.line("remember this");
    tui.wait_for("seen by the watcher").await;
    tui.wait_for_prompt().await;
    tui.line("/sessions");
    tui.wait_for("│ crab ← │ tester │").await;

    tui.line("/events");
    tui.wait_for("watching events").await;
    // Another client's turns show up in the tail (the subscription starts
    // a moment after the footer: keep turns coming until one is seen).
    let client = daemon.client().await;
    let watched = async {
        loop {
            let turn = crabtalk_testkit::turn::message("crab", "someone", "hi");
            crabtalk_testkit::turn::Turn::run(&client, turn).await;
            if tui
                .contents()
                .contains("crab/someone  text      seen by the watcher")
            {
                return;
            }
        }
    };
    crabtalk_testkit::within("another conversation's events", watched).await;
    tui.send(ESC);
    tui.wait_for("stopped watching events").await;
    tui.wait_for_prompt().await;
}

#[tokio::test]
async fn without_a_daemon_the_chat_says_how_to_start_one() {
    let empty = tempfile::tempdir().unwrap();
    let mut tui = Tui::spawn(empty.path(), empty.path(), &[], 20, 80);
    assert_eq!(tui.wait_exit().await, 3);
    tui.wait_for("crabup daemon start").await;
}
