//! Compaction end to end (`CompactMsg`, RFC 0021): the real `crabtalkd`, a
//! scripted LLM over real HTTP, the real protocol client.

use crabtalk_memory::{EntryKind, Memory};
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary, within};
use serde_json::{Value, json};

fn compact(agent: &str, sender: &str) -> CompactMsg {
    CompactMsg {
        agent: agent.into(),
        sender: sender.into(),
        ..Default::default()
    }
}

/// The (role, content) of every message of a recorded model request.
fn messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn tool_outputs(turn: &Turn) -> Vec<(String, bool)> {
    turn.events
        .iter()
        .filter_map(|event| match event {
            Event::ToolResult(result) => Some((result.output.clone(), result.is_error)),
            _ => None,
        })
        .collect()
}

fn log_lines(daemon: &TestDaemon, agent: &str, sender: &str) -> Vec<Value> {
    let path = daemon
        .path()
        .join("sessions")
        .join(agent)
        .join(format!("{sender}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn memory(daemon: &TestDaemon, agent: &str) -> Memory {
    Memory::open(daemon.path().join("memory").join(format!("{agent}.crmem"))).unwrap()
}

const SUMMARY: &str = "Quarterly report run for the user. The bash tool printed the figures; \
    the guest worker suggested a bar chart.";

#[tokio::test]
async fn compaction_archives_the_history_and_the_next_turn_starts_from_the_summary() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .update_agent(UpdateAgentMsg {
            name: "crab".into(),
            config: json!({"compact_tool_max_len": 40}).to_string(),
            prompt: String::new(),
        })
        .await
        .unwrap();

    // A turn with a long tool output, then a guest's reply.
    llm.push(Reply::tools(vec![ToolCall::new(
        "c1",
        "bash",
        json!({"command": "printf 'A%.0s' $(seq 1 300); echo TAILMARK"}),
    )]));
    llm.push(Reply::text("The report is done."));
    let turn = Turn::run(
        &client,
        message("crab", "user", "please run the quarterly report"),
    )
    .await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    assert!(tool_outputs(&turn)[0].0.contains("TAILMARK"));
    llm.push(Reply::text("A bar chart would show it best."));
    let guest = StreamMsg {
        guest: Some("worker".into()),
        ..message("crab", "user", "worker, how would you show it?")
    };
    let turn = Turn::run(&client, guest).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    let before = log_lines(&daemon, "crab", "user").len();
    assert_eq!(before, 6);

    llm.push(Reply::text(SUMMARY));
    let summary = within("compaction", client.compact(compact("crab", "user")))
        .await
        .unwrap()
        .summary;
    assert_eq!(summary, SUMMARY);

    // What the model was asked to summarise.
    let request = llm.requests().last().unwrap().clone();
    assert!(request.get("tools").is_none_or(Value::is_null));
    let asked = messages(&request);
    assert_eq!(asked.len(), 2);
    assert!(
        asked[0].1.contains("You compact conversations"),
        "{}",
        asked[0].1
    );
    let transcript = &asked[1].1;
    for expected in [
        "please run the quarterly report",
        "the agent crab calls the tool bash",
        "more bytes cut for the summary",
        "### the guest agent worker\n<from agent=\"worker\">\nA bar chart would show it best.",
    ] {
        assert!(
            transcript.contains(expected),
            "{expected:?} in {transcript}"
        );
    }
    assert!(!transcript.contains("TAILMARK"), "the tool output was cut");

    // The marker, the metadata and the archive.
    let lines = log_lines(&daemon, "crab", "user");
    assert_eq!(lines.len(), before + 1);
    let marker = lines.last().unwrap();
    assert_eq!(marker["compact"], SUMMARY);
    assert_eq!(marker["title"], "Quarterly report run for the user.");
    assert_eq!(marker["messages_before"], 6);
    let archive_name = marker["archive_name"].as_str().unwrap().to_owned();
    assert!(
        archive_name.starts_with("compaction-user-"),
        "{archive_name}"
    );
    assert!(marker["archived_at"].as_str().unwrap().ends_with('Z'));
    let meta: Value = serde_json::from_slice(
        &std::fs::read(daemon.path().join("sessions/crab/user.meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["summary"], SUMMARY);
    assert_eq!(meta["compactions"], 1);
    let stored = memory(&daemon, "crab");
    let archive = stored
        .get(&archive_name)
        .expect("the archive is in the memory file");
    assert_eq!(
        (archive.kind, archive.content.as_str()),
        (EntryKind::Archive, SUMMARY)
    );

    // The next turn starts from the summary, not from the old messages.
    llm.push(Reply::text("We ran the report."));
    Turn::run(&client, message("crab", "user", "what did we do?")).await;
    let request = llm.requests().last().unwrap().clone();
    let sent = messages(&request);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0].0, "system");
    assert_eq!(sent[1].0, "user");
    assert!(
        sent[1].1.starts_with("Summary of the earlier part"),
        "{}",
        sent[1].1
    );
    assert!(sent[1].1.contains(SUMMARY));
    assert_eq!(sent[2], ("user".into(), "what did we do?".into()));
    assert!(
        !request
            .to_string()
            .contains("please run the quarterly report")
    );

    // After a restart: still from the summary, and the archive is recalled.
    daemon.restart().await;
    let client = daemon.client().await;
    llm.push(Reply::tools(vec![ToolCall::new(
        "r1",
        "recall",
        json!({"query": "quarterly report chart"}),
    )]));
    llm.push(Reply::text("Found it."));
    let turn = Turn::run(&client, message("crab", "user", "remind me")).await;
    let recalled = &tool_outputs(&turn)[0];
    assert!(!recalled.1, "{}", recalled.0);
    assert!(recalled.0.contains(&archive_name), "{}", recalled.0);
    assert!(recalled.0.contains("summary of a compacted conversation"));
    assert!(recalled.0.contains("bar chart"));
    let first_call = &llm.requests()[llm.requests().len() - 2];
    let sent = messages(first_call);
    assert!(sent[1].1.contains(SUMMARY), "{sent:?}");
    assert_eq!(sent[2].1, "what did we do?");
    let list = client
        .list_conversations(ListConversationsMsg {
            agent: "crab".into(),
            sender: "user".into(),
        })
        .await
        .unwrap();
    assert_eq!(list.conversations[0].seq, 1, "one compaction");
}

#[tokio::test]
async fn a_turn_sent_during_compaction_runs_after_it_on_the_compacted_history() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    llm.push(Reply::text("Noted."));
    Turn::run(&client, message("crab", "user", "we need milk")).await;

    llm.push(Reply::Gated("The user needs milk.".into()));
    let compacting = {
        let client = daemon.client().await;
        tokio::spawn(async move { client.compact(compact("crab", "user")).await })
    };
    llm.wait_for_requests(2).await;
    llm.push(Reply::text("Eggs too, then."));
    let mut stream = client
        .stream(message("crab", "user", "and eggs"))
        .await
        .unwrap();
    // The daemon has read the turn (frames on a connection are read in
    // order) while the summary is still being written.
    client.ping().await.unwrap();
    assert_eq!(llm.requests().len(), 2, "the turn waits for the compaction");
    llm.release();
    let summary = within("compaction", compacting)
        .await
        .unwrap()
        .unwrap()
        .summary;
    assert_eq!(summary, "The user needs milk.");
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |_| false).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    assert_eq!(turn.text(), "Eggs too, then.");

    let sent = messages(&llm.requests()[2]);
    assert!(sent[1].1.contains("The user needs milk."), "{sent:?}");
    assert_eq!(sent[2], ("user".into(), "and eggs".into()));
    assert_eq!(sent.len(), 3);
    // In the log: the marker, then the turn; nothing lost, nothing between.
    let lines = log_lines(&daemon, "crab", "user");
    let kinds: Vec<String> = lines
        .iter()
        .map(|line| match line.get("compact") {
            Some(_) => "marker".to_owned(),
            None => format!(
                "{}:{}",
                line["role"].as_str().unwrap(),
                line["content"].as_str().unwrap()
            ),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user:we need milk",
            "assistant:Noted.",
            "marker",
            "user:and eggs",
            "assistant:Eggs too, then."
        ]
    );
}

#[tokio::test]
async fn failed_or_pointless_compactions_change_nothing() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let code =
        |result: Result<CompactResponse, crabtalk_proto::ClientError>| result.unwrap_err().code();
    assert_eq!(
        code(client.compact(compact("nobody", "user")).await),
        Some(404)
    );
    assert_eq!(
        code(client.compact(compact("crab", "stranger")).await),
        Some(404)
    );
    assert!(!daemon.path().join("sessions/crab/stranger.jsonl").exists());

    llm.push(Reply::text("Hello."));
    Turn::run(&client, message("crab", "user", "hi")).await;
    llm.push(Reply::Status(400, "context length exceeded".into()));
    let failed = client.compact(compact("crab", "user")).await.unwrap_err();
    assert_eq!(failed.code(), Some(400), "{failed}");
    assert!(
        failed.to_string().contains("context length exceeded"),
        "{failed}"
    );
    assert_eq!(log_lines(&daemon, "crab", "user").len(), 2, "no marker");
    assert!(
        !daemon.path().join("memory/crab.crmem").exists(),
        "no archive"
    );

    llm.push(Reply::text("Greetings were exchanged."));
    client.compact(compact("crab", "user")).await.unwrap();
    let again = client.compact(compact("crab", "user")).await.unwrap_err();
    assert_eq!(again.code(), Some(409), "{again}");
    assert!(again.to_string().contains("nothing to compact"), "{again}");
    assert_eq!(memory(&daemon, "crab").len(), 1);
}

/// Compaction's summary is one non-streamed call with the retries of any
/// whole call: a bad key fails at once and leaves everything as it was; a
/// rate limit and an overload are waited out.
async fn compaction_retries_transient_failures_only(llm: &ScriptedLlm, daemon: &TestDaemon) {
    let client = daemon.client().await;
    llm.push(Reply::text("Hello."));
    Turn::run(&client, message("crab", "user", "hi")).await;
    assert_eq!(llm.requests().len(), 1);

    llm.push(Reply::Status(401, "bad key".into()));
    let failed = client.compact(compact("crab", "user")).await.unwrap_err();
    assert_eq!(failed.code(), Some(400), "{failed}");
    assert!(failed.to_string().contains("HTTP 401"), "{failed}");
    assert_eq!(llm.requests().len(), 2, "a bad key is not retried");
    assert_eq!(log_lines(daemon, "crab", "user").len(), 2, "no marker");

    llm.push(Reply::Status(429, "slow down".into()));
    llm.push(Reply::Status(503, "overloaded".into()));
    llm.push(Reply::text("The user said hi."));
    let summary = client
        .compact(compact("crab", "user"))
        .await
        .unwrap()
        .summary;
    assert_eq!(summary, "The user said hi.");
    let requests = llm.requests();
    assert_eq!(requests.len(), 5, "two retries, then the summary");
    for request in &requests[1..] {
        assert_ne!(
            request.get("stream"),
            Some(&json!(true)),
            "the summary is not streamed: {request}"
        );
    }
    assert_eq!(requests[2], requests[4], "a retry repeats the request");
    assert!(
        log_lines(daemon, "crab", "user")[2]
            .get("compact")
            .is_some()
    );
}

#[tokio::test]
async fn compaction_retries_a_rate_limit_but_not_a_bad_key() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    compaction_retries_transient_failures_only(&llm, &daemon).await;
}

#[tokio::test]
async fn compaction_through_the_anthropic_api_is_retried_the_same_way() {
    let llm = ScriptedLlm::start().await;
    let config = format!(
        "default_model = \"claude-scripted\"\n\n\
         [[providers]]\nkind = \"anthropic\"\napi_key = \"test\"\nbase_url = \"{}\"\nmodels = [\"claude-scripted\"]\n\n\
         [transport]\ntcp = \"off\"\n\n[llm]\nretry_backoff_ms = 20\n",
        llm.base_url()
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    compaction_retries_transient_failures_only(&llm, &daemon).await;
}
