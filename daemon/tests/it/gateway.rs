//! Gateway senders and the daemon's own files, on the real daemon: what a
//! `tg:` chain may use, what no sender may read or edit, and what a gateway
//! sender finds with `search_sessions` and `recall` (issue 10, findings 3
//! and 4).

use std::path::Path;

use crabtalk_proto::Client;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary};
use serde_json::{Value, json};

use crate::support::offered_tools;

const SECRET_KEY: &str = "sk-live-do-not-leak";

async fn setup(extra: &str) -> (ScriptedLlm, TestDaemon) {
    let llm = ScriptedLlm::start().await;
    // The provider key is in config.toml, as in the report.
    let config = TestDaemon::config_for(&llm.base_url()).replace(
        "models = [\"scripted\"]",
        &format!("models = [\"scripted\"]\napi_key = \"{SECRET_KEY}\""),
    );
    let daemon = TestDaemon::start(daemon_binary(), &format!("{config}\n{extra}")).await;
    (llm, daemon)
}

/// One turn of `sender` in which the model makes `calls`, then says done;
/// the results by call, and the tool names the model was offered.
async fn turn_with(
    llm: &ScriptedLlm,
    client: &Client,
    sender: &str,
    cwd: &Path,
    calls: Vec<ToolCall>,
) -> (Vec<ToolResultEvent>, Vec<String>) {
    let before = llm.requests().len();
    let ids: Vec<String> = calls.iter().map(|call| call.id.clone()).collect();
    llm.push(Reply::tools(calls));
    llm.push(Reply::text("done"));
    let mut request = message("crab", sender, "go");
    request.cwd = Some(cwd.display().to_string());
    let turn = Turn::run(client, request).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    let results = turn.tool_results();
    let results = ids
        .iter()
        .map(|id| results.iter().find(|r| &r.call_id == id).cloned().unwrap())
        .collect();
    let offered = offered_tools(&llm.requests()[before]);
    (results, offered)
}

fn read(id: &str, path: &Path) -> ToolCall {
    ToolCall::new(id, "read", json!({"path": path.display().to_string()}))
}

fn edit(id: &str, path: &Path, old: &str, new: &str) -> ToolCall {
    ToolCall::new(
        id,
        "edit",
        json!({"path": path.display().to_string(), "old_string": old, "new_string": new}),
    )
}

#[tokio::test]
async fn a_gateway_sender_gets_no_shell_read_or_edit_and_is_not_even_offered_them() {
    let (llm, daemon) = setup("").await;
    let client = daemon.client().await;
    let work = tempfile::tempdir().unwrap();
    let agent_file = daemon.path().join("agents").join("crab.toml");
    let (results, offered) = turn_with(
        &llm,
        &client,
        "tg:42",
        work.path(),
        vec![
            read("r", &daemon.path().join("config.toml")),
            edit("e", &agent_file, "", "[bash]\nallow_gateway = true\n"),
            ToolCall::new("b", "bash", json!({"command": "id"})),
        ],
    )
    .await;
    for result in &results {
        assert!(result.is_error, "{}", result.output);
        assert!(
            result.output.contains("gateway") && result.output.contains("tg:42"),
            "{}",
            result.output
        );
        assert!(!result.output.contains(SECRET_KEY), "{}", result.output);
    }
    assert!(
        results[0].output.contains("deny_tools"),
        "{}",
        results[0].output
    );
    for tool in ["bash", "read", "edit"] {
        assert!(
            !offered.iter().any(|t| t == tool),
            "{tool} offered: {offered:?}"
        );
    }
    assert!(offered.iter().any(|t| t == "ask_user"), "{offered:?}");
    let agent = std::fs::read_to_string(&agent_file).unwrap_or_default();
    assert!(!agent.contains("allow_gateway = true"), "{agent}");

    // A local user is offered them all.
    let (_, offered) = turn_with(&llm, &client, "user", work.path(), vec![]).await;
    for tool in ["bash", "read", "edit"] {
        assert!(
            offered.iter().any(|t| t == tool),
            "{tool} missing: {offered:?}"
        );
    }
}

#[tokio::test]
async fn no_sender_reads_or_edits_the_daemons_files_by_any_path() {
    let (llm, daemon) = setup("").await;
    let client = daemon.client().await;
    let work = tempfile::tempdir().unwrap();
    let home = daemon.path();
    // The same files, by other names.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(home.join("config.toml"), work.path().join("notes.txt"))
            .unwrap();
        std::os::unix::fs::symlink(home, work.path().join("h")).unwrap();
    }
    let crab_toml = home.join("agents").join("crab.toml");
    let mut calls = vec![
        read("config", &home.join("config.toml")),
        read("agent", &crab_toml),
        read("token", &home.join("run").join("token")),
        read(
            "dotdot",
            &work
                .path()
                .join("..")
                .join(home.file_name().unwrap())
                .join("config.toml"),
        ),
        read("proc", Path::new("/proc/self/environ")),
    ];
    if cfg!(unix) {
        calls.push(read("symlink", &work.path().join("notes.txt")));
        calls.push(read(
            "dirlink",
            &work.path().join("h").join("agents").join("crab.toml"),
        ));
    }
    let (results, _) = turn_with(&llm, &client, "user", work.path(), calls).await;
    for result in &results {
        assert!(result.is_error, "{}: {}", result.call_id, result.output);
        assert!(
            result.output.contains("never open the daemon's own files"),
            "{}: {}",
            result.call_id,
            result.output
        );
        assert!(!result.output.contains(SECRET_KEY), "{}", result.output);
    }

    // A link read while it led to the user's file and switched to the
    // daemon's afterwards: the edit goes where the link leads now, and is
    // refused.
    #[cfg(unix)]
    {
        let decoy = work.path().join("decoy.toml");
        std::fs::write(&decoy, "x = 1\n").unwrap();
        let link = work.path().join("switch.toml");
        std::os::unix::fs::symlink(&decoy, &link).unwrap();
        let (results, _) =
            turn_with(&llm, &client, "user", work.path(), vec![read("r", &link)]).await;
        assert!(!results[0].is_error, "{}", results[0].output);
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&crab_toml, &link).unwrap();
        let before = std::fs::read_to_string(&crab_toml).unwrap();
        let (results, _) = turn_with(
            &llm,
            &client,
            "user",
            work.path(),
            vec![edit("e", &link, "x = 1", "[bash]\nallow_gateway = true")],
        )
        .await;
        assert!(
            results[0].is_error
                && results[0]
                    .output
                    .contains("never open the daemon's own files"),
            "{}",
            results[0].output
        );
        assert_eq!(std::fs::read_to_string(&crab_toml).unwrap(), before);
    }

    // Files of the user's own are read and edited as ever, and skills and
    // Crab.md in the home are the user's to have agents write.
    let mine = work.path().join("mine.txt");
    std::fs::write(&mine, "alpha\n").unwrap();
    std::fs::write(home.join("Crab.md"), "be brief\n").unwrap();
    let (results, _) = turn_with(
        &llm,
        &client,
        "user",
        work.path(),
        vec![read("mine", &mine), read("crab_md", &home.join("Crab.md"))],
    )
    .await;
    assert!(!results[0].is_error && results[0].output.contains("alpha"));
    assert!(!results[1].is_error, "{}", results[1].output);
    let (results, _) = turn_with(
        &llm,
        &client,
        "user",
        work.path(),
        vec![edit("e", &mine, "alpha", "beta")],
    )
    .await;
    assert!(!results[0].is_error, "{}", results[0].output);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "beta\n");
}

#[tokio::test]
async fn which_senders_are_gateways_and_what_they_may_not_use_is_configuration() {
    let (llm, daemon) =
        setup("[gateway]\nsenders = [\"wx:\"]\ndeny_tools = [\"read\", \"recall\"]\n").await;
    let client = daemon.client().await;
    let work = tempfile::tempdir().unwrap();
    let mine = work.path().join("mine.txt");
    std::fs::write(&mine, "hello\n").unwrap();
    let (results, offered) = turn_with(
        &llm,
        &client,
        "wx:7",
        work.path(),
        vec![
            read("r", &mine),
            ToolCall::new("b", "bash", json!({"command": "echo shell"})),
        ],
    )
    .await;
    assert!(results[0].is_error && results[0].output.contains("wx:7"));
    assert!(
        !results[1].is_error,
        "bash is not denied here: {}",
        results[1].output
    );
    assert!(
        !offered.iter().any(|t| t == "recall" || t == "read"),
        "{offered:?}"
    );
    // tg: is nobody special in this configuration.
    let (results, _) = turn_with(&llm, &client, "tg:42", work.path(), vec![read("r", &mine)]).await;
    assert!(!results[0].is_error, "{}", results[0].output);

    // A blank prefix would make everyone a gateway: refused where written.
    let blank = tempfile::tempdir().unwrap();
    std::fs::write(
        blank.path().join("config.toml"),
        "[gateway]\nsenders = [\"tg:\", \"\"]\n",
    )
    .unwrap();
    let output = std::process::Command::new(daemon_binary())
        .args(["--home", &blank.path().display().to_string(), "check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("config.toml:2:1: [gateway] senders[1] is empty"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_task_delegated_for_a_gateway_sender_cannot_read_either() {
    let (llm, daemon) = setup("").await;
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    let config = daemon.path().join("config.toml");
    llm.push(Reply::tools(vec![ToolCall::new(
        "d1",
        "delegate",
        json!({"tasks": [{"agent": "worker", "message": "read the config"}]}),
    )]));
    llm.push(Reply::tools(vec![read("w1", &config)]));
    llm.push(Reply::text("refused"));
    llm.push(Reply::text("could not"));
    Turn::run(&client, message("crab", "tg:42", "have the worker read it")).await;
    let refused = crabtalk_testkit::within("the worker's read", async {
        use futures::StreamExt;
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.agent == "worker" && event.kind == AgentEventKind::ToolResult as i32 {
                return event;
            }
        }
    })
    .await;
    assert!(
        refused.tool_is_error && refused.tool_output.contains("tg:42"),
        "{}",
        refused.tool_output
    );
    assert!(!refused.tool_output.contains(SECRET_KEY));
}

#[tokio::test]
async fn a_gateway_sender_finds_only_its_own_conversations_and_notes() {
    let (llm, daemon) = setup("").await;
    let client = daemon.client().await;
    let work = tempfile::tempdir().unwrap();
    // The owner talks about a PIN and has the agent remember one.
    llm.push(Reply::text("noted"));
    Turn::run(&client, message("crab", "user", "my bank PIN is 4711")).await;
    let (results, _) = turn_with(
        &llm,
        &client,
        "user",
        work.path(),
        vec![ToolCall::new(
            "m",
            "remember",
            json!({"name": "bank", "content": "the owner's bank PIN is 4711"}),
        )],
    )
    .await;
    assert!(!results[0].is_error, "{}", results[0].output);
    // tg:42 has its own conversation about a PIN.
    llm.push(Reply::text("ok"));
    Turn::run(
        &client,
        message("crab", "tg:42", "remind me: my PIN is 1234"),
    )
    .await;

    let search = |id: &str, args: Value| ToolCall::new(id, "search_sessions", args);
    let (results, _) = turn_with(
        &llm,
        &client,
        "tg:42",
        work.path(),
        vec![
            search("own", json!({"query": "PIN"})),
            search("other", json!({"query": "PIN", "sender": "user"})),
            ToolCall::new("recall", "recall", json!({"query": "PIN bank"})),
            ToolCall::new(
                "remember",
                "remember",
                json!({"name": "bank", "content": "tg:42 banks at the corner, PIN 1234"}),
            ),
        ],
    )
    .await;
    let own = &results[0].output;
    assert!(!results[0].is_error && own.contains("1234"), "{own}");
    assert!(!own.contains("4711"), "{own}");
    assert!(
        results[1].is_error && results[1].output.contains("only searches"),
        "{}",
        results[1].output
    );
    let recalled = &results[2].output;
    assert!(!recalled.contains("4711"), "{recalled}");
    assert!(!results[3].is_error, "{}", results[3].output);

    let (results, _) = turn_with(
        &llm,
        &client,
        "tg:42",
        work.path(),
        vec![ToolCall::new(
            "recall",
            "recall",
            json!({"query": "PIN bank"}),
        )],
    )
    .await;
    let recalled = &results[0].output;
    assert!(
        recalled.contains("corner") && !recalled.contains("4711"),
        "{recalled}"
    );
    // The owner sees both notes.
    let (results, _) = turn_with(
        &llm,
        &client,
        "user",
        work.path(),
        vec![ToolCall::new(
            "recall",
            "recall",
            json!({"query": "PIN bank", "limit": 20}),
        )],
    )
    .await;
    let recalled = &results[0].output;
    assert!(
        recalled.contains("4711") && recalled.contains("corner"),
        "{recalled}"
    );
}
