//! Session search end to end: the real daemon feeds the index as turns are
//! persisted, rebuilds it from the logs at start, and answers
//! `SearchSessionsMsg`, the `search_sessions` tool and `crabtalkd sessions
//! search`.

use std::path::Path;
use std::process::Output;

use crabtalk_proto::Client;
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary, poll_until};
use serde_json::json;

/// One turn: `user` says `content`, the model answers `reply`.
async fn say(
    client: &Client,
    llm: &ScriptedLlm,
    agent: &str,
    user: &str,
    content: &str,
    reply: &str,
) {
    llm.push(Reply::text(reply));
    let turn = Turn::run(client, message(agent, user, content)).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
}

fn query(agent: &str, text: &str) -> SearchSessionsMsg {
    SearchSessionsMsg {
        agent: agent.into(),
        query: text.into(),
        ..Default::default()
    }
}

async fn search(client: &Client, request: SearchSessionsMsg) -> Vec<SessionHit> {
    client.search_sessions(request).await.unwrap().hits
}

/// Searches until `done` holds for the hits (the index fills in the
/// background at start and after renames).
async fn search_until(
    client: &Client,
    request: SearchSessionsMsg,
    done: impl Fn(&[SessionHit]) -> bool,
) -> Vec<SessionHit> {
    poll_until("the expected search hits", async || {
        let hits = search(client, request.clone()).await;
        done(&hits).then_some(hits)
    })
    .await
}

fn snippets(hit: &SessionHit) -> Vec<&str> {
    hit.window
        .iter()
        .map(|item| item.snippet.as_str())
        .collect()
}

#[tokio::test]
async fn search_through_the_protocol_is_weighted_scoped_filtered_and_bounded() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "scout".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // The same words as a user message (weight 1.5) and as an assistant
    // reply (1.0); another agent says them too.
    say(
        &client,
        &llm,
        "crab",
        "alice",
        "zebra migration plan",
        "noted",
    )
    .await;
    say(
        &client,
        &llm,
        "crab",
        "bob",
        "hello there",
        "zebra migration plan",
    )
    .await;
    say(
        &client,
        &llm,
        "scout",
        "alice",
        "zebra migration plan",
        "ok",
    )
    .await;
    let hits = search(&client, query("crab", "zebra migration")).await;
    let found: Vec<(&str, &str)> = hits
        .iter()
        .map(|hit| (hit.conversation.as_str(), hit.field.as_str()))
        .collect();
    assert_eq!(found, [("crab/alice", "user"), ("crab/bob", "assistant")]);
    assert!(
        (hits[0].score / hits[1].score - 1.5).abs() < 1e-9,
        "{hits:?}"
    );
    assert_eq!(hits[1].msg_idx, Some(1));
    assert_eq!(snippets(&hits[1]), ["hello there", "zebra migration plan"]);

    // A compaction summary (weight 3.0) outranks both.
    say(
        &client,
        &llm,
        "crab",
        "carol",
        "let us talk about animals",
        "sure",
    )
    .await;
    llm.push(Reply::text(
        "Carol and the agent planned the zebra migration.",
    ));
    client
        .compact(CompactMsg {
            agent: "crab".into(),
            sender: "carol".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let hits = search(&client, query("crab", "zebra migration")).await;
    assert_eq!(
        (hits[0].conversation.as_str(), hits[0].field.as_str()),
        ("crab/carol", "summary")
    );
    assert_eq!(hits[0].msg_idx, None);
    assert!(
        hits.iter().all(|hit| hit.conversation.starts_with("crab/")),
        "{hits:?}"
    );

    // The sender filter.
    let hits = search(
        &client,
        SearchSessionsMsg {
            sender: "bob".into(),
            ..query("crab", "zebra")
        },
    )
    .await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].sender, "bob");

    // Bounds: at most 20 hits, windows of at most 16 consecutive messages.
    for i in 0..12 {
        say(
            &client,
            &llm,
            "crab",
            "dave",
            &format!("counter {i}"),
            &format!("counter reply {i}"),
        )
        .await;
    }
    let hits = search(
        &client,
        SearchSessionsMsg {
            limit: Some(500),
            context: Some(500),
            ..query("crab", "counter")
        },
    )
    .await;
    assert_eq!(hits.len(), 20);
    for hit in &hits {
        assert!(hit.window.len() <= 16, "{}", hit.window.len());
        let numbers: Vec<u64> = hit
            .window
            .iter()
            .map(|item| item.msg_idx.unwrap())
            .collect();
        assert!(
            numbers.windows(2).all(|pair| pair[1] == pair[0] + 1),
            "{numbers:?}"
        );
        assert!(numbers.contains(&hit.msg_idx.unwrap()));
    }
    assert_eq!(hits.iter().map(|hit| hit.window.len()).max(), Some(16));

    // A deleted conversation is no longer found.
    let listed = client
        .list_conversations(ListConversationsMsg {
            agent: "crab".into(),
            sender: "alice".into(),
        })
        .await
        .unwrap();
    client
        .delete_conversation(DeleteConversationMsg {
            file_path: listed.conversations[0].file_path.clone(),
        })
        .await
        .unwrap();
    let hits = search(&client, query("crab", "zebra")).await;
    assert!(
        hits.iter().all(|hit| hit.conversation != "crab/alice"),
        "{hits:?}"
    );

    // Bad requests.
    let empty = client
        .search_sessions(query("crab", "  "))
        .await
        .unwrap_err();
    assert_eq!(empty.code(), Some(400));
    let unknown = client
        .search_sessions(query("nobody", "zebra"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Some(404));
}

#[tokio::test]
async fn the_search_sessions_tool_searches_only_the_calling_agents_conversations() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "scout".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    say(
        &client,
        &llm,
        "crab",
        "alice",
        "a kraken was sighted off the coast",
        "noted",
    )
    .await;
    say(
        &client,
        &llm,
        "scout",
        "alice",
        "kraken sighting log for scouts",
        "ok",
    )
    .await;
    llm.push(Reply::tools(vec![
        ToolCall::new("s1", "search_sessions", json!({"query": "kraken sighting"})),
        ToolCall::new(
            "s2",
            "search_sessions",
            json!({"query": "kraken", "sender": "nobody"}),
        ),
        ToolCall::new(
            "s3",
            "search_sessions",
            json!({"query": "kraken", "sender": "alice"}),
        ),
        ToolCall::new(
            "s4",
            "search_sessions",
            json!({"query": "kraken", "sender": "bob"}),
        ),
    ]));
    llm.push(Reply::text("Found."));
    let turn = Turn::run(&client, message("crab", "bob", "what about the kraken?")).await;
    let result = |id: &str| {
        turn.events
            .iter()
            .find_map(|event| match event {
                Event::ToolResult(result) if result.call_id == id => Some(result.clone()),
                _ => None,
            })
            .unwrap()
    };
    let all = result("s1");
    assert!(!all.is_error, "{}", all.output);
    assert!(all.output.contains("(crab/alice)"), "{}", all.output);
    assert!(
        all.output
            .contains("> #0 user: a kraken was sighted off the coast"),
        "{}",
        all.output
    );
    assert!(
        all.output.contains("  #1 assistant: noted"),
        "{}",
        all.output
    );
    assert!(
        !all.output.contains("scout"),
        "another agent's conversation: {}",
        all.output
    );
    let filtered = result("s2");
    assert_eq!(filtered.output, "No past conversation matches \"kraken\".");
    // The filter keeps exactly the named sender's conversations: bob's own
    // question is already indexed when the tool runs.
    let alice = result("s3");
    assert!(
        alice.output.contains("(crab/alice)") && !alice.output.contains("(crab/bob)"),
        "{}",
        alice.output
    );
    let bob = result("s4");
    assert!(
        bob.output.contains("(crab/bob)") && !bob.output.contains("(crab/alice)"),
        "{}",
        bob.output
    );
}

#[tokio::test]
async fn the_rebuild_after_a_kill_finds_old_messages_under_their_numbers() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    say(&client, &llm, "crab", "user", "first walrus", "reply a").await;
    say(&client, &llm, "crab", "user", "second narwhal", "reply b").await;
    llm.push(Reply::text("A walrus and a narwhal were discussed."));
    client
        .compact(CompactMsg {
            agent: "crab".into(),
            sender: "user".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    say(&client, &llm, "crab", "user", "third walrus", "reply c").await;
    drop(client);
    // Killed before the metadata (written a second late) caught up with the
    // last turn, in the middle of writing a line. Loading reads only from
    // the marker, so only the marker's count gives the right numbers.
    daemon.kill9();
    let log = daemon.path().join("sessions/crab/user.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut file| {
            std::io::Write::write_all(&mut file, b"{\"role\":\"user\",\"content\":\"torn wal")
        })
        .unwrap();
    daemon.spawn().await;
    let client = daemon.client().await;
    let walrus = SearchSessionsMsg {
        context: Some(1),
        ..query("crab", "walrus")
    };
    let hits = search_until(&client, walrus, |hits| hits.len() >= 3).await;
    let found: Vec<(&str, Option<u64>)> = hits
        .iter()
        .map(|hit| (hit.field.as_str(), hit.msg_idx))
        .collect();
    assert_eq!(
        found,
        [("summary", None), ("user", Some(0)), ("user", Some(4))],
        "the torn line is not a message"
    );
    assert_eq!(snippets(&hits[1]), ["first walrus", "reply a"]);
    assert_eq!(snippets(&hits[2]), ["reply b", "third walrus", "reply c"]);

    // New messages continue the numbering the log implies.
    say(&client, &llm, "crab", "user", "fourth beluga", "reply d").await;
    let hits = search(
        &client,
        SearchSessionsMsg {
            context: Some(1),
            ..query("crab", "beluga")
        },
    )
    .await;
    assert_eq!(hits[0].msg_idx, Some(6));
    assert_eq!(snippets(&hits[0]), ["reply c", "fourth beluga", "reply d"]);
}

#[tokio::test]
async fn a_message_appended_during_the_rebuild_is_found() {
    let llm = ScriptedLlm::start().await;
    let gate_dir = tempfile::tempdir().unwrap();
    let gate = gate_dir.path().join("open");
    std::fs::write(&gate, "").unwrap();
    let mut daemon = TestDaemon::start_with_env(
        daemon_binary(),
        &TestDaemon::config_for(&llm.base_url()),
        &[(
            crabtalkd::sessions::REBUILD_GATE_ENV,
            gate.to_str().unwrap(),
        )],
    )
    .await;
    let client = daemon.client().await;
    say(&client, &llm, "crab", "user", "an old albatross", "reply").await;
    drop(client);
    daemon.stop().await;

    // The next start's rebuild reads the logs, then waits at the gate.
    std::fs::remove_file(&gate).unwrap();
    daemon.spawn().await;
    let client = daemon.client().await;
    say(&client, &llm, "crab", "user", "a new pelican", "reply").await;
    let hits = search(&client, query("crab", "pelican")).await;
    assert_eq!(
        hits[0].msg_idx,
        Some(2),
        "live appends are searchable at once"
    );
    let old = search(&client, query("crab", "albatross")).await;
    assert!(
        old.is_empty(),
        "the rebuild has not been swapped in yet: {old:?}"
    );

    std::fs::write(&gate, "").unwrap();
    search_until(&client, query("crab", "albatross"), |hits| !hits.is_empty()).await;
    let hits = search(&client, query("crab", "pelican")).await;
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].msg_idx, Some(2));
    assert_eq!(
        snippets(&hits[0]),
        ["an old albatross", "reply", "a new pelican", "reply"]
    );
}

fn crabtalkd(home: &Path, args: &[&str]) -> Output {
    std::process::Command::new(daemon_binary())
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run crabtalkd")
}

#[tokio::test]
async fn the_sessions_search_command_prints_hits_and_needs_the_daemon() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    say(
        &client,
        &llm,
        "crab",
        "tg:42",
        "the lighthouse keeper called",
        "I will call back",
    )
    .await;
    let home = daemon.path().to_owned();
    let found = crabtalkd(
        &home,
        &[
            "sessions",
            "search",
            "lighthouse",
            "keeper",
            "--sender",
            "tg:42",
        ],
    );
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(
        found.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&found.stderr)
    );
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("crab/tg%3A42 · with tg:42 · message 0 · score "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  >    0 user             the lighthouse keeper called"),
        "{stdout}"
    );
    assert!(
        stdout.contains("       1 assistant        I will call back"),
        "{stdout}"
    );
    let none = crabtalkd(
        &home,
        &["sessions", "search", "lighthouse", "--sender", "someone"],
    );
    assert_eq!(
        String::from_utf8_lossy(&none.stdout).trim(),
        "no conversation matches \"lighthouse\""
    );

    drop(client);
    daemon.stop().await;
    let refused = crabtalkd(&home, &["sessions", "search", "lighthouse"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("crabtalkd is not running"), "{stderr}");
}
