//! The memory tools end to end: scripted tool calls to `remember`, `recall`
//! and `forget` on the real daemon; memory switched off; restarts, reloads
//! and renames; and `crabtalkd memory dump|load` on a real home.

use std::path::Path;
use std::process::Output;

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary, poll_until};
use serde_json::{Value, json};

use crate::support::offered_tools;

/// Runs one turn in which the model makes `calls`, then says "Done.";
/// returns the tool results as (output, is_error), in call order (they
/// arrive in the order they finish).
async fn with_tools(
    llm: &ScriptedLlm,
    daemon: &TestDaemon,
    agent: &str,
    calls: Vec<ToolCall>,
) -> Vec<(String, bool)> {
    let ids: Vec<String> = calls.iter().map(|call| call.id.clone()).collect();
    llm.push(Reply::tools(calls));
    llm.push(Reply::text("Done."));
    let client = daemon.client().await;
    let turn = Turn::run(&client, message(agent, "user", "go on")).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    ids.iter()
        .map(|id| {
            turn.events
                .iter()
                .find_map(|event| match event {
                    Event::ToolResult(result) if result.call_id == *id => {
                        Some((result.output.clone(), result.is_error))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no result for {id}: {:?}", turn.kinds()))
        })
        .collect()
}

fn remember(id: &str, name: &str, content: &str, aliases: &[&str]) -> ToolCall {
    ToolCall::new(
        id,
        "remember",
        json!({"name": name, "content": content, "aliases": aliases}),
    )
}

fn recall(id: &str, query: &str) -> ToolCall {
    ToolCall::new(id, "recall", json!({"query": query}))
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn remember_recall_and_forget_through_tool_calls() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let saved = with_tools(
        &llm,
        &daemon,
        "crab",
        vec![
            remember(
                "c1",
                "deploy steps",
                "run make release, then tag the commit",
                &["ship"],
            ),
            remember("c2", "editor", "the user edits code with helix", &[]),
        ],
    )
    .await;
    assert_eq!(
        saved,
        [
            ("Remembered the note \"deploy steps\".".to_owned(), false),
            ("Remembered the note \"editor\".".to_owned(), false)
        ]
    );
    let request = &llm.requests()[0];
    let tools = offered_tools(request);
    for tool in ["remember", "recall", "forget", "search_sessions"] {
        assert!(tools.contains(&tool.to_owned()), "{tool} in {tools:?}");
    }
    assert!(system_prompt(request).contains("<memory>"));

    // BM25 over names, aliases and content: "ship" is an alias, "release"
    // is in the content; "helix" only matches the other note.
    let found = with_tools(
        &llm,
        &daemon,
        "crab",
        vec![recall("c3", "how do we ship a release")],
    )
    .await;
    let (text, is_error) = &found[0];
    assert!(!is_error, "{text}");
    assert!(text.starts_with("1 found for"), "{text}");
    assert!(
        text.contains("## deploy steps (note, ") && text.contains("aliases: ship"),
        "{text}"
    );
    assert!(text.contains("run make release, then tag the commit"));
    let found = with_tools(
        &llm,
        &daemon,
        "crab",
        vec![recall("c4", "helix editor release")],
    )
    .await;
    let text = &found[0].0;
    let editor = text.find("## editor").expect("editor found");
    let deploy = text.find("## deploy steps").expect("deploy found");
    assert!(editor < deploy, "two matching words rank above one: {text}");

    let forgotten = with_tools(
        &llm,
        &daemon,
        "crab",
        vec![
            ToolCall::new("c5", "forget", json!({"name": "ship"})),
            ToolCall::new("c6", "forget", json!({"name": "no such note"})),
            ToolCall::new("c7", "remember", json!({"name": "x"})),
        ],
    )
    .await;
    assert_eq!(
        forgotten[0],
        ("Forgot the note \"deploy steps\".".to_owned(), false)
    );
    assert!(
        forgotten[1].1 && forgotten[1].0.contains("no note is named"),
        "{:?}",
        forgotten[1]
    );
    assert!(
        forgotten[2].1 && forgotten[2].0.contains("invalid arguments for remember"),
        "{:?}",
        forgotten[2]
    );
    let found = with_tools(&llm, &daemon, "crab", vec![recall("c8", "release")]).await;
    assert!(
        found[0].0.starts_with("nothing in your memory matches"),
        "{:?}",
        found[0]
    );
}

#[tokio::test]
async fn agents_without_memory_are_not_offered_the_tools_and_calls_are_refused() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "quiet".into(),
            config: json!({"memory": {"enabled": false}}).to_string(),
            prompt: "You keep nothing.".into(),
        })
        .await
        .unwrap();
    let results = with_tools(
        &llm,
        &daemon,
        "quiet",
        vec![
            remember("c1", "secret", "x", &[]),
            ToolCall::new("c2", "search_sessions", json!({"query": "x"})),
        ],
    )
    .await;
    for (output, is_error) in &results {
        assert!(is_error, "{output}");
        assert!(output.starts_with("there is no tool named"), "{output}");
    }
    let request = &llm.requests()[0];
    let tools = offered_tools(request);
    assert!(!tools.is_empty());
    for tool in ["remember", "recall", "forget", "search_sessions"] {
        assert!(!tools.contains(&tool.to_owned()), "{tool} in {tools:?}");
    }
    assert!(!system_prompt(request).contains("<memory>"));
    assert!(!daemon.path().join("memory/quiet.crmem").exists());
}

#[tokio::test]
async fn memory_survives_restart_and_reload_and_is_opened_once() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    with_tools(
        &llm,
        &daemon,
        "crab",
        vec![remember(
            "c1",
            "birthday",
            "the user's birthday is on 3 March",
            &[],
        )],
    )
    .await;
    daemon.client().await.reload(ReloadMsg {}).await.unwrap();
    let found = with_tools(&llm, &daemon, "crab", vec![recall("c2", "birthday")]).await;
    assert!(found[0].0.contains("3 March"), "{:?}", found[0]);
    // The reload carried the open memory and the index over.
    let log = daemon.log();
    assert_eq!(
        log.matches("memory of agent crab: opened").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("session index rebuilt").count(), 1, "{log}");

    daemon.restart().await;
    let found = with_tools(
        &llm,
        &daemon,
        "crab",
        vec![recall("c3", "when is the birthday")],
    )
    .await;
    assert!(found[0].0.contains("3 March"), "{:?}", found[0]);
}

#[tokio::test]
async fn renaming_an_agent_moves_its_memory_and_its_searchable_conversations() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "scout".into(),
            config: String::new(),
            prompt: "You scout.".into(),
        })
        .await
        .unwrap();
    with_tools(
        &llm,
        &daemon,
        "scout",
        vec![remember(
            "c1",
            "trail",
            "the north trail is closed after rain",
            &[],
        )],
    )
    .await;
    client
        .rename_agent(RenameAgentMsg {
            old_name: "scout".into(),
            new_name: "ranger".into(),
        })
        .await
        .unwrap();
    let memory = daemon.path().join("memory");
    assert!(memory.join("ranger.crmem").is_file());
    assert!(!memory.join("scout.crmem").exists());
    let found = with_tools(&llm, &daemon, "ranger", vec![recall("c2", "north trail")]).await;
    assert!(found[0].0.contains("closed after rain"), "{:?}", found[0]);

    // The conversation moved in the session index too.
    let search = |agent: &str| SearchSessionsMsg {
        agent: agent.into(),
        query: "trail".into(),
        ..Default::default()
    };
    let found = client.search_sessions(search("scout")).await.unwrap_err();
    assert_eq!(found.code(), Some(404));
    // The index moves in the background after the rename answers.
    let hits = poll_until("the renamed conversation in the index", async || {
        let hits = client.search_sessions(search("ranger")).await.unwrap().hits;
        hits.iter()
            .any(|hit| hit.msg_idx == Some(1))
            .then_some(hits)
    })
    .await;
    assert!(
        hits.iter().all(|hit| hit.conversation == "ranger/user"),
        "{hits:?}"
    );
    assert!(hits.iter().any(|hit| hit.msg_idx == Some(1)), "{hits:?}");
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

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn memory_dump_and_load_on_a_real_home() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    with_tools(
        &llm,
        &daemon,
        "crab",
        vec![
            remember("c1", "deploy steps", "run make release", &["ship"]),
            remember("c2", "editor", "helix", &[]),
        ],
    )
    .await;
    let book = tempfile::tempdir().unwrap();
    let home = daemon.path().to_owned();

    // Dump works while the daemon runs; load is refused.
    let dumped = crabtalkd(
        &home,
        &[
            "memory",
            "dump",
            "--agent",
            "crab",
            book.path().to_str().unwrap(),
        ],
    );
    assert!(dumped.status.success(), "{}", text(&dumped));
    assert!(
        text(&dumped).contains("wrote 2 entries"),
        "{}",
        text(&dumped)
    );
    let note = book.path().join("notes/deploy steps.md");
    let content = std::fs::read_to_string(&note).unwrap();
    assert!(
        content.starts_with("<div id=\"meta\">") && content.contains("<li>ship</li>"),
        "{content}"
    );
    assert!(book.path().join("SUMMARY.md").is_file() && book.path().join("book.toml").is_file());
    let refused = crabtalkd(
        &home,
        &[
            "memory",
            "load",
            "--agent",
            "crab",
            book.path().to_str().unwrap(),
        ],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("crabtalkd is running with this home"),
        "{}",
        text(&refused)
    );
    let unknown = crabtalkd(
        &home,
        &[
            "memory",
            "dump",
            "--agent",
            "nobody",
            book.path().to_str().unwrap(),
        ],
    );
    assert!(!unknown.status.success());
    assert!(
        text(&unknown).contains("there is no agent \"nobody\""),
        "{}",
        text(&unknown)
    );

    // Edited by a person, loaded with the daemon stopped.
    daemon.stop().await;
    std::fs::write(
        &note,
        content.replace("run make release", "run make release, then tag it"),
    )
    .unwrap();
    std::fs::remove_file(book.path().join("notes/editor.md")).unwrap();
    std::fs::write(book.path().join("notes/bad%zz.md"), "x").unwrap();
    let broken = crabtalkd(
        &home,
        &[
            "memory",
            "load",
            "--agent",
            "crab",
            book.path().to_str().unwrap(),
        ],
    );
    assert!(!broken.status.success());
    assert!(
        text(&broken).contains("nothing was changed"),
        "{}",
        text(&broken)
    );
    std::fs::remove_file(book.path().join("notes/bad%zz.md")).unwrap();
    let mistyped = crabtalkd(
        &home,
        &[
            "memory",
            "load",
            "--agent",
            "crabb",
            book.path().to_str().unwrap(),
        ],
    );
    assert!(!mistyped.status.success());
    assert!(!home.join("memory/crabb.crmem").exists());
    let loaded = crabtalkd(
        &home,
        &[
            "memory",
            "load",
            "--agent",
            "crab",
            book.path().to_str().unwrap(),
        ],
    );
    assert!(loaded.status.success(), "{}", text(&loaded));
    assert!(
        text(&loaded).contains("loaded 1 entry"),
        "{}",
        text(&loaded)
    );

    daemon.spawn().await;
    let found = with_tools(
        &llm,
        &daemon,
        "crab",
        vec![recall("c3", "ship"), recall("c4", "helix")],
    )
    .await;
    assert!(found[0].0.contains("then tag it"), "{:?}", found[0]);
    assert!(
        found[1].0.starts_with("nothing in your memory matches"),
        "{:?}",
        found[1]
    );
}

/// `Remember` and `Recall` on the wire (RFC 0022): the same memory the
/// tools use, the same rules (an alias finds its note, a summary is not a
/// note), the default agent when none is named, and clear refusals.
#[tokio::test]
async fn remember_and_recall_over_the_protocol_share_the_tools_memory() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let saved = client
        .remember(RememberMsg {
            agent: String::new(),
            name: "editor".into(),
            content: "the user writes in helix".into(),
            aliases: vec!["ide".into()],
        })
        .await
        .unwrap();
    assert_eq!(
        (saved.agent.as_str(), saved.name.as_str(), saved.updated),
        ("crab", "editor", false)
    );
    let saved = client
        .remember(RememberMsg {
            agent: "crab".into(),
            name: "ide".into(),
            content: "the user writes in helix, with the vim keymap".into(),
            aliases: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!((saved.name.as_str(), saved.updated), ("editor", true));

    // What the wire saved, the agent's recall tool finds.
    let found = with_tools(&llm, &daemon, "crab", vec![recall("r1", "keymap")]).await;
    assert!(found[0].0.contains("vim keymap"), "{}", found[0].0);
    // What the agent remembers, the wire recalls.
    with_tools(
        &llm,
        &daemon,
        "crab",
        vec![remember("m1", "deploy", "make release then tag", &[])],
    )
    .await;
    let recalled = client
        .recall(RecallMsg {
            agent: "crab".into(),
            query: "release".into(),
            limit: None,
        })
        .await
        .unwrap();
    let entry = &recalled.entries[0];
    assert_eq!(
        (entry.name.as_str(), entry.kind.as_str(), entry.truncated),
        ("deploy", "note", false)
    );
    assert_eq!(entry.content, "make release then tag");
    assert!(entry.score > 0.0 && entry.created_at > 0);
    let editor = client
        .recall(RecallMsg {
            agent: String::new(),
            query: "helix".into(),
            limit: Some(1),
        })
        .await
        .unwrap();
    assert_eq!(editor.entries.len(), 1);
    assert_eq!(editor.entries[0].aliases, ["ide"]);

    let refused = |err: crabtalk_proto::ClientError| (err.code(), err.to_string());
    let (code, text) = refused(
        client
            .recall(RecallMsg {
                agent: "nobody".into(),
                query: "x".into(),
                limit: None,
            })
            .await
            .unwrap_err(),
    );
    assert_eq!(code, Some(ErrorMsg::NOT_FOUND), "{text}");
    let (code, text) = refused(
        client
            .recall(RecallMsg {
                agent: "crab".into(),
                query: "  ".into(),
                limit: None,
            })
            .await
            .unwrap_err(),
    );
    assert_eq!(code, Some(ErrorMsg::BAD_REQUEST), "{text}");
    let (code, text) = refused(
        client
            .remember(RememberMsg {
                agent: "crab".into(),
                name: "bad\nname".into(),
                content: "x".into(),
                aliases: Vec::new(),
            })
            .await
            .unwrap_err(),
    );
    assert!(
        code == Some(ErrorMsg::BAD_REQUEST) && text.contains("control"),
        "{text}"
    );

    client
        .create_agent(CreateAgentMsg {
            name: "quiet".into(),
            config: json!({"memory": {"enabled": false}}).to_string(),
            prompt: "You forget.".into(),
        })
        .await
        .unwrap();
    let (code, text) = refused(
        client
            .remember(RememberMsg {
                agent: "quiet".into(),
                name: "x".into(),
                content: "y".into(),
                aliases: Vec::new(),
            })
            .await
            .unwrap_err(),
    );
    assert!(
        code == Some(ErrorMsg::CONFLICT) && text.contains("enabled = false"),
        "{text}"
    );
    assert!(!daemon.path().join("memory/quiet.crmem").exists());
}
