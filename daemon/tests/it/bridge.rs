//! `crabtalkd mcp` (RFC 0022) end to end: the real binary as an MCP host
//! runs it, against a real daemon and the scripted model — with an rmcp
//! client over the bridge's stdio, the official MCP Python SDK's client
//! and the MCP inspector's CLI (the last two skipped, with the reason,
//! where the machine lacks them; see `crabtalk_testkit::mcp_host`).

use crabtalk_proto::msg::{ListConversationsMsg, RecallMsg};
use crabtalk_testkit::bridge::{BridgeProcess, HostEvent, TestHost, text_of};
use crabtalk_testkit::mcp_host::{Inspector, PythonHost};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary};
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

use crate::support::HttpServer;

/// A result's structured content.
fn structured(result: &rmcp::model::CallToolResult) -> Value {
    serde_json::to_value(result).unwrap()["structuredContent"].clone()
}

/// The own tools, and the hints each must carry.
const OWN_TOOLS: [&str; 6] = [
    "ask_agent",
    "list_agents",
    "list_conversations",
    "search_sessions",
    "recall",
    "remember",
];

/// Every tool has a title and states all three hints.
fn assert_every_tool_says_what_it_may_do(tools: &[rmcp::model::Tool]) {
    for tool in tools {
        assert!(
            tool.title.as_deref().is_some_and(|t| !t.is_empty()),
            "{tool:?}"
        );
        let hints = tool
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{tool:?}"));
        assert!(
            hints.read_only_hint.is_some()
                && hints.destructive_hint.is_some()
                && hints.open_world_hint.is_some(),
            "{tool:?}"
        );
    }
}

#[tokio::test]
async fn a_host_meets_crabtalk_and_its_tools_with_their_hints() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let bridge = BridgeProcess::for_daemon(&daemon, TestHost::new()).await;
    let info = bridge.client.peer().peer_info().expect("the server's info");
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!(server.name, "crabtalk");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_06_18);
    assert!(info.capabilities.tools.as_ref().unwrap().list_changed == Some(true));

    let tools = bridge.tools().await;
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names, OWN_TOOLS,
        "no component runs: only the bridge's own tools"
    );
    assert_every_tool_says_what_it_may_do(&tools);
    let hints = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        let hints = tool.annotations.clone().unwrap();
        (
            hints.read_only_hint.unwrap(),
            hints.destructive_hint.unwrap(),
            hints.open_world_hint.unwrap(),
        )
    };
    assert_eq!(hints("ask_agent"), (false, true, true));
    assert_eq!(hints("recall"), (true, false, false));
    assert_eq!(hints("remember"), (false, true, false));

    // The newest version with a handshake is spoken too; a newer one the
    // bridge does not speak is answered with its own newest.
    let newest = BridgeProcess::for_daemon(
        &daemon,
        TestHost::new().speaking(ProtocolVersion::V_2025_11_25),
    )
    .await;
    assert_eq!(
        newest.client.peer().peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    // The bridge is no second daemon: it took no lock and wrote nothing.
    let run: Vec<String> = std::fs::read_dir(daemon.home().run_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        run.iter()
            .all(|name| !name.contains("bridge") && !name.starts_with("mcp")),
        "{run:?}"
    );
}

#[tokio::test]
async fn ask_agent_reports_progress_while_the_turn_runs_and_a_cancel_kills_it() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let host = TestHost::new();
    let bridge = BridgeProcess::for_daemon(&daemon, host.clone()).await;

    // The model starts answering, then says nothing more: the call stays
    // open, and the text it has seen so far reaches the host meanwhile.
    llm.push(Reply::Stall("half a thought".into()));
    let call = bridge
        .start_call("ask_agent", json!({"message": "think about it"}))
        .await;
    let token = BridgeProcess::token_of(&call);
    bridge
        .wait_for("progress with the text so far", |events| {
            let text: String = events
                .iter()
                .filter_map(|event| match event {
                    HostEvent::Progress {
                        token: of, message, ..
                    } if *of == token => Some(message.as_str()),
                    _ => None,
                })
                .collect();
            text.contains("half a thought")
        })
        .await;
    // Progress counts up.
    let counts: Vec<f64> = host
        .events()
        .iter()
        .filter_map(|event| match event {
            HostEvent::Progress { progress, .. } => Some(*progress),
            _ => None,
        })
        .collect();
    assert!(
        counts.windows(2).all(|pair| pair[0] < pair[1]),
        "{counts:?}"
    );

    call.cancel(Some("the user pressed stop".into()))
        .await
        .unwrap();
    // Killed on the daemon: the model's stream is dropped...
    llm.wait_for_aborted_streams(1).await;
    // ...and the conversation takes the next message at once.
    llm.push(Reply::text("fresh start"));
    let next = bridge.call("ask_agent", json!({"message": "again"})).await;
    assert_eq!(text_of(&next), "fresh start", "{}", bridge.log());
    assert_ne!(next.is_error, Some(true));
}

#[tokio::test]
async fn ask_agent_reports_each_tool_and_answers_with_the_final_text() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let host = TestHost::new();
    let bridge = BridgeProcess::for_daemon(&daemon, host.clone()).await;
    llm.push(Reply::Tools {
        text: "Let me note that.".into(),
        calls: vec![ToolCall::new(
            "m1",
            "remember",
            json!({"name": "editor", "content": "helix"}),
        )],
    });
    llm.push(Reply::text("Noted: you use helix."));
    let call = bridge
        .start_call(
            "ask_agent",
            json!({"agent": "crab", "message": "I use helix", "conversation": "work"}),
        )
        .await;
    let token = BridgeProcess::token_of(&call);
    let result = bridge.finish_call(call).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        text_of(&result),
        "Noted: you use helix.",
        "the reply is what follows the last tool call"
    );
    let progress = host.progress(&token);
    assert!(
        progress
            .iter()
            .any(|m| m.starts_with("calling remember") && m.contains("helix")),
        "{progress:?}"
    );
    assert!(
        progress.iter().any(|m| m.starts_with("remember done")),
        "{progress:?}"
    );
    let said: String = progress.concat();
    assert!(said.contains("Let me note that.") && said.contains("Noted: you use helix."));

    // The turn was in crab's conversation with the sender `work`.
    let client = daemon.client().await;
    let list = client
        .list_conversations(ListConversationsMsg {
            agent: "crab".into(),
            sender: "work".into(),
        })
        .await
        .unwrap();
    assert_eq!(list.conversations.len(), 1);

    // An unknown agent is named, with the agents there are.
    let result = bridge
        .call("ask_agent", json!({"agent": "nobody", "message": "hi"}))
        .await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        text_of(&result).contains("no agent \"nobody\"") && text_of(&result).contains("crab"),
        "{}",
        text_of(&result)
    );
    // Bad arguments are refused before anything reaches the daemon.
    let before = llm.requests().len();
    let result = bridge
        .call("ask_agent", json!({"message": "hi", "model": "gpt"}))
        .await;
    assert!(
        result.is_error == Some(true) && text_of(&result).contains("unknown field `model`"),
        "{}",
        text_of(&result)
    );
    assert_eq!(llm.requests().len(), before);
}

/// The model asks the user through `ask_user`; the scripted model then
/// says what its second request held as the answer.
fn script_a_question(llm: &ScriptedLlm) {
    llm.push(Reply::tools(vec![ToolCall::new(
        "q1",
        "ask_user",
        json!({"questions": [{
            "question": "Which colour should the button be?",
            "header": "Colour",
            "options": [{"label": "red"}, {"label": "blue"}]
        }]}),
    )]));
    llm.push(Reply::text("Done."));
}

/// The content of the tool result the model got in its `n`th request.
fn tool_answer(llm: &ScriptedLlm, n: usize) -> String {
    llm.requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_agents_question_is_put_to_a_host_that_can_ask() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let host = TestHost::answering(json!({"answer_1": "blue"}));
    let bridge = BridgeProcess::for_daemon(&daemon, host.clone()).await;
    script_a_question(&llm);
    let result = bridge
        .call("ask_agent", json!({"message": "make a button"}))
        .await;
    assert_eq!(text_of(&result), "Done.", "{}", bridge.log());
    let asked = host
        .events()
        .into_iter()
        .find_map(|event| match event {
            HostEvent::Asked { message, schema } => Some((message, schema)),
            _ => None,
        })
        .expect("an elicitation");
    assert_eq!(asked.0, "crab asks: Which colour should the button be?");
    assert_eq!(
        asked.1["properties"]["answer_1"]["enum"],
        json!(["red", "blue"])
    );
    assert_eq!(tool_answer(&llm, 1), "blue");
}

#[tokio::test]
async fn a_host_that_cannot_ask_gets_the_question_in_the_result() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let bridge = BridgeProcess::for_daemon(&daemon, TestHost::new()).await;
    script_a_question(&llm);
    let result = bridge
        .call("ask_agent", json!({"message": "make a button"}))
        .await;
    let text = text_of(&result);
    assert!(text.starts_with("Done."), "{text}");
    assert!(
        text.contains("crab asked, and nobody could answer")
            && text.contains("- Which colour should the button be? (one of: red, blue)")
            && text.contains("conversation (mcp)"),
        "{text}"
    );
    assert!(
        tool_answer(&llm, 1).starts_with("nobody can answer now"),
        "{}",
        tool_answer(&llm, 1)
    );
}

#[tokio::test]
async fn memory_conversations_and_agents_through_the_bridge() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let bridge = BridgeProcess::for_daemon(&daemon, TestHost::new()).await;
    let saved = bridge
        .call(
            "remember",
            json!({"name": "deploy", "content": "make release, then tag", "aliases": ["ship"]}),
        )
        .await;
    assert_eq!(
        structured(&saved),
        json!({"agent": "crab", "name": "deploy", "updated": false})
    );
    // Saved in the daemon's memory of crab, where its agent finds it.
    let client = daemon.client().await;
    let found = client
        .recall(RecallMsg {
            agent: "crab".into(),
            query: "tag".into(),
            limit: None,
        })
        .await
        .unwrap();
    assert_eq!(found.entries[0].name, "deploy");
    let recalled = bridge
        .call("recall", json!({"query": "release", "agent": "crab"}))
        .await;
    let entries = structured(&recalled)["entries"].clone();
    assert_eq!(entries[0]["name"], "deploy");
    assert_eq!(entries[0]["aliases"], json!(["ship"]));
    assert!(text_of(&recalled).contains("make release, then tag"));

    let agents = bridge.call("list_agents", json!({})).await;
    assert_eq!(structured(&agents)["agents"][0]["name"], "crab");

    llm.push(Reply::text("the weather in Lisbon is mild"));
    bridge
        .call("ask_agent", json!({"message": "weather in Lisbon?"}))
        .await;
    let conversations = bridge.call("list_conversations", json!({})).await;
    let listed = structured(&conversations)["conversations"].clone();
    assert_eq!(listed[0]["conversation"], "mcp");
    assert_eq!(listed[0]["messages"], 2);
    let hits = crabtalk_testkit::poll_until("the session index", async || {
        let found = bridge
            .call("search_sessions", json!({"query": "Lisbon"}))
            .await;
        let matches = structured(&found)["matches"].clone();
        matches
            .as_array()
            .is_some_and(|m| !m.is_empty())
            .then_some(matches)
    })
    .await;
    assert_eq!(hits[0]["conversation"], "mcp");

    let refused = bridge
        .call("recall", json!({"query": "x", "agent": "nobody"}))
        .await;
    assert!(
        refused.is_error == Some(true) && text_of(&refused).contains("nobody"),
        "{}",
        text_of(&refused)
    );
}

#[tokio::test]
async fn without_a_daemon_a_call_says_how_to_start_it_and_the_bridge_waits_for_none() {
    let llm = ScriptedLlm::start().await;
    let mut daemon =
        TestDaemon::unstarted(daemon_binary(), &TestDaemon::config_for(&llm.base_url()));
    let bridge = BridgeProcess::for_daemon(&daemon, TestHost::new()).await;
    let result = bridge.call("list_agents", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        text_of(&result).contains("crabtalkd is not running")
            && text_of(&result).contains("crabup daemon start"),
        "{}",
        text_of(&result)
    );
    // The bridge holds nothing of the daemon's: the daemon starts under
    // it, and the next call reaches it.
    daemon.spawn().await;
    let result = bridge.call("list_agents", json!({})).await;
    assert_eq!(structured(&result)["agents"][0]["name"], "crab");
    // Closing stdin ends the bridge cleanly.
    assert!(bridge.close().await.success());
}

#[tokio::test]
async fn components_tools_come_and_go_under_their_own_names() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let host = TestHost::new();
    let bridge = BridgeProcess::for_daemon(&daemon, host.clone()).await;
    let port_file = daemon.path().join("run").join("calc.port");
    let component = HttpServer::start(&port_file, &[]);
    bridge
        .wait_for("the tool list to change", |events| {
            events.contains(&HostEvent::ToolsChanged)
        })
        .await;
    let tools = bridge.tools().await;
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(
        names.contains(&"add") && names.contains(&"caller"),
        "{names:?}"
    );
    assert_every_tool_says_what_it_may_do(&tools);

    let sum = bridge.call("add", json!({"a": 20, "b": 22})).await;
    assert_eq!(text_of(&sum), "42");
    // Who called: the default agent's `mcp` conversation.
    let caller = bridge.call("caller", json!({})).await;
    let meta: Value = serde_json::from_str(&text_of(&caller)).unwrap();
    assert_eq!(meta["ai.crabtalk/agent"], "crab");
    assert_eq!(meta["ai.crabtalk/sender"], "mcp");
    // The component's own error stays an error.
    let failed = bridge.call("fail", json!({})).await;
    assert_eq!(failed.is_error, Some(true));

    drop(component);
    std::fs::remove_file(&port_file).unwrap();
    bridge
        .wait_for("the tool list to change again", |events| {
            events
                .iter()
                .filter(|event| **event == HostEvent::ToolsChanged)
                .count()
                >= 2
        })
        .await;
    let names: Vec<String> = bridge
        .tools()
        .await
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, OWN_TOOLS);
    let gone = bridge
        .client
        .call_tool(rmcp::model::CallToolRequestParams::new("add"))
        .await;
    assert!(
        gone.as_ref()
            .is_err_and(|err| err.to_string().contains("no running crabtalk component")),
        "{gone:?}"
    );
}

/// A host that lists the tools once, right after the handshake, and
/// never follows `notifications/tools/list_changed` still sees the tools
/// of a component that was running when the bridge started.
#[tokio::test]
async fn a_component_running_at_start_is_in_the_first_tool_list() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let port_file = daemon.path().join("run").join("calc.port");
    let _component = HttpServer::start(&port_file, &[]);
    crabtalk_testkit::eventually("calc's port file", || port_file.exists()).await;
    let bridge = BridgeProcess::for_daemon(&daemon, TestHost::new()).await;
    let names: Vec<String> = bridge
        .tools()
        .await
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert!(names.iter().any(|name| name == "add"), "{names:?}");
    let sum = bridge.call("add", json!({"a": 1, "b": 2})).await;
    assert_eq!(text_of(&sum), "3");
}

/// A component that takes the connection and never answers does not hold
/// the host's first tool list for the whole `[mcp] connect_timeout_secs`.
#[tokio::test]
async fn a_component_that_never_answers_does_not_hold_the_first_tool_list() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("\n[mcp]\nconnect_timeout_secs = 600\n").await;
    // Accepts connections (the kernel does, from the backlog) and never
    // reads or answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    crabtalk_home::PortFile {
        port: silent.local_addr().unwrap().port(),
        pid: Some(std::process::id()),
        started_at: None,
    }
    .write(&daemon.path().join("run").join("silent.port"))
    .unwrap();
    let bridge = BridgeProcess::for_daemon(&daemon, TestHost::new()).await;
    let names: Vec<String> = bridge
        .tools()
        .await
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, OWN_TOOLS);
    drop(silent);
}

#[tokio::test]
async fn the_python_sdk_asks_an_agent_and_sees_progress_before_the_result() {
    let Some(python) = PythonHost::find("the_python_sdk_asks_an_agent") else {
        return;
    };
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let reply = "Crabs walk sideways because their legs bend outwards. ".repeat(8);
    llm.push(Reply::Text(reply.clone()));
    let seen = python
        .run(
            "ask",
            &daemon_binary(),
            daemon.path(),
            &["--message", "why do crabs walk sideways?"],
        )
        .await;
    assert_eq!(seen["server"]["name"], "crabtalk", "{seen}");
    let tools = seen["tools"].as_array().unwrap();
    assert!(tools.iter().all(|tool| {
        tool["title"].is_string()
            && tool["annotations"]["readOnlyHint"].is_boolean()
            && tool["annotations"]["destructiveHint"].is_boolean()
            && tool["annotations"]["openWorldHint"].is_boolean()
    }));
    let result = &seen["result"];
    assert_eq!(result["isError"], false, "{seen}");
    assert_eq!(result["text"], reply.trim());
    let progress = seen["progress"].as_array().unwrap();
    assert!(progress.len() >= 2, "{seen}");
    let at = result["at"].as_f64().unwrap();
    assert!(
        progress.iter().all(|p| p["at"].as_f64().unwrap() <= at),
        "every progress notification came before the result: {seen}"
    );
    let said: String = progress
        .iter()
        .map(|p| p["message"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(said, reply);
}

#[tokio::test]
async fn the_python_sdk_cancels_a_turn_and_the_conversation_goes_on() {
    let Some(python) = PythonHost::find("the_python_sdk_cancels_a_turn") else {
        return;
    };
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::Stall("half a thought".into()));
    llm.push(Reply::text("after the cancel"));
    let seen = python
        .run(
            "cancel",
            &daemon_binary(),
            daemon.path(),
            &[
                "--message",
                "think it over",
                "--until",
                "thought",
                "--then",
                "start again",
            ],
        )
        .await;
    assert_eq!(seen["pending_when_progress_arrived"], true, "{seen}");
    assert!(seen["first_result"].is_null(), "{seen}");
    assert_eq!(seen["second"]["text"], "after the cancel", "{seen}");
    assert_eq!(llm.aborted_streams(), 1, "the stalled turn was killed");
}

#[tokio::test]
async fn the_mcp_inspector_lists_the_tools_and_asks_an_agent() {
    let test = "the_mcp_inspector_lists_the_tools_and_asks_an_agent";
    let Some(inspector) = Inspector::find(test) else {
        return;
    };
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let Some(listed) = inspector
        .run(
            test,
            &daemon_binary(),
            daemon.path(),
            &["--method", "tools/list"],
        )
        .await
    else {
        return;
    };
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, OWN_TOOLS);
    llm.push(Reply::text("hello from crab"));
    let Some(called) = inspector
        .run(
            test,
            &daemon_binary(),
            daemon.path(),
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "ask_agent",
                "--tool-arg",
                "message=hi",
            ],
        )
        .await
    else {
        return;
    };
    assert_eq!(called["content"][0]["text"], "hello from crab", "{called}");
    assert_ne!(called["isError"], true);
}
