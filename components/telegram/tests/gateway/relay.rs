//! Replies of turns others start for `tg:` conversations, and the MCP
//! tools.

use crabtalk_proto::msg::{ListMcpsMsg, McpStatus, StreamMsg};
use crabtalk_testkit::turn::Turn;
use crabtalk_testkit::{Reply, ToolCall};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use crate::support::{Setup, alice};

fn other_client_turn(sender: &str, content: &str, trigger: Option<&str>) -> StreamMsg {
    StreamMsg {
        agent: String::new(),
        content: content.into(),
        sender: Some(sender.into()),
        trigger: trigger.map(str::to_owned),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_another_client_starts_is_relayed_once_also_after_a_daemon_restart() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.log_says("following the daemon's events").await;
    let chat = alice().id;
    setup.llm.push(Reply::text("scheduled news"));
    let client = setup.daemon.client().await;
    Turn::run(
        &client,
        other_client_turn("tg:111", "news please", Some("cron")),
    )
    .await;
    setup.api.wait_for_text(chat, "scheduled news").await;
    // A silent reply and a turn for someone not allowed are not sent.
    setup.llm.push(Reply::text("[SILENT]"));
    Turn::run(&client, other_client_turn("tg:111", "anything?", None)).await;
    setup.llm.push(Reply::text("for a stranger"));
    Turn::run(&client, other_client_turn("tg:666", "x", None)).await;
    drop(client);

    let followed = setup.log().matches("following the daemon's events").count();
    setup.daemon.restart().await;
    crabtalk_testkit::eventually("the relay to follow the new daemon", || {
        setup.log().matches("following the daemon's events").count() > followed
    })
    .await;
    setup.llm.push(Reply::text("after the restart"));
    let client = setup.daemon.client().await;
    Turn::run(&client, other_client_turn("tg:111", "again", None)).await;
    setup.api.wait_for_text(chat, "after the restart").await;
    // Once each: let the relay settle, then count.
    setup.llm.push(Reply::text("marker"));
    Turn::run(&client, other_client_turn("tg:111", "marker", None)).await;
    setup.api.wait_for_text(chat, "marker").await;
    let texts: Vec<String> = setup
        .api
        .messages(chat)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(
        texts,
        ["scheduled news", "after the restart", "marker"],
        "{texts:?}"
    );
    assert!(setup.api.messages(666).is_empty());
}

async fn mcp_call(setup: &Setup, name: &str, arguments: Value) -> CallToolResult {
    let client = setup.mcp_client().await;
    let result = client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(arguments.as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let _ = client.cancel().await;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_send_with_a_run_id_delivers_a_relayed_reply_once() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.log_says("following the daemon's events").await;
    setup.mcp_port().await;
    let chat = alice().id;
    // What cron does: a turn with trigger cron in tg:111, then
    // telegram_send with that turn's run id.
    setup.llm.push(Reply::text("your reminder"));
    let client = setup.daemon.client().await;
    let turn = Turn::run(&client, other_client_turn("tg:111", "remind", Some("cron"))).await;
    let run_id = match &turn.events[0] {
        crabtalk_proto::msg::stream_event::Event::Start(start) => start.run_id,
        other => panic!("{other:?}"),
    };
    let first = mcp_call(
        &setup,
        "telegram_send",
        json!({"chat_id": 111, "text": "your reminder", "run_id": run_id}),
    )
    .await;
    let second = mcp_call(
        &setup,
        "telegram_send",
        json!({"chat_id": "111", "text": "your reminder", "run_id": run_id}),
    )
    .await;
    let ids = |r: &CallToolResult| r.structured_content.as_ref().unwrap()["message_ids"].clone();
    assert_eq!(ids(&first), ids(&second), "{first:?} {second:?}");
    setup.api.wait_for_text(chat, "your reminder").await;
    assert_eq!(
        setup.api.messages(chat).len(),
        1,
        "{:?}",
        setup.api.messages(chat)
    );
    // Without a run id it sends; to a chat that may not talk, it refuses.
    let plain = mcp_call(
        &setup,
        "telegram_send",
        json!({"chat_id": 111, "text": "**direct**"}),
    )
    .await;
    assert_eq!(plain.structured_content.as_ref().unwrap()["sent"], true);
    let message = setup.api.wait_for_text(chat, "direct").await;
    assert_eq!(message.html.as_deref(), Some("<b>direct</b>"));
    let refused = mcp_call(
        &setup,
        "telegram_send",
        json!({"chat_id": 666, "text": "hi"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    let chats = mcp_call(&setup, "telegram_chats", json!({})).await;
    let listed = chats.structured_content.unwrap().to_string();
    assert!(listed.contains("\"sender\":\"tg:111\""), "{listed}");
}

/// What the tool server says of itself and of each tool, and a number
/// sent as a string where the schema wants an integer (what the MCP
/// inspector's form sends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_names_itself_marks_every_tool_and_takes_a_number_in_a_string() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let client = setup.mcp_client().await;
    let program = client.peer_info().unwrap().server_info.clone().unwrap();
    assert_eq!(
        (program.name.as_str(), program.version.as_str()),
        ("crabtalk-telegram", env!("CARGO_PKG_VERSION"))
    );

    let tools = client.list_all_tools().await.unwrap();
    let listed: Vec<Value> = tools
        .iter()
        .map(|tool| serde_json::to_value(tool).unwrap())
        .collect();
    assert_eq!(listed[0]["name"], "telegram_send");
    assert_eq!(
        listed[0]["annotations"],
        json!({"title": "Send a Telegram message", "readOnlyHint": false, "destructiveHint": false,
               "idempotentHint": false, "openWorldHint": true})
    );
    assert_eq!(listed[0]["title"], "Send a Telegram message");
    assert_eq!(listed[1]["name"], "telegram_chats");
    assert_eq!(
        listed[1]["annotations"],
        json!({"title": "List Telegram chats", "readOnlyHint": true, "destructiveHint": false,
               "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(listed[1]["title"], "List Telegram chats");
    let properties = &listed[0]["inputSchema"]["properties"];
    assert_eq!(properties["topic"]["type"], "integer", "{properties}");
    assert_eq!(properties["run_id"]["type"], "integer", "{properties}");

    let sent = client
        .call_tool(
            CallToolRequestParams::new("telegram_send").with_arguments(
                json!({"chat_id": 111, "text": "a string run id", "run_id": "7"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_ne!(sent.is_error, Some(true), "{sent:?}");
    assert_eq!(sent.structured_content.unwrap()["sent"], true);
    setup.api.wait_for_text(alice().id, "a string run id").await;
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_sends_with_telegram_send_to_its_own_conversation() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let client = setup.daemon.client().await;
    crabtalk_testkit::poll_until("the daemon to connect to the gateway's MCP", async || {
        let mcps = client.list_mcps(ListMcpsMsg::default()).await.unwrap();
        mcps.mcps
            .iter()
            .any(|m| m.name == "telegram" && m.status == McpStatus::Connected as i32)
            .then_some(())
    })
    .await;
    setup.llm.push(Reply::tools(vec![ToolCall::new(
        "s1",
        "telegram__telegram_send",
        json!({"text": "sent by the agent"}),
    )]));
    setup.llm.push(Reply::text("done sending"));
    let turn = Turn::run(
        &client,
        other_client_turn("tg:111", "tell me on telegram", None),
    )
    .await;
    let results = turn.tool_results();
    assert!(!results[0].is_error, "{results:?}");
    assert!(results[0].output.contains("message_ids"), "{results:?}");
    let chat = alice().id;
    setup.api.wait_for_text(chat, "sent by the agent").await;
    setup.api.wait_for_text(chat, "done sending").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_chain_sends_only_to_its_own_chat() {
    let mut setup = Setup::start("allow = [111, 222]\n").await;
    setup.start_gateway().await;
    let client = setup.mcp_client().await;
    let call = |name: &str, arguments: Value| {
        let mut params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap());
        // What the daemon puts in a call of a chain tg:111 began.
        params.meta = Some(rmcp::model::RequestMetaObject(
            json!({
                "ai.crabtalk/agent": "crab",
                "ai.crabtalk/sender": "tg:111",
                "ai.crabtalk/origin": "tg:111",
                "ai.crabtalk/gateway": "tg:111",
            })
            .as_object()
            .cloned()
            .unwrap()
            .into(),
        ));
        client.call_tool(params)
    };
    let refused = call(
        "telegram_send",
        json!({"chat_id": 222, "text": "hello from alice's agent"}),
    )
    .await
    .unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let said = format!("{:?}", refused.content);
    assert!(said.contains("only to its own chat"), "{said}");
    let own = call("telegram_send", json!({"text": "to alice"}))
        .await
        .unwrap();
    assert_ne!(own.is_error, Some(true), "{own:?}");
    setup.api.wait_for_text(111, "to alice").await;
    assert!(setup.api.messages(222).is_empty());
    let chats = call("telegram_chats", json!({})).await.unwrap();
    let listed = chats.structured_content.unwrap();
    let ids: Vec<i64> = listed["chats"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|chat| chat["chat_id"].as_i64())
        .collect();
    assert_eq!(ids, [111], "{listed}");
    let _ = client.cancel().await;
}
