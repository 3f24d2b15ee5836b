//! MCP servers on the real daemon: real servers built with rmcp
//! (`examples/mcp_test_server.rs`), over stdio and streamable HTTP.

use std::path::Path;

use crabtalk_proto::Client;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, eventually, poll_until, within};
use futures::StreamExt;
use serde_json::json;

use crate::support::{HttpServer, alive, call_tools, test_server};

/// Creates `agent` declaring one stdio server named `calc` with `env`.
async fn agent_with_calc(client: &Client, agent: &str, env: serde_json::Value) {
    let config = json!({"mcps": [{"name": "calc", "command": test_server(), "env": env}]});
    client
        .create_agent(CreateAgentMsg {
            name: agent.into(),
            config: config.to_string(),
            prompt: String::new(),
        })
        .await
        .unwrap();
}

/// Waits until `agent` sees a connected server `name`.
async fn connected(client: &Client, agent: &str, name: &str) -> McpInfo {
    poll_until(&format!("{name} to connect"), async || {
        let list = client
            .list_mcps(ListMcpsMsg {
                agent: agent.into(),
            })
            .await
            .unwrap();
        list.mcps
            .into_iter()
            .find(|info| info.name == name && info.status == McpStatus::Connected as i32)
    })
    .await
}

/// Waits until no agent sees a server `name` any more.
async fn forgotten(client: &Client, name: &str) {
    poll_until(&format!("{name} to be forgotten"), async || {
        let list = client.list_mcps(ListMcpsMsg::default()).await.unwrap();
        (!list.mcps.iter().any(|info| info.name == name)).then_some(())
    })
    .await;
}

fn pids(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort();
    pids
}

/// Runs a turn of `agent` for `sender` in which the model makes `calls`;
/// the results in call order.
async fn call(
    llm: &ScriptedLlm,
    client: &Client,
    agent: &str,
    sender: &str,
    calls: Vec<ToolCall>,
) -> Vec<ToolResultEvent> {
    call_tools(llm, client, message(agent, sender, "use the tools"), calls).await
}

#[tokio::test]
async fn an_agents_stdio_server_gives_it_namespaced_tools() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    agent_with_calc(&client, "mathy", json!({})).await;
    let info = connected(&client, "mathy", "calc").await;
    assert_eq!(
        (info.tool_count, info.source_kind),
        (7, SourceKind::Local as i32)
    );
    assert!(info.source.contains("mathy"), "{}", info.source);

    let results = call(
        &llm,
        &client,
        "mathy",
        "user",
        vec![
            ToolCall::new("c1", "calc__add", json!({"a": 2, "b": 3})),
            ToolCall::new("c2", "calc__fail", json!({})),
        ],
    )
    .await;
    assert_eq!(
        (results[0].output.as_str(), results[0].is_error),
        ("5", false)
    );
    assert_eq!(
        (results[1].output.as_str(), results[1].is_error),
        ("it failed on purpose", true)
    );
    let offered = llm.requests()[0]["tools"].to_string();
    assert!(
        offered.contains("\"calc__add\"") && offered.contains("[calc] Add two numbers"),
        "{offered}"
    );

    // An agent that did not declare it has no such tool.
    let results = call(
        &llm,
        &client,
        "crab",
        "user",
        vec![ToolCall::new("c3", "calc__add", json!({"a": 1, "b": 1}))],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("no tool named"),
        "{}",
        results[0].output
    );
}

#[tokio::test]
async fn identical_declarations_share_one_process_and_the_last_owner_closes_it() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let pid_dir = tempfile::tempdir().unwrap();
    let env = json!({"MCP_TEST_PID_DIR": pid_dir.path().display().to_string()});
    agent_with_calc(&client, "a", env.clone()).await;
    agent_with_calc(&client, "b", env.clone()).await;
    connected(&client, "a", "calc").await;
    connected(&client, "b", "calc").await;
    assert_eq!(pids(pid_dir.path()).len(), 1, "one process for both agents");
    let listed = client.list_mcps(ListMcpsMsg::default()).await.unwrap().mcps;
    assert_eq!(listed.len(), 1);
    assert!(listed[0].source.contains("a, b"), "{}", listed[0].source);
    assert!(listed[0].env.values().all(|value| value == "<redacted>"));

    // A different environment is a different server.
    agent_with_calc(
        &client,
        "c",
        json!({"MCP_TEST_PID_DIR": pid_dir.path().display().to_string(), "MCP_TEST_NAME": "other"}),
    )
    .await;
    connected(&client, "c", "calc").await;
    let first_two = pids(pid_dir.path());
    assert_eq!(first_two.len(), 2);
    let whoami = |agent: &'static str| {
        let (llm, client) = (&llm, &client);
        async move {
            call(
                llm,
                client,
                agent,
                "user",
                vec![ToolCall::new("w", "calc__whoami", json!({}))],
            )
            .await[0]
                .output
                .clone()
        }
    };
    assert_eq!(whoami("a").await, whoami("b").await);
    assert!(whoami("c").await.ends_with("name=other"));

    // The shared process lives while one owner is left.
    let shared: u32 = whoami("a")
        .await
        .trim_start_matches("pid=")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    client
        .delete_agent(DeleteAgentMsg { name: "a".into() })
        .await
        .unwrap();
    assert!(alive(shared));
    client
        .delete_mcp(DeleteMcpMsg {
            name: "calc".into(),
            agent: "b".into(),
        })
        .await
        .unwrap();
    eventually("the undeclared server's process to exit", || !alive(shared)).await;
}

#[tokio::test]
async fn a_slow_server_times_out_without_holding_up_other_conversations() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("\n[mcp]\ncall_timeout_secs = 1\n").await;
    let client = daemon.client().await;
    agent_with_calc(&client, "mathy", json!({})).await;
    connected(&client, "mathy", "calc").await;

    llm.push(Reply::tools(vec![ToolCall::new(
        "s",
        "calc__slow",
        json!({"secs": 30}),
    )]));
    let mut slow = client
        .stream(message("mathy", "slow-user", "take your time"))
        .await
        .unwrap();
    let mut slow_turn = Turn::default();
    slow_turn
        .read_until(&mut slow, |e| {
            matches!(e, stream_event::Event::ToolStart(_))
        })
        .await;
    // Meanwhile, another conversation of the same agent gets its answer.
    llm.push(Reply::text("quick answer"));
    let quick = Turn::run(&client, message("mathy", "quick-user", "quick")).await;
    assert_eq!(quick.text(), "quick answer");
    llm.push(Reply::text("gave up"));
    slow_turn.read_until(&mut slow, |_| false).await;
    let result = &slow_turn.tool_results()[0];
    assert!(
        result.is_error && result.output.contains("did not answer within 1 s"),
        "{}",
        result.output
    );
}

#[tokio::test]
async fn lifecycle_events_are_published_and_a_dead_server_is_reconnected() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let mut events = client
        .subscribe_mcp_events(SubscribeMcpEventsMsg {})
        .await
        .unwrap();
    let pid_dir = tempfile::tempdir().unwrap();
    agent_with_calc(
        &client,
        "mathy",
        json!({"MCP_TEST_PID_DIR": pid_dir.path().display().to_string()}),
    )
    .await;
    next(&mut events, McpEventKind::Connecting).await;
    let up = next(&mut events, McpEventKind::Connected).await;
    assert_eq!(up.name, "calc");
    assert!(up.tools.contains(&"add".to_owned()), "{:?}", up.tools);
    assert_eq!(up.agent, "mathy");

    let pid = pids(pid_dir.path())[0];
    // SAFETY: killing the test server, a process this test made the daemon start.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    next(&mut events, McpEventKind::Disconnected).await;
    next(&mut events, McpEventKind::Connected).await;
    assert_eq!(pids(pid_dir.path()).len(), 2, "a new process was started");
}

/// The next event of `kind`.
async fn next(
    events: &mut crabtalk_proto::ReplyStream<McpEventMsg>,
    kind: McpEventKind,
) -> McpEventMsg {
    within(&format!("{kind:?}"), async {
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.kind == kind as i32 {
                return event;
            }
        }
    })
    .await
}

#[tokio::test]
async fn components_are_discovered_from_their_port_files() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let port_file = daemon.path().join("run").join("calc.port");
    let component = HttpServer::start(&port_file, &[]);
    let info = connected(&client, "crab", "calc").await;
    assert_eq!(info.source_kind, SourceKind::External as i32);
    assert!(
        info.url.starts_with("http://127.0.0.1:") && info.url.ends_with("/mcp"),
        "{}",
        info.url
    );

    let results = call(
        &llm,
        &client,
        "crab",
        "user",
        vec![ToolCall::new("c", "calc__add", json!({"a": 20, "b": 22}))],
    )
    .await;
    assert_eq!(results[0].output, "42");

    drop(component);
    std::fs::remove_file(&port_file).unwrap();
    forgotten(&client, "calc").await;
}

/// A component killed with -9 leaves its port file behind; the daemon
/// still forgets it at once (it holds a pidfd of the process the file
/// names), not at the next rescan of `run/` 30 s later.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_component_killed_without_removing_its_port_file_is_forgotten_at_once() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let port_file = daemon.path().join("run").join("calc.port");
    let mut component = HttpServer::start(&port_file, &[]);
    connected(&client, "crab", "calc").await;
    // Killed and not reaped (as when its parent is slow to): a zombie.
    component.kill_unreaped();
    assert!(port_file.exists(), "the killed component's file stays");
    // Well inside the 30 s rescan: only the exit itself can have told.
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while client
            .list_mcps(ListMcpsMsg::default())
            .await
            .unwrap()
            .mcps
            .iter()
            .any(|info| info.name == "calc")
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the killed component forgotten within 10 s");
}

#[tokio::test]
async fn servers_are_managed_through_the_protocol() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let config = json!({"name": "calc", "command": test_server(), "env": {"SECRET": "hunter2"}});
    let info = client
        .upsert_mcp(UpsertMcpMsg {
            config: config.to_string(),
            agent: "crab".into(),
        })
        .await
        .unwrap();
    assert_eq!(info.name, "calc");
    assert_eq!(
        info.env.get("SECRET").map(String::as_str),
        Some("<redacted>")
    );
    let toml = std::fs::read_to_string(daemon.path().join("agents/crab.toml")).unwrap();
    assert!(
        toml.contains("[[mcps]]") && toml.contains("name = \"calc\""),
        "{toml}"
    );
    connected(&client, "crab", "calc").await;

    for bad in [
        "{not json",
        r#"{"name": "x"}"#,
        r#"{"name": "", "command": "x"}"#,
    ] {
        let err = client
            .upsert_mcp(UpsertMcpMsg {
                config: bad.into(),
                agent: "crab".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(400), "{bad}: {err}");
    }
    // A misspelt key is refused with the key it most likely meant, not
    // dropped: the server would start without its arguments.
    let err = client
        .upsert_mcp(UpsertMcpMsg {
            config: json!({"name": "calc", "command": test_server(), "agrs": ["-v"]}).to_string(),
            agent: "crab".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(400), "{err}");
    assert!(
        err.to_string()
            .contains("unknown key `agrs`; did you mean `args`?"),
        "{err}"
    );
    let err = client
        .delete_mcp(DeleteMcpMsg {
            name: "nope".into(),
            agent: "crab".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
    client
        .delete_mcp(DeleteMcpMsg {
            name: "calc".into(),
            agent: "crab".into(),
        })
        .await
        .unwrap();
    let toml = std::fs::read_to_string(daemon.path().join("agents/crab.toml")).unwrap();
    assert!(!toml.contains("calc"), "{toml}");
    poll_until("the server to close", async || {
        let list = client.list_mcps(ListMcpsMsg::default()).await.unwrap();
        list.mcps.is_empty().then_some(())
    })
    .await;
}

/// The names of the tools the model was offered in request `n`.
fn offered(llm: &ScriptedLlm, n: usize) -> Vec<String> {
    let requests = llm.requests();
    let tools = requests[n]["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A conversation keeps its tools from one turn to the next (RFC 0025);
/// whatever they are built from changing between two turns (a component
/// coming and going, the agent's config) shows in the next turn's tools.
#[tokio::test]
async fn a_conversations_tools_follow_components_and_its_agent_between_turns() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.set_default(Reply::text("ok"));
    let client = daemon.client().await;
    let say = async |n: usize| {
        Turn::run(&client, message("crab", "user", "hello")).await;
        offered(&llm, n)
    };

    let first = say(0).await;
    assert!(first.contains(&"bash".to_owned()), "{first:?}");
    assert!(
        !first.iter().any(|name| name.starts_with("calc__")),
        "{first:?}"
    );
    assert_eq!(say(1).await, first, "nothing changed, nothing differs");

    let port_file = daemon.path().join("run").join("calc.port");
    let component = HttpServer::start(&port_file, &[]);
    connected(&client, "crab", "calc").await;
    let with_component = say(2).await;
    assert!(
        with_component.contains(&"calc__add".to_owned()),
        "{with_component:?}"
    );

    drop(component);
    std::fs::remove_file(&port_file).unwrap();
    forgotten(&client, "calc").await;
    assert_eq!(say(3).await, first, "the component's tools are gone");

    client
        .update_agent(UpdateAgentMsg {
            name: "crab".into(),
            config: json!({"bash": {"disabled": true}}).to_string(),
            prompt: String::new(),
        })
        .await
        .unwrap();
    let without_bash = say(4).await;
    assert!(
        !without_bash.contains(&"bash".to_owned()),
        "{without_bash:?}"
    );
    assert_eq!(without_bash.len(), first.len() - 1, "{without_bash:?}");
}
