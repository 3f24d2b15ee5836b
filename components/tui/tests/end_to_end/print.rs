//! The script modes: `-p` and `events`.

use std::path::Path;
use std::process::{Output, Stdio};

use crabtalk_home::PortFile;
use crabtalk_testkit::{Reply, ToolCall, within};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::support::*;

fn command(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(tui_binary());
    command
        .args(args)
        .current_dir(home)
        .env("CRABTALK_HOME", home)
        .env("USER", USER)
        .env_remove("CRABTALK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn run(home: &Path, args: &[&str]) -> Output {
    within("crabtalk-tui to finish", command(home, args).output())
        .await
        .expect("run crabtalk-tui")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn last_user_message(request: &Value) -> Value {
    request["messages"].as_array().unwrap().last().unwrap()["content"].clone()
}

#[tokio::test]
async fn print_mode_prints_the_reply_from_the_working_directory() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::text("Crabs have **ten** legs. 🦀"));
    // A project directory with instructions: the daemon reads them from the
    // cwd the TUI sends.
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("Crab.md"), "PROJECT-MARKER-42").unwrap();
    let output = within(
        "crabtalk-tui -p",
        command(
            daemon.path(),
            &["-p", "how many legs?", "--sender", "script"],
        )
        .current_dir(project.path())
        .output(),
    )
    .await
    .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Crabs have **ten** legs. 🦀\n");
    let request = &llm.requests()[0];
    assert_eq!(last_user_message(request), "how many legs?");
    assert!(
        request.to_string().contains("PROJECT-MARKER-42"),
        "the cwd was not sent: {request}"
    );
    let list = daemon
        .client()
        .await
        .list_conversations(Default::default())
        .await
        .unwrap();
    assert_eq!(list.conversations[0].sender, "script");
}

#[tokio::test]
async fn print_mode_json_prints_one_event_per_line() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::Thinking {
        thinking: "hmm".into(),
        text: "Sideways!".into(),
    });
    let output = run(daemon.path(), &["-p", "how do crabs walk?", "--json"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let events: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{line:?}: {err}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"start"));
    assert_eq!(types.last(), Some(&"end"));
    assert!(
        types.contains(&"thinking") && types.contains(&"context_usage"),
        "{types:?}"
    );
    let reply: String = events
        .iter()
        .filter(|e| e["type"] == "chunk")
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(reply, "Sideways!");
    let end = events.last().unwrap();
    assert_eq!(end["agent"], "crab");
    assert_eq!(end["error"], "");
    assert_eq!(end["usage"]["prompt_tokens"], 21);
}

#[tokio::test]
async fn print_mode_reads_the_prompt_from_stdin() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::text("Read it."));
    let mut child = command(daemon.path(), &["-p", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all("a prompt\nover two lines: 蟹".as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let output = within("crabtalk-tui -p -", child.wait_with_output())
        .await
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Read it.\n");
    assert_eq!(
        last_user_message(&llm.requests()[0]),
        "a prompt\nover two lines: 蟹"
    );

    // An empty prompt is bad usage.
    let output = run(daemon.path(), &["-p", "-"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("the prompt is empty"));
}

#[tokio::test]
async fn print_mode_exit_codes_say_what_went_wrong() {
    let (llm, daemon) = daemon().await;
    // The model fails: the turn ends with an error, exit 1.
    llm.push(Reply::Status(400, "the scripted model refuses".into()));
    let output = run(daemon.path(), &["-p", "fail please"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("the turn failed"),
        "{}",
        text(&output.stderr)
    );

    // An unknown agent: exit 1 and the agents that exist.
    let output = run(daemon.path(), &["-p", "hi", "--agent", "nosuch"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("there is no agent \"nosuch\"; the agents are: crab"),
        "{stderr}"
    );

    // No daemon: exit 3 and how to start one.
    let empty = tempfile::tempdir().unwrap();
    let output = run(empty.path(), &["-p", "hi"]).await;
    assert_eq!(output.status.code(), Some(3));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("crabup daemon start"), "{stderr}");

    // Nothing at a TCP address: exit 3 too.
    let output = run(empty.path(), &["-p", "hi", "--tcp", "127.0.0.1:1"]).await;
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("crabup daemon start"));
}

#[tokio::test]
async fn print_mode_over_tcp_and_ask_user_gets_an_explicit_cancel() {
    let (llm, daemon) = daemon().await;
    llm.push(Reply::tools(vec![ToolCall::new(
        "q1",
        "ask_user",
        json!({"questions": [{"question": "Sure?", "options": [{"label": "yes"}]}]}),
    )]));
    llm.push(Reply::text("Going ahead without you."));
    // The daemon answers on its socket a moment before it writes the port.
    let port_file = daemon.home().daemon_port_file();
    crabtalk_testkit::eventually("the daemon's port file", || {
        PortFile::read(&port_file).is_ok()
    })
    .await;
    let port = PortFile::read(&port_file).unwrap().port;
    // From another home, as a remote client would: the token is given.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = run(
        elsewhere.path(),
        &[
            "-p",
            "do it",
            "--tcp",
            &format!("127.0.0.1:{port}"),
            "--token",
            &daemon.token(),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Going ahead without you.\n");
    let requests = llm.requests();
    let tool = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert!(
        tool["content"].as_str().unwrap().starts_with("cancelled"),
        "{tool}"
    );
}

#[tokio::test]
async fn over_tcp_the_token_comes_from_the_home_and_only_for_its_own_daemon() {
    let (llm, daemon) = daemon().await;
    llm.set_default(Reply::text("over tcp"));
    let addr = daemon.tcp_addr().await;
    // `--tcp` alone: the port file and run/token of CRABTALK_HOME.
    let output = run(daemon.path(), &["-p", "hi", "--tcp"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "over tcp\n");
    // `--tcp ADDR` naming the home's own daemon: run/token too.
    let output = run(daemon.path(), &["-p", "hi", "--tcp", &addr]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    // From a home that is not the daemon's, without --token: refused,
    // with what to do.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = run(elsewhere.path(), &["-p", "hi", "--tcp", &addr]).await;
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("refused the connection") && stderr.contains("--token"),
        "{stderr}"
    );
    // A wrong token says so.
    let output = run(
        daemon.path(),
        &["-p", "hi", "--tcp", &addr, "--token", "not-it"],
    )
    .await;
    assert_eq!(output.status.code(), Some(3));
    assert!(
        text(&output.stderr).contains("is not the daemon's"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test]
async fn events_tails_the_event_stream_as_lines() {
    let (llm, daemon) = daemon().await;
    llm.set_default(Reply::text("tail me"));
    let mut child = command(daemon.path(), &["events", "--agent", "crab"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let client = daemon.client().await;
    // The subscription starts some time after the process does: keep
    // running turns until one shows up.
    let mut seen = Vec::new();
    crabtalk_testkit::poll_until("a turn in the event tail", async || {
        let turn = crabtalk_testkit::turn::message("crab", "watcher", "hello");
        crabtalk_testkit::turn::Turn::run(&client, turn).await;
        let next = tokio::time::timeout(std::time::Duration::from_millis(500), async {
            let mut got = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                let done = line.contains("done");
                got.push(line);
                if done {
                    break;
                }
            }
            got
        })
        .await;
        if let Ok(got) = next {
            seen.extend(got);
        }
        seen.iter()
            .any(|line| line.contains("text") && line.contains("tail me"))
            .then_some(())
    })
    .await;
    assert!(
        seen.iter().any(|line| line.contains("crab/watcher")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|line| line.contains("done") && line.contains("21 in · 7 out")),
        "{seen:?}"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn print_mode_into_a_pipe_closed_early_ends_quietly() {
    let (llm, daemon) = daemon().await;
    // Far more than a pipe holds, so the writer meets the closed pipe.
    let long = "crab ".repeat(100_000);
    llm.push(Reply::text(&long));
    let mut child = command(daemon.path(), &["-p", "talk a lot"])
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    tokio::io::AsyncReadExt::read_exact(&mut stdout, &mut first)
        .await
        .unwrap();
    assert_eq!(&first, b"crab crab ");
    drop(stdout); // `| head -c 10` exits
    let output = within("crabtalk-tui to end", child.wait_with_output())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "", "a closed pipe is no error");
}

#[tokio::test]
async fn print_mode_json_reports_a_refusal_with_its_code() {
    let (_llm, daemon) = daemon().await;
    let output = run(daemon.path(), &["-p", "hi", "--agent", "nosuch", "--json"]).await;
    assert_eq!(output.status.code(), Some(1));
    let line: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(line["type"], "error");
    assert_eq!(line["code"], 404);
    // The person reads a sentence, with no code in it.
    let err = text(&output.stderr);
    assert!(err.contains("there is no agent \"nosuch\""), "{err}");
    assert!(!err.contains("404"), "{err}");
}
