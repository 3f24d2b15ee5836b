//! The MCP client against servers that misbehave, on the real daemon: real
//! rmcp servers (`examples/mcp_test_server.rs`, and one built in this file)
//! that crash, add tools, write to stderr, ignore stdin EOF, answer with
//! 20 MB or die; and what every call tells a server about its caller.

use std::path::Path;

use crabtalk_proto::Client;
use crabtalk_proto::ReplyStream;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, eventually, poll_until, within};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{HttpServer, alive, call_tools, offered_tools, test_server};

/// Declares the test server as `name` in `agent` with `env`.
async fn declare(client: &Client, agent: &str, name: &str, env: Value) -> McpInfo {
    let config = json!({"name": name, "command": test_server(), "env": env});
    client
        .upsert_mcp(UpsertMcpMsg {
            config: config.to_string(),
            agent: agent.into(),
        })
        .await
        .unwrap()
}

/// The server `name` as `ListMcps` shows it, once `ready` holds for it.
async fn listed(
    client: &Client,
    name: &str,
    what: &str,
    ready: impl Fn(&McpInfo) -> bool,
) -> McpInfo {
    poll_until(what, async || {
        let list = client.list_mcps(ListMcpsMsg::default()).await.unwrap();
        list.mcps
            .into_iter()
            .find(|info| info.name == name && ready(info))
    })
    .await
}

fn is_connected(info: &McpInfo) -> bool {
    info.status == McpStatus::Connected as i32
}

/// The tool names offered in the last model request.
fn offered(llm: &ScriptedLlm) -> Vec<String> {
    let requests = llm.requests();
    offered_tools(requests.last().expect("a model request"))
}

/// Pids the test server wrote to `dir`: its own, and `child-<pid>` ones.
fn pids(dir: &Path) -> (Vec<u32>, Vec<u32>) {
    let mut servers = Vec::new();
    let mut children = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        match name.strip_prefix("child-") {
            Some(pid) => children.push(pid.parse().unwrap()),
            None => servers.push(name.parse().unwrap()),
        }
    }
    (servers, children)
}

/// The next MCP event of one of `kinds` for `name`.
async fn next_event(
    events: &mut ReplyStream<McpEventMsg>,
    name: &str,
    kinds: &[McpEventKind],
) -> McpEventMsg {
    within(&format!("{kinds:?} of {name}"), async {
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.name == name && kinds.iter().any(|kind| event.kind == *kind as i32) {
                return event;
            }
        }
    })
    .await
}

/// Waits until `path` exists.
async fn file_appears(path: &Path) {
    let path = path.to_owned();
    eventually(&format!("{} to appear", path.display()), move || {
        path.exists()
    })
    .await;
}

// ─── tools/list_changed ─────────────────────────────────────────────────────

#[tokio::test]
async fn a_tool_a_server_adds_is_offered_after_it_says_so() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    declare(&client, "crab", "calc", json!({})).await;
    let before = listed(&client, "calc", "calc to connect", is_connected).await;
    assert!(
        !offered_after_turn(&llm, &client)
            .await
            .contains(&"calc__extra".to_owned())
    );

    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "grow"),
        vec![ToolCall::new("g", "calc__grow", json!({}))],
    )
    .await;
    assert_eq!(results[0].output, "grown");
    listed(&client, "calc", "the new tool to be listed", |info| {
        info.tool_count == before.tool_count + 1
    })
    .await;
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "use the new tool"),
        vec![ToolCall::new("e", "calc__extra", json!({}))],
    )
    .await;
    assert_eq!(
        (results[0].output.as_str(), results[0].is_error),
        ("extra is here", false)
    );
    assert!(offered(&llm).contains(&"calc__extra".to_owned()));
}

/// The tools offered to a plain turn of `crab`.
async fn offered_after_turn(llm: &ScriptedLlm, client: &Client) -> Vec<String> {
    llm.push(Reply::text("hello"));
    Turn::run(client, message("crab", "user", "hi")).await;
    offered(llm)
}

// ─── crash loops, stderr ────────────────────────────────────────────────────

#[tokio::test]
async fn a_server_that_crashes_after_each_start_is_restarted_ever_more_slowly() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm(
        "\n[mcp]\nrestart_backoff_ms = 100\nrestart_backoff_max_ms = 1600\n",
    )
    .await;
    let client = daemon.client().await;
    let mut events = client
        .subscribe_mcp_events(SubscribeMcpEventsMsg {})
        .await
        .unwrap();
    declare(
        &client,
        "crab",
        "flaky",
        json!({"MCP_TEST_CRASH_AFTER_MS": "300"}),
    )
    .await;
    // Whether a start ends in the handshake or after it, the pause grows:
    // it is not reset by a connection that lasted 0.3 s.
    let mut pauses = Vec::new();
    for _ in 0..5 {
        let event = next_event(
            &mut events,
            "flaky",
            &[McpEventKind::Disconnected, McpEventKind::Failed],
        )
        .await;
        pauses.push(event.retry_in_ms);
    }
    assert_eq!(pauses, [100, 200, 400, 800, 1600]);
    let info = listed(&client, "flaky", "five restarts", |info| info.restarts >= 4).await;
    assert_eq!(info.last_stderr, "fatal: crashing on purpose");
}

#[tokio::test]
async fn why_a_server_died_is_kept_from_its_stderr() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("\n[mcp]\nrestart_backoff_ms = 60000\n").await;
    let client = daemon.client().await;
    declare(
        &client,
        "crab",
        "broken",
        json!({
            "MCP_TEST_STDERR": "reading settings from /nowhere/settings.json",
            "MCP_TEST_CRASH_AFTER_MS": "0",
        }),
    )
    .await;
    let info = listed(&client, "broken", "the server to fail", |info| {
        info.status == McpStatus::Failed as i32 && !info.last_stderr.is_empty()
    })
    .await;
    assert_eq!(info.last_stderr, "fatal: crashing on purpose");
    assert!(
        info.error.contains("exit status: 3") && info.error.contains("fatal: crashing on purpose"),
        "{}",
        info.error
    );
    let log = daemon.log();
    assert!(
        log.contains("reading settings from /nowhere/settings.json")
            && log.contains("fatal: crashing on purpose"),
        "the stderr lines are logged:\n{log}"
    );
}

// ─── oversized replies ──────────────────────────────────────────────────────

#[tokio::test]
async fn a_reply_of_20_mb_fails_its_call_at_once_and_the_server_stays_usable() {
    // The call timeout is far beyond the test's patience: a call that waited
    // for it would fail the test.
    let (llm, daemon) = TestDaemon::on_scripted_llm("\n[mcp]\ncall_timeout_secs = 600\n").await;
    let client = daemon.client().await;
    declare(&client, "crab", "calc", json!({})).await;
    listed(&client, "calc", "calc to connect", is_connected).await;
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "say a lot"),
        vec![ToolCall::new(
            "h",
            "calc__huge",
            json!({"bytes": 20_000_000}),
        )],
    )
    .await;
    assert!(results[0].is_error);
    assert!(
        results[0].output.contains("reply too large (200000"),
        "{}",
        results[0].output
    );
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "add"),
        vec![ToolCall::new("a", "calc__add", json!({"a": 2, "b": 3}))],
    )
    .await;
    assert_eq!(results[0].output, "5");
}

// ─── a dead HTTP server ─────────────────────────────────────────────────────

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_dead_http_server_is_noticed_and_connected_again_when_it_is_back() {
    let (llm, daemon) = TestDaemon::on_scripted_llm(
        "\n[mcp]\nrestart_backoff_ms = 100\nrestart_backoff_max_ms = 500\n",
    )
    .await;
    let client = daemon.client().await;
    let scratch = tempfile::tempdir().unwrap();
    let port = free_port();
    let port_file = scratch.path().join("remote.port");
    let env = [("MCP_TEST_PORT", port.to_string())];
    let mut remote = HttpServer::start(&port_file, &env);
    file_appears(&port_file).await;
    let config = json!({"name": "remote", "url": format!("http://127.0.0.1:{port}/mcp")});
    client
        .upsert_mcp(UpsertMcpMsg {
            config: config.to_string(),
            agent: "crab".into(),
        })
        .await
        .unwrap();
    listed(&client, "remote", "remote to connect", is_connected).await;

    remote.kill();
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "add"),
        vec![ToolCall::new("a", "remote__add", json!({"a": 1, "b": 1}))],
    )
    .await;
    assert!(results[0].is_error, "{}", results[0].output);
    for type_name in ["::", "Transport [", "reqwest", "StreamableHttp"] {
        assert!(
            !results[0].output.contains(type_name),
            "no type names for the model: {}",
            results[0].output
        );
    }
    let info = listed(&client, "remote", "remote to be shown down", |info| {
        !is_connected(info)
    })
    .await;
    assert_eq!(info.tool_count, 0);
    assert!(!info.error.contains("::"), "{}", info.error);
    assert!(
        !offered_after_turn(&llm, &client)
            .await
            .iter()
            .any(|tool| tool.starts_with("remote__")),
        "a dead server's tools are not offered"
    );

    std::fs::remove_file(&port_file).unwrap();
    let _back = HttpServer::start(&port_file, &env);
    listed(
        &client,
        "remote",
        "remote to be connected again",
        is_connected,
    )
    .await;
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "add"),
        vec![ToolCall::new("b", "remote__add", json!({"a": 2, "b": 2}))],
    )
    .await;
    assert_eq!(results[0].output, "4");
}

// ─── names ──────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_servers_name_is_part_of_what_it_is() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let info = declare(&client, "crab", "calc", json!({})).await;
    assert_eq!(info.name, "calc");
    // The same command under a second name: its own server, answered at once.
    let info = declare(&client, "crab", "math", json!({})).await;
    assert_eq!(info.name, "math");
    listed(&client, "math", "math to connect", is_connected).await;
    listed(&client, "calc", "calc to connect", is_connected).await;

    // Renaming the only declaration takes effect: math__ tools, no calc__.
    let mut agent: Value = serde_json::from_str(
        &client
            .get_agent(GetAgentMsg {
                name: "crab".into(),
            })
            .await
            .unwrap()
            .config,
    )
    .unwrap();
    agent["mcps"] = json!([{"name": "sums", "command": test_server()}]);
    client
        .update_agent(UpdateAgentMsg {
            name: "crab".into(),
            config: agent.to_string(),
            prompt: String::new(),
        })
        .await
        .unwrap();
    listed(&client, "sums", "sums to connect", is_connected).await;
    let names: Vec<String> = client
        .list_mcps(ListMcpsMsg::default())
        .await
        .unwrap()
        .mcps
        .into_iter()
        .map(|info| info.name)
        .collect();
    assert_eq!(names, ["sums"]);
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "add"),
        vec![ToolCall::new("s", "sums__add", json!({"a": 20, "b": 22}))],
    )
    .await;
    assert_eq!(results[0].output, "42");
}

#[tokio::test]
async fn names_that_cannot_be_tool_prefixes_are_refused_everywhere() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    for bad in ["", "a__b", "my server", "calc_", &"x".repeat(25)] {
        let config = json!({"name": bad, "command": test_server()});
        let err = client
            .upsert_mcp(UpsertMcpMsg {
                config: config.to_string(),
                agent: "crab".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(400), "{bad:?}: {err}");
        assert!(err.to_string().contains("invalid MCP server name"), "{err}");
    }
    let twice = json!({"mcps": [
        {"name": "calc", "command": test_server()},
        {"name": "calc", "url": "http://127.0.0.1:9/mcp"},
    ]});
    let err = client
        .create_agent(CreateAgentMsg {
            name: "twins".into(),
            config: twice.to_string(),
            prompt: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(400), "{err}");
    assert!(
        err.to_string().contains("a second MCP server named"),
        "{err}"
    );

    // An agent file written by hand with an empty name is reported, not
    // loaded with tools named `__add`.
    std::fs::write(
        daemon.path().join("agents/hand.toml"),
        format!("[[mcps]]\nname = \"\"\ncommand = \"{}\"\n", test_server()),
    )
    .unwrap();
    // The reload says so to its caller, naming the file and the field.
    let refused = client.reload(ReloadMsg {}).await.unwrap_err();
    assert_eq!(refused.code(), Some(400), "{refused}");
    assert!(
        refused.to_string().contains("hand.toml") && refused.to_string().contains("mcps[0].name"),
        "{refused}"
    );
    let err = client
        .get_agent(GetAgentMsg {
            name: "hand".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
    let log = daemon.log();
    assert!(
        log.contains("hand.toml") && log.contains("mcps[0].name"),
        "the log names the file and the field:\n{log}"
    );
    assert!(
        client
            .list_mcps(ListMcpsMsg::default())
            .await
            .unwrap()
            .mcps
            .is_empty()
    );
}

#[tokio::test]
async fn a_component_hidden_by_an_agents_own_server_is_reported() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    declare(&client, "crab", "calc", json!({})).await;
    let port_file = daemon.path().join("run/calc.port");
    let _component = HttpServer::start(&port_file, &[]);
    poll_until("the component to be found", async || {
        let list = client.list_mcps(ListMcpsMsg::default()).await.unwrap();
        list.mcps
            .iter()
            .any(|info| info.source_kind == SourceKind::External as i32)
            .then_some(())
    })
    .await;
    let log = daemon.log();
    assert!(
        log.contains("agent crab declares its own MCP server named calc") && log.contains("hidden"),
        "{log}"
    );
}

// ─── shutdown ───────────────────────────────────────────────────────────────

#[tokio::test]
async fn stdio_servers_and_their_children_do_not_outlive_the_daemon() {
    let (_llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let pid_dir = tempfile::tempdir().unwrap();
    declare(
        &client,
        "crab",
        "stubborn",
        json!({
            "MCP_TEST_IGNORE_EOF": "1",
            "MCP_TEST_CHILD": "1",
            "MCP_TEST_PID_DIR": pid_dir.path().display().to_string(),
        }),
    )
    .await;
    listed(&client, "stubborn", "the server to connect", is_connected).await;
    let (servers, children) = pids(pid_dir.path());
    assert_eq!((servers.len(), children.len()), (1, 1));
    assert!(alive(servers[0]) && alive(children[0]));
    drop(client);

    let status = daemon.stop().await;
    assert!(status.success(), "{status}");
    eventually("the server and its child to be gone", || {
        !alive(servers[0]) && !alive(children[0])
    })
    .await;
    let log = daemon.log();
    let shutting_down = log.find("shutting down").expect("the shutdown is logged");
    assert!(
        !log[shutting_down..].contains("found component")
            && !log[shutting_down..].contains("MCP server stubborn connected"),
        "nothing connects during shutdown:\n{log}"
    );
}

#[tokio::test]
async fn an_undeclared_server_is_ended_with_its_children() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let pid_dir = tempfile::tempdir().unwrap();
    declare(
        &client,
        "crab",
        "stubborn",
        json!({
            "MCP_TEST_IGNORE_EOF": "1",
            "MCP_TEST_CHILD": "1",
            "MCP_TEST_PID_DIR": pid_dir.path().display().to_string(),
        }),
    )
    .await;
    listed(&client, "stubborn", "the server to connect", is_connected).await;
    let (servers, children) = pids(pid_dir.path());
    client
        .delete_mcp(DeleteMcpMsg {
            name: "stubborn".into(),
            agent: "crab".into(),
        })
        .await
        .unwrap();
    eventually("the server and its child to be gone", || {
        !alive(servers[0]) && !alive(children[0])
    })
    .await;
}

// ─── port files ─────────────────────────────────────────────────────────────

#[tokio::test]
async fn each_unusable_port_file_is_logged_once_per_change() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let run = daemon.path().join("run");
    let junk = run.join("junk.port");
    std::fs::write(&junk, "not a port\n").unwrap();
    let count = |needle: &str| daemon.log().matches(needle).count();
    eventually("the junk file to be reported", || {
        count("junk.port: not a port file") == 1
    })
    .await;
    // Another change in run/ makes the daemon look again; the unchanged
    // junk file is not reported again.
    std::fs::write(run.join("stale.port"), "4100\npid=4294967000\n").unwrap();
    eventually("the stale file to be reported", || {
        count("stale.port: its process 4294967000 is not running") == 1
    })
    .await;
    assert_eq!(count("junk.port: not a port file"), 1);
    // Changed, it is reported again.
    std::fs::write(&junk, "99999999\n").unwrap();
    eventually("the changed junk file to be reported again", || {
        count("junk.port: not a port file") == 2
    })
    .await;
}

// ─── who called: _meta and the trigger ─────────────────────────────────────

mod recorder {
    //! An MCP server in the test process that records the `_meta` of every
    //! call it gets.

    use std::sync::Arc;

    use parking_lot::Mutex;
    use rmcp::model::{JsonObject, RequestMetaObject};
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    #[derive(Clone, Default)]
    pub(super) struct Recorder {
        pub calls: Arc<Mutex<Vec<JsonObject>>>,
    }

    #[tool_router]
    impl Recorder {
        #[tool(description = "Take a note")]
        fn note(&self, meta: RequestMetaObject) -> String {
            self.calls.lock().push(meta.0.0);
            "noted".into()
        }
    }

    #[tool_handler]
    impl ServerHandler for Recorder {}

    impl Recorder {
        /// Serves on `127.0.0.1:0` at `/mcp`; returns the port.
        pub(super) async fn serve(&self) -> u16 {
            let recorder = self.clone();
            let service = StreamableHttpService::new(
                move || Ok(recorder.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let app = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            tokio::spawn(async move { axum::serve(listener, app).await });
            port
        }
    }
}

/// A recorder announced to the daemon as the component `recorder`.
async fn recorder_component(daemon: &TestDaemon) -> recorder::Recorder {
    let recorder = recorder::Recorder::default();
    let port = recorder.serve().await;
    crabtalk_home::PortFile::for_this_process(port)
        .write(&daemon.path().join("run/recorder.port"))
        .unwrap();
    recorder
}

fn triggered(agent: &str, sender: &str, content: &str, trigger: &str) -> StreamMsg {
    StreamMsg {
        trigger: Some(trigger.into()),
        ..message(agent, sender, content)
    }
}

#[tokio::test]
async fn every_tool_call_tells_the_server_who_called() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let recorder = recorder_component(&daemon).await;
    listed(&client, "recorder", "the recorder to connect", is_connected).await;

    // A direct call, in a turn the telegram component started for tg:42.
    call_tools(
        &llm,
        &client,
        triggered("crab", "tg:42", "note it", "telegram"),
        vec![ToolCall::new("n", "recorder__note", json!({}))],
    )
    .await;
    // A call from a task that turn delegates: its own agent and sender,
    // the chain's origin and trigger.
    llm.push(Reply::tools(vec![ToolCall::new(
        "d",
        "delegate",
        json!({"tasks": [{"agent": "worker", "message": "take a note"}]}),
    )]));
    llm.push(Reply::tools(vec![ToolCall::new(
        "w",
        "recorder__note",
        json!({}),
    )]));
    llm.push(Reply::text("noted"));
    llm.push(Reply::text("the worker noted it"));
    Turn::run(
        &client,
        triggered("crab", "tg:42", "delegate it", "telegram"),
    )
    .await;
    // And a call with no trigger.
    call_tools(
        &llm,
        &client,
        message("crab", "alice", "note it"),
        vec![ToolCall::new("p", "recorder__note", json!({}))],
    )
    .await;

    let calls = recorder.calls.lock().clone();
    assert_eq!(calls.len(), 3, "{calls:?}");
    let keys = |call: &serde_json::Map<String, Value>| {
        [
            "ai.crabtalk/agent",
            "ai.crabtalk/sender",
            "ai.crabtalk/origin",
            "ai.crabtalk/trigger",
            "ai.crabtalk/gateway",
        ]
        .map(|key| call.get(key).and_then(Value::as_str).map(str::to_owned))
    };
    let s = |text: &str| Some(text.to_owned());
    // tg:42 is a gateway sender (the default `[gateway] senders`): every
    // call of its chain says so, the delegated task's too.
    assert_eq!(
        keys(&calls[0]),
        [s("crab"), s("tg:42"), s("tg:42"), s("telegram"), s("tg:42")]
    );
    let [agent, sender, origin, trigger, gateway] = keys(&calls[1]);
    assert_eq!(agent, s("worker"));
    assert!(sender.unwrap().starts_with("delegate:"));
    assert_eq!(
        (origin, trigger, gateway),
        (s("tg:42"), s("telegram"), s("tg:42"))
    );
    assert_eq!(
        keys(&calls[2]),
        [s("crab"), s("alice"), s("alice"), None, None]
    );
}

#[tokio::test]
async fn a_turn_started_on_a_gateway_senders_behalf_is_a_gateway_chain() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let recorder = recorder_component(&daemon).await;
    listed(&client, "recorder", "the recorder to connect", is_connected).await;
    // A component (cron, say) starts a turn in its own conversation for
    // tg:42, who asked for it: the chain begins at tg:42.
    let mut request = triggered("crab", "cron", "note it", "cron");
    request.origin = Some("tg:42".into());
    call_tools(
        &llm,
        &client,
        request,
        vec![ToolCall::new("n", "recorder__note", json!({}))],
    )
    .await;
    let offered = offered(&llm);
    for denied in ["bash", "read", "edit"] {
        assert!(
            !offered.iter().any(|t| t == denied),
            "{denied}: {offered:?}"
        );
    }
    let calls = recorder.calls.lock().clone();
    assert_eq!(calls[0]["ai.crabtalk/origin"], "tg:42");
    assert_eq!(calls[0]["ai.crabtalk/gateway"], "tg:42");
    assert_eq!(calls[0]["ai.crabtalk/sender"], "cron");
    // An origin that is not a gateway sender lifts nothing from one that
    // is: tg:7's own turn stays a gateway chain.
    let mut request = triggered("crab", "tg:7", "note it", "cron");
    request.origin = Some("user".into());
    call_tools(
        &llm,
        &client,
        request,
        vec![ToolCall::new("m", "recorder__note", json!({}))],
    )
    .await;
    let calls = recorder.calls.lock().clone();
    assert_eq!(calls[1]["ai.crabtalk/gateway"], "tg:7");
}

#[tokio::test]
async fn a_turn_a_component_started_is_not_offered_that_components_tools() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let recorder = recorder_component(&daemon).await;
    listed(&client, "recorder", "the recorder to connect", is_connected).await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();

    let results = call_tools(
        &llm,
        &client,
        triggered("crab", "user", "schedule yourself", "recorder"),
        vec![ToolCall::new("n", "recorder__note", json!({}))],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("no tool named"),
        "{}",
        results[0].output
    );
    let requests = llm.requests();
    let first = requests[requests.len() - 2]["tools"].to_string();
    assert!(!first.contains("recorder__note"), "{first}");
    assert!(recorder.calls.lock().is_empty());
    let done = within("the turn's events", async {
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.kind == AgentEventKind::Done as i32 {
                return event;
            }
        }
    })
    .await;
    assert_eq!(done.trigger, "recorder");

    // A turn started by someone else is offered them.
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "note"),
        vec![ToolCall::new("m", "recorder__note", json!({}))],
    )
    .await;
    assert_eq!(results[0].output, "noted");
}

#[tokio::test]
async fn a_reply_of_20_mb_over_http_fails_its_call_and_keeps_the_connection() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("\n[mcp]\ncall_timeout_secs = 600\n").await;
    let client = daemon.client().await;
    let port_file = daemon.path().join("run/calc.port");
    let _component = HttpServer::start(&port_file, &[]);
    listed(&client, "calc", "the component to connect", is_connected).await;
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "say a lot"),
        vec![ToolCall::new(
            "h",
            "calc__huge",
            json!({"bytes": 20_000_000}),
        )],
    )
    .await;
    assert!(results[0].is_error);
    assert!(
        results[0]
            .output
            .contains("its reply was lost, though the server still answers"),
        "{}",
        results[0].output
    );
    let info = listed(&client, "calc", "calc", |_| true).await;
    assert!(is_connected(&info) && info.restarts == 0, "{info:?}");
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "add"),
        vec![ToolCall::new("a", "calc__add", json!({"a": 2, "b": 3}))],
    )
    .await;
    assert_eq!(results[0].output, "5");
}
