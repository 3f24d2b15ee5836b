//! The input line while a turn runs, long typed input, redraws after a
//! clear, and the editing keys — in a pseudo-terminal.

use crabtalk_testkit::Reply;
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
async fn typing_during_a_reply_is_kept_and_enter_queues_the_message() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::Gated("The first answer.".into()));
    llm.push(Reply::text("The second answer."));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("first question");
    llm.wait_for_requests(1).await;

    // The turn runs; the input line is there (its prompt says a turn runs)
    // and takes keys.
    tui.wait_for("crab …").await;
    tui.send("next");
    tui.wait_for("crab … next").await;
    tui.send(ENTER);
    tui.wait_for("⧗ queued: next").await;
    // Typing goes on after queueing, with the editing keys.
    tui.send("draft in progress");
    tui.send("\x1bb");
    tui.send("[");
    tui.wait_for("crab … draft in [progress").await;
    // Ctrl-L clears the screen during the turn; the input survives.
    tui.send(CTRL_L);
    tui.wait_until("a cleared screen with the queue and the input", |screen| {
        let text = screen.contents();
        text.trim_start().starts_with("⧗ queued: next")
            && text.contains("crab … draft in [progress")
    })
    .await;
    assert_eq!(llm.requests().len(), 1, "the queued message waits");

    // The turn ends; the queued message is sent as the next turn.
    llm.release();
    tui.wait_for("The first answer.").await;
    tui.wait_for("The second answer.").await;
    tui.wait_for("crab › next").await;
    assert!(!tui.contents().contains("⧗ queued"), "{}", tui.contents());
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_messages(&requests[1]),
        ["first question", "next"],
        "the queued message went out after the first turn"
    );
    // What was being typed is still being typed.
    tui.wait_for("crab › draft in [progress").await;
}

#[tokio::test]
async fn ctrl_c_stops_the_turn_and_gives_the_queue_back_to_the_input() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::Stall("Working".into()));
    let mut tui = Tui::start(daemon.path(), &[], 30, 80).await;
    tui.line("a long job");
    tui.wait_for("Working").await;
    tui.line("then this");
    tui.wait_for("⧗ queued: then this").await;
    tui.send(CTRL_C);
    tui.wait_for("✗ cancelled by the user").await;
    tui.wait_for("what you queued is back in the input").await;
    tui.wait_for("crab › then this").await;
    assert_eq!(llm.requests().len(), 1, "nothing queued was sent");
}

#[tokio::test]
async fn a_typed_line_of_three_kilobytes_arrives_whole() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::text("Got it all."));
    // A short, wide terminal: the input shows through a window of a few
    // rows, as it would on a laptop screen.
    let mut tui = Tui::start(daemon.path(), &[], 12, 200).await;
    let long: String = (0..620).map(|i| format!("w{:03} ", i % 1000)).collect();
    let long = long.trim_end().to_owned();
    assert!(long.len() > 3000);
    // Typed, not pasted: one write of plain keys, no bracketed paste.
    tui.send(&long);
    tui.wait_for("w599").await;
    tui.send(ENTER);
    tui.wait_for("Got it all.").await;
    let sent = user_messages(&llm.requests()[0]);
    assert_eq!(sent, [long]);
}

#[tokio::test]
async fn after_a_clear_keystrokes_redraw_in_place_without_filling_the_scrollback() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::text("Something to clear away."));
    let mut tui = Tui::start(daemon.path(), &[], 20, 80).await;
    tui.line("say something");
    tui.wait_for("Something to clear away.").await;
    tui.wait_for_prompt().await;
    for clear in ["/clear\r", CTRL_L] {
        tui.send(clear);
        tui.wait_until("a cleared screen", |screen| {
            screen.contents().trim_end() == "crab ›"
        })
        .await;
        let before = tui.scrollback_pushes();
        let mut typed = String::new();
        for c in "hello there".chars() {
            typed.push(c);
            tui.send(&c.to_string());
            let expected = format!("crab › {typed}");
            tui.wait_until("the keystroke drawn in place", |screen| {
                screen.contents().trim_end() == expected.trim_end()
            })
            .await;
        }
        assert_eq!(
            tui.scrollback_pushes(),
            before,
            "each keystroke pushed a screen into the scrollback ({clear:?})"
        );
        // Clear the input for the next round.
        tui.send(CTRL_C);
        tui.wait_until("an empty input", |screen| {
            screen.contents().trim_end() == "crab ›"
        })
        .await;
    }
}

#[tokio::test]
async fn up_moves_within_a_wrapped_line_and_alt_f_moves_by_words() {
    let (llm, daemon) = daemon().await;
    llm.set_default(Reply::text("ok"));
    let mut tui = Tui::start(daemon.path(), &[], 20, 40).await;
    tui.line("an older entry");
    tui.wait_for("ok").await;
    tui.wait_for_prompt().await;

    // 32 columns for text after "crab › ": this wraps over two rows.
    tui.send("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda");
    tui.wait_for("lambda").await;
    tui.send(UP);
    tui.send("X");
    // Up moved a row up within the text, not to the history.
    tui.wait_until("an X inserted on the row above", |screen| {
        screen
            .contents()
            .lines()
            .any(|line| line.contains("alpha") && line.contains('X'))
    })
    .await;
    let screen = tui.contents();
    let x_row = screen.lines().position(|l| l.contains('X')).unwrap();
    let last_row = screen.lines().position(|l| l.contains("lambda")).unwrap();
    assert_eq!(x_row + 1, last_row, "{screen}");

    // Alt-f and Alt-b move by words; Alt-letters are not typed.
    tui.send(CTRL_C);
    tui.wait_for_prompt().await;
    tui.send("one two three");
    tui.send("\x1bb\x1bb");
    tui.send("\x1bf");
    tui.send("_");
    tui.wait_for("crab › one two_ three").await;
    assert!(!tui.contents().contains("one twob"), "{}", tui.contents());
}
