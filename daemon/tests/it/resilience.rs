//! What survives restarts, crashes, bad input and bad providers.

use std::io::Write;
use std::process::Command;

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary, poll_until, within};

fn user_contents(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn history_is_resumed_after_a_restart() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::text("noted: blue"));
    Turn::run(
        &daemon.client().await,
        message("crab", "user", "my favourite colour is blue"),
    )
    .await;
    daemon.restart().await;
    llm.push(Reply::text("blue"));
    let turn = Turn::run(
        &daemon.client().await,
        message("crab", "user", "what is my favourite colour?"),
    )
    .await;
    assert_eq!(turn.text(), "blue");
    let request = &llm.requests()[1];
    let text = request.to_string();
    assert!(
        text.contains("my favourite colour is blue") && text.contains("noted: blue"),
        "{text}"
    );
}

#[tokio::test]
async fn kill_9_mid_turn_loses_nothing_before_the_torn_line() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::text("first answer"));
    let client = daemon.client().await;
    Turn::run(&client, message("crab", "user", "first question")).await;
    llm.push(Reply::Stall("half an ans".into()));
    let mut stream = client
        .stream(message("crab", "user", "second question"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::Chunk(_)))
        .await;
    daemon.kill9();
    // What a crash in the middle of a write leaves behind.
    let log_path = daemon.path().join("sessions/crab/user.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log_path)
        .unwrap()
        .write_all(b"{\"role\":\"assistant\",\"cont")
        .unwrap();

    daemon.spawn().await;
    llm.push(Reply::text("third answer"));
    let turn = Turn::run(
        &daemon.client().await,
        message("crab", "user", "third question"),
    )
    .await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    let request = llm.requests().last().unwrap().clone();
    assert_eq!(
        user_contents(&request),
        ["first question", "second question", "third question"]
    );
    assert!(request.to_string().contains("first answer"));
    assert!(
        daemon.log().contains("torn last line"),
        "the repair is reported"
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.ends_with('\n') && !log.contains("\"cont\n"),
        "the torn line is gone: {log}"
    );
}

#[tokio::test]
async fn hostile_senders_stay_distinct_and_inside_sessions() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let senders = ["../../x", "a/b", "a b", "a-b", "A-B"];
    for sender in senders {
        llm.push(Reply::text(&format!("hello {sender}")));
        Turn::run(&client, message("crab", sender, &format!("I am {sender}"))).await;
    }
    let listed = client
        .list_conversations(ListConversationsMsg::default())
        .await
        .unwrap()
        .conversations;
    let mut listed_senders: Vec<&str> = listed.iter().map(|c| c.sender.as_str()).collect();
    listed_senders.sort();
    let mut expected = senders.to_vec();
    expected.sort();
    assert_eq!(listed_senders, expected);
    for info in &listed {
        let history = client
            .get_conversation_history(GetConversationHistoryMsg {
                file_path: info.file_path.clone(),
            })
            .await
            .unwrap();
        let contents: Vec<&str> = history
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(
            contents,
            [
                format!("I am {}", info.sender),
                format!("hello {}", info.sender)
            ]
        );
    }
    // One log per sender, all inside sessions/crab/, and nothing escaped.
    // (Only logs are counted: a metadata write may have a temp file there.)
    let sessions = daemon.path().join("sessions").join("crab");
    let logs = std::fs::read_dir(&sessions)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(logs, senders.len());
    assert!(
        !daemon.path().join("x.jsonl").exists()
            && !daemon.path().parent().unwrap().join("x.jsonl").exists()
    );
}

#[tokio::test]
async fn a_second_daemon_on_the_same_home_refuses_to_start() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let output = Command::new(daemon_binary())
        .arg("run")
        .env("CRABTALK_HOME", daemon.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already runs with this home"), "{stderr}");
    // The first one is unharmed.
    daemon.client().await.ping().await.unwrap();
}

#[tokio::test]
async fn a_rate_limited_provider_is_retried() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::Status(429, "slow down".into()));
    llm.push(Reply::Status(503, "overloaded".into()));
    llm.push(Reply::text("recovered"));
    let turn = Turn::run(&daemon.client().await, message("crab", "user", "hi")).await;
    assert_eq!(turn.text(), "recovered");
    assert_eq!(llm.requests().len(), 3);

    llm.push(Reply::Status(401, "bad key".into()));
    let turn = Turn::run(&daemon.client().await, message("crab", "user", "again")).await;
    assert!(
        turn.end().error.contains("HTTP 401") && turn.end().error.contains("bad key"),
        "{}",
        turn.end().error
    );
    assert_eq!(llm.requests().len(), 4, "permanent errors are not retried");
}

#[tokio::test]
async fn a_stalled_stream_ends_with_the_idle_timeout_error() {
    let llm = ScriptedLlm::start().await;
    let config = TestDaemon::config_for(&llm.base_url())
        .replace("[llm]\n", "[llm]\nstream_idle_timeout_secs = 1\n");
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    llm.push(Reply::Stall("I was saying".into()));
    let turn = Turn::run(&daemon.client().await, message("crab", "user", "hi")).await;
    assert_eq!(turn.text(), "I was saying");
    let error = &turn.end().error;
    assert!(
        error.contains("stalled") && error.contains("stream_idle_timeout_secs"),
        "{error}"
    );
}

#[tokio::test]
async fn with_no_provider_the_daemon_starts_and_explains_what_to_set() {
    let daemon = TestDaemon::start(daemon_binary(), "[transport]\ntcp = \"off\"\n").await;
    let client = daemon.client().await;
    let turn = Turn::run(&client, message("", "", "hello?")).await;
    let error = &turn.end().error;
    assert!(
        error.contains("[[providers]]") && error.contains("OPENAI_API_KEY"),
        "{error}"
    );
    let err = client
        .send(SendMsg {
            content: "hello?".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(503), "{err}");
}

#[tokio::test]
async fn a_broken_config_stops_startup_with_file_line_and_column() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "default_agent = \"crab\"\n[transport\ntcp = \"off\"\n",
    )
    .unwrap();
    let output = Command::new(daemon_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(78),
        "EX_CONFIG: service units do not restart on it"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("config.toml:2:"), "{stderr}");
}

#[tokio::test]
async fn sigterm_mid_turn_persists_the_turn_and_cleans_up() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::Stall("partial".into()));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", "user", "long job"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::Chunk(_)))
        .await;
    let status = daemon.stop().await;
    assert!(status.success(), "{status}");
    turn.read_until(&mut stream, |_| false).await;
    assert!(
        turn.end().error.contains("shutting down"),
        "{}",
        turn.end().error
    );
    let run = daemon.path().join("run");
    assert!(!run.join("crabtalk.sock").exists() && !run.join("crabtalk.port").exists());
    let log = std::fs::read_to_string(daemon.path().join("sessions/crab/user.jsonl")).unwrap();
    assert!(log.contains("long job"));

    daemon.spawn().await;
    llm.push(Reply::text("resumed"));
    let turn = within(
        "a turn after restart",
        Turn::run(&daemon.client().await, message("crab", "user", "go on")),
    )
    .await;
    assert_eq!(turn.text(), "resumed");
}

#[tokio::test]
async fn sigint_shuts_down_as_cleanly_as_sigterm() {
    let (_llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let status = daemon.signal(libc::SIGINT).await;
    assert!(status.success(), "{status}");
    let run = daemon.path().join("run");
    assert!(!run.join("crabtalk.sock").exists() && !run.join("crabtalk.port").exists());
}

#[tokio::test]
async fn a_local_ollama_and_provider_keys_are_detected_when_nothing_is_configured() {
    // A scripted server on a free port stands in for Ollama; OLLAMA_HOST
    // says where, in its URL form.
    let ollama = ScriptedLlm::start().await;
    ollama.push(Reply::text("hello from ollama"));
    let ollama_host = format!("http://{}", ollama.addr());
    let daemon = TestDaemon::start_with_env(
        daemon_binary(),
        "[transport]\ntcp = \"off\"\n",
        &[
            ("OPENAI_API_KEY", "sk-test-detected"),
            ("OLLAMA_HOST", &ollama_host),
        ],
    )
    .await;
    let client = daemon.client().await;
    // Ollama's models are discovered in the background.
    poll_until("ollama's models", async || {
        let models = client.list_models(ListModelsMsg {}).await.unwrap().models;
        models.iter().any(|m| m.name == "scripted").then_some(())
    })
    .await;
    let mut request = message("crab", "user", "hi");
    request.agent = String::new();
    client
        .set_active_model(SetActiveModelMsg {
            model: "scripted".into(),
        })
        .await
        .unwrap();
    let turn = Turn::run(&client, request).await;
    assert_eq!(turn.text(), "hello from ollama");
    assert!(
        daemon.log().contains("openai, ollama"),
        "both were detected: {}",
        daemon.log()
    );
}
