//! Delegation and the event bus on the real daemon.

use crabtalk_proto::Client;
use crabtalk_proto::ReplyStream;
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, TestDaemon, ToolCall, eventually, within};
use futures::StreamExt;
use serde_json::{Value, json};

fn delegate(id: &str, tasks: Value, background: bool) -> ToolCall {
    ToolCall::new(
        id,
        "delegate",
        json!({"tasks": tasks, "background": background}),
    )
}

/// The first user message of a recorded request.
fn first_user_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits for the `DONE` event of `agent` on a subscription.
async fn done_of(events: &mut ReplyStream<AgentEventMsg>, agent: &str) -> AgentEventMsg {
    within("a DONE event", async {
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.kind == AgentEventKind::Done as i32 && event.agent == agent {
                return event;
            }
        }
    })
    .await
}

/// Waits for the first tool result of `agent` on a subscription.
async fn tool_result_of(events: &mut ReplyStream<AgentEventMsg>, agent: &str) -> AgentEventMsg {
    within("a TOOL_RESULT event", async {
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.kind == AgentEventKind::ToolResult as i32 && event.agent == agent {
                return event;
            }
        }
    })
    .await
}

/// The content of the first tool message in a recorded request.
fn first_tool_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message in {request}"))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn foreground_delegation_returns_every_result() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    let scratch = tempfile::tempdir().unwrap();
    llm.push(Reply::tools(vec![delegate(
        "d1",
        json!([
            {"agent": "worker", "message": "compute the answer", "cwd": scratch.path().display().to_string()},
            {"agent": "nobody", "message": "lost"}
        ]),
        false,
    )]));
    // The worker checks where it runs, then answers.
    llm.push(Reply::tools(vec![ToolCall::new(
        "w1",
        "bash",
        json!({"command": "pwd"}),
    )]));
    llm.push(Reply::text("forty-two"));
    llm.push(Reply::text("The worker says forty-two."));
    let turn = Turn::run(&client, message("crab", "user", "ask the worker")).await;
    assert_eq!(turn.text(), "The worker says forty-two.");
    let result = &turn.tool_results()[0];
    let entries: Value = serde_json::from_str(&result.output).unwrap();
    assert_eq!(entries[0]["agent"], "worker");
    assert_eq!(entries[0]["result"], "forty-two");
    assert!(entries[0]["error"].is_null());
    assert!(
        entries[1]["error"].as_str().unwrap().contains("not found"),
        "{}",
        entries[1]
    );
    assert!(result.is_error, "a failed task marks the whole result");

    // The delegating agent was told whom it can delegate to.
    let crab_system = llm.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        crab_system.contains("<agents>") && crab_system.contains("- worker: "),
        "{crab_system}"
    );
    // The worker ran in its task's working directory...
    let worker_tools = llm.requests()[2].to_string();
    assert!(
        worker_tools.contains(&scratch.path().display().to_string()),
        "{worker_tools}"
    );
    // ...in a conversation of its own, with the built-in prompt.
    let worker_request = &llm.requests()[1];
    assert_eq!(first_user_message(worker_request), "compute the answer");
    assert!(
        worker_request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("worker agent")
    );
    let conversations = client
        .list_conversations(ListConversationsMsg {
            agent: "worker".into(),
            sender: String::new(),
        })
        .await
        .unwrap();
    assert_eq!(conversations.conversations.len(), 1);
    assert!(
        conversations.conversations[0]
            .sender
            .starts_with("delegate:")
    );
    // The task's end was published like any turn's, before the delegating
    // turn's own.
    let worker_done = done_of(&mut events, "worker").await;
    assert_eq!(
        (worker_done.sender.as_str(), worker_done.content.as_str()),
        (conversations.conversations[0].sender.as_str(), "forty-two")
    );
    assert!(worker_done.error.is_empty(), "{}", worker_done.error);
    let crab_done = done_of(&mut events, "crab").await;
    assert_eq!(crab_done.content, "The worker says forty-two.");
}

#[tokio::test]
async fn background_delegation_answers_at_once_and_reports_through_done_events() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::tools(vec![delegate(
        "d1",
        json!([{"agent": "worker", "message": "research"}]),
        true,
    )]));
    llm.set_default(Reply::text("finished"));
    let turn = Turn::run(&client, message("crab", "user", "start research")).await;
    let reply: Value = serde_json::from_str(&turn.tool_results()[0].output).unwrap();
    assert_eq!(reply["background"], true);
    let task_id = reply["tasks"][0]["id"].as_str().unwrap().to_owned();
    assert!(task_id.starts_with("delegate:"), "{task_id}");
    let done = done_of(&mut events, "worker").await;
    assert_eq!(
        (done.sender.as_str(), done.content.as_str()),
        (task_id.as_str(), "finished")
    );
    assert!(done.error.is_empty());
}

#[tokio::test]
async fn delegation_depth_and_fan_out_are_limited() {
    let (llm, daemon) =
        TestDaemon::on_scripted_llm("\n[delegation]\nmax_depth = 1\nmax_tasks = 2\n").await;
    let client = daemon.client().await;
    // Three tasks in one call: refused.
    llm.push(Reply::tools(vec![delegate(
        "wide",
        json!([{"agent": "worker", "message": "a"}, {"agent": "worker", "message": "b"}, {"agent": "worker", "message": "c"}]),
        false,
    )]));
    llm.push(Reply::text("ok"));
    let turn = Turn::run(&client, message("crab", "user", "go wide")).await;
    let refused = &turn.tool_results()[0];
    assert!(
        refused.is_error && refused.output.contains("3 tasks"),
        "{}",
        refused.output
    );

    // The worker may not delegate further at depth 1.
    llm.push(Reply::tools(vec![delegate(
        "deep",
        json!([{"agent": "worker", "message": "go down"}]),
        false,
    )]));
    llm.push(Reply::tools(vec![delegate(
        "deeper",
        json!([{"agent": "worker", "message": "further"}]),
        false,
    )]));
    llm.push(Reply::text("could not delegate"));
    llm.push(Reply::text("done"));
    let turn = Turn::run(&client, message("crab", "user", "go deep")).await;
    let entries: Value = serde_json::from_str(&turn.tool_results()[0].output).unwrap();
    assert_eq!(entries[0]["result"], "could not delegate");
    let worker_request = &llm.requests()[4];
    let refusal = worker_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        refusal["content"].as_str().unwrap().contains("levels deep"),
        "{refusal}"
    );
}

#[tokio::test]
async fn killing_the_delegating_turn_cancels_its_tasks() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::tools(vec![delegate(
        "d1",
        json!([{"agent": "worker", "message": "take forever"}]),
        false,
    )]));
    llm.push(Reply::Stall("working".into()));
    let mut stream = client
        .stream(message("crab", "user", "delegate"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::ToolStart(_)))
        .await;
    llm.wait_for_requests(2).await;
    client
        .kill(KillMsg {
            agent: "crab".into(),
            sender: "user".into(),
        })
        .await
        .unwrap();
    turn.read_until(&mut stream, |_| false).await;
    let worker_done = done_of(&mut events, "worker").await;
    assert!(
        worker_done.error.contains("cancelled"),
        "{}",
        worker_done.error
    );
}

#[tokio::test]
async fn delegate_senders_stay_unique_across_restarts() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    llm.set_default(Reply::text("done"));
    let mut senders = Vec::new();
    for _ in 0..2 {
        let client = daemon.client().await;
        llm.push(Reply::tools(vec![delegate(
            "d",
            json!([{"agent": "worker", "message": "x"}]),
            false,
        )]));
        Turn::run(&client, message("crab", "user", "delegate")).await;
        daemon.restart().await;
    }
    let client = daemon.client().await;
    for info in client
        .list_conversations(ListConversationsMsg {
            agent: "worker".into(),
            sender: String::new(),
        })
        .await
        .unwrap()
        .conversations
    {
        senders.push(info.sender);
    }
    senders.sort();
    senders.dedup();
    assert_eq!(senders.len(), 2, "{senders:?}");
}

async fn create(client: &Client, name: &str) {
    client
        .create_agent(CreateAgentMsg {
            name: name.into(),
            config: String::new(),
            prompt: format!("You are {name}."),
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_done_event_fires_a_once_subscription_exactly_once() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    create(&client, "a").await;
    create(&client, "b").await;
    let subscription = client
        .subscribe_event(SubscribeEventMsg {
            source: "agent:a:done".into(),
            target_agent: "b".into(),
            once: true,
        })
        .await
        .unwrap();
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::text("a's finding"));
    llm.push(Reply::text("b read it"));
    Turn::run(&client, message("a", "user", "find something")).await;
    let b_done = done_of(&mut events, "b").await;
    assert_eq!(b_done.sender, "event:agent:a:done");
    assert_eq!(first_user_message(&llm.requests()[1]), "a's finding");
    assert!(
        client
            .list_subscriptions(ListSubscriptionsMsg {})
            .await
            .unwrap()
            .subscriptions
            .is_empty()
    );

    // A second run of a fires nothing.
    llm.push(Reply::text("again"));
    Turn::run(&client, message("a", "user", "again")).await;
    assert_eq!(llm.requests().len(), 3);
    assert!(
        client
            .unsubscribe_event(UnsubscribeEventMsg {
                id: subscription.id
            })
            .await
            .unwrap_err()
            .code()
            == Some(404)
    );
}

#[tokio::test]
async fn a_subscription_cycle_is_stopped_by_the_hop_limit() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("\n[events]\nmax_hops = 3\n").await;
    let client = daemon.client().await;
    create(&client, "a").await;
    create(&client, "b").await;
    for (source, target) in [("agent:a:done", "b"), ("agent:b:done", "a")] {
        client
            .subscribe_event(SubscribeEventMsg {
                source: source.into(),
                target_agent: target.into(),
                once: false,
            })
            .await
            .unwrap();
    }
    llm.set_default(Reply::text("ping"));
    Turn::run(&client, message("a", "user", "start")).await;
    eventually("the cycle warning", || {
        daemon.log().contains("is there a subscription cycle")
    })
    .await;
    // a (by the user), b, a, b — then the fourth hop is refused.
    assert_eq!(llm.requests().len(), 4, "{}", daemon.log());
}

#[tokio::test]
async fn published_events_fire_subscribers_and_subscriptions_survive_a_restart() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    create(&client, "scout").await;
    client
        .subscribe_event(SubscribeEventMsg {
            source: "rss:fetch".into(),
            target_agent: "scout".into(),
            once: false,
        })
        .await
        .unwrap();
    let bad = client
        .subscribe_event(SubscribeEventMsg {
            source: "x".into(),
            target_agent: "nobody".into(),
            once: false,
        })
        .await;
    assert_eq!(bad.unwrap_err().code(), Some(404));
    let empty = client
        .publish_event(PublishEventMsg {
            source: "rss:fetch".into(),
            payload: " ".into(),
        })
        .await;
    assert_eq!(empty.unwrap_err().code(), Some(400));
    drop(client);

    daemon.restart().await;
    let client = daemon.client().await;
    let subscriptions = client
        .list_subscriptions(ListSubscriptionsMsg {})
        .await
        .unwrap()
        .subscriptions;
    assert_eq!(subscriptions.len(), 1);
    assert_eq!(
        (
            subscriptions[0].source.as_str(),
            subscriptions[0].target_agent.as_str()
        ),
        ("rss:fetch", "scout")
    );
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::text("3 new items"));
    client
        .publish_event(PublishEventMsg {
            source: "rss:fetch".into(),
            payload: "feed: 3 new items".into(),
        })
        .await
        .unwrap();
    let done = done_of(&mut events, "scout").await;
    assert_eq!(done.sender, "event:rss:fetch");
    assert_eq!(first_user_message(&llm.requests()[0]), "feed: 3 new items");
    assert!(daemon.path().join("events/subscriptions.toml").exists());
}

#[tokio::test]
async fn a_background_task_fires_subscriptions_on_its_done_event() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    create(&client, "reviewer").await;
    client
        .subscribe_event(SubscribeEventMsg {
            source: "agent:worker:done".into(),
            target_agent: "reviewer".into(),
            once: false,
        })
        .await
        .unwrap();
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::tools(vec![delegate(
        "d1",
        json!([{"agent": "worker", "message": "research"}]),
        true,
    )]));
    // The delegating turn and the task run at once: every reply is the same.
    llm.set_default(Reply::text("findings"));
    let turn = Turn::run(&client, message("crab", "user", "start research")).await;
    let reply: Value = serde_json::from_str(&turn.tool_results()[0].output).unwrap();
    let task_id = reply["tasks"][0]["id"].as_str().unwrap().to_owned();

    let reviewer_done = done_of(&mut events, "reviewer").await;
    assert_eq!(reviewer_done.sender, "event:agent:worker:done");
    // The reviewer was handed the task's result.
    let reviewer_request = llm
        .requests()
        .into_iter()
        .find(|r| {
            r["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("You are reviewer.")
        })
        .expect("the reviewer's request");
    assert_eq!(first_user_message(&reviewer_request), "findings");
    let conversations = client
        .list_conversations(ListConversationsMsg {
            agent: "worker".into(),
            sender: String::new(),
        })
        .await
        .unwrap()
        .conversations;
    assert_eq!(conversations.len(), 1);
    assert_eq!(conversations[0].sender, task_id);
}

#[tokio::test]
async fn a_gateway_user_cannot_reach_bash_through_a_delegated_task() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    let scratch = tempfile::tempdir().unwrap();
    llm.push(Reply::tools(vec![delegate(
        "d1",
        json!([{"agent": "worker", "message": "create a file", "cwd": scratch.path().display().to_string()}]),
        false,
    )]));
    llm.push(Reply::tools(vec![ToolCall::new(
        "w1",
        "bash",
        json!({"command": "touch created"}),
    )]));
    llm.push(Reply::text("bash was refused"));
    llm.push(Reply::text("The worker could not do it."));
    let turn = Turn::run(&client, message("crab", "tg:42", "have the worker run it")).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);

    let refused = tool_result_of(&mut events, "worker").await;
    assert!(
        refused.tool_is_error
            && refused.tool_output.contains("gateway")
            && refused.tool_output.contains("tg:42")
            && refused.tool_output.contains("allow_gateway"),
        "{}",
        refused.tool_output
    );
    assert!(!scratch.path().join("created").exists());
}

#[tokio::test]
async fn a_gateway_user_cannot_reach_bash_through_a_done_event() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    create(&client, "follower").await;
    client
        .subscribe_event(SubscribeEventMsg {
            source: "agent:crab:done".into(),
            target_agent: "follower".into(),
            once: false,
        })
        .await
        .unwrap();
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::text("hello from crab"));
    llm.push(Reply::tools(vec![ToolCall::new(
        "f1",
        "bash",
        json!({"command": "echo hi"}),
    )]));
    llm.push(Reply::text("refused"));
    Turn::run(&client, message("crab", "tg:42", "hi")).await;
    let refused = tool_result_of(&mut events, "follower").await;
    assert!(
        refused.tool_is_error && refused.tool_output.contains("tg:42"),
        "{}",
        refused.tool_output
    );
    assert_eq!(refused.sender, "event:agent:crab:done");
}

#[tokio::test]
async fn a_cycle_through_delegation_is_stopped_by_the_hop_limit() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("\n[events]\nmax_hops = 3\n").await;
    let client = daemon.client().await;
    create(&client, "a").await;
    create(&client, "b").await;
    // a's end fires b; b hands a task back to a, whose end fires b again.
    client
        .subscribe_event(SubscribeEventMsg {
            source: "agent:a:done".into(),
            target_agent: "b".into(),
            once: false,
        })
        .await
        .unwrap();
    llm.push(Reply::text("a's news"));
    for round in 0..3 {
        llm.push(Reply::tools(vec![delegate(
            &format!("d{round}"),
            json!([{"agent": "a", "message": "look again"}]),
            false,
        )]));
        llm.push(Reply::text("a looked again"));
        llm.push(Reply::text("b passed it on"));
    }
    // Without the limit the cycle would go on as long as this default lasts.
    llm.set_default(Reply::tools(vec![delegate(
        "more",
        json!([{"agent": "a", "message": "and again"}]),
        false,
    )]));
    Turn::run(&client, message("a", "user", "start")).await;
    eventually("the cycle warning", || {
        daemon.log().contains("is there a subscription cycle")
    })
    .await;
    // a (by the user), then three rounds of b → a (delegated) → b: the
    // third delegated a's done-event is the one refused.
    eventually("b's last reply", || llm.requests().len() == 10).await;
    assert!(
        daemon
            .log()
            .contains("event \"agent:a:done\" was not delivered: 3 events already led to it"),
        "{}",
        daemon.log()
    );
}

#[tokio::test]
async fn a_reload_in_the_middle_of_a_chain_keeps_its_delegation_depth() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("\n[delegation]\nmax_depth = 2\n").await;
    let client = daemon.client().await;
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().display().to_string();
    // crab → worker (depth 1), which waits for the reload, then → worker
    // (depth 2), which may not go deeper.
    llm.push(Reply::tools(vec![delegate(
        "d1",
        json!([{"agent": "worker", "message": "level one", "cwd": cwd}]),
        false,
    )]));
    llm.push(Reply::tools(vec![ToolCall::new(
        "wait",
        "bash",
        json!({"command": "while [ ! -e reloaded ]; do sleep 0.02; done", "timeout_secs": 60}),
    )]));
    llm.push(Reply::tools(vec![delegate(
        "d2",
        json!([{"agent": "worker", "message": "level two"}]),
        false,
    )]));
    llm.push(Reply::tools(vec![delegate(
        "d3",
        json!([{"agent": "worker", "message": "level three"}]),
        false,
    )]));
    llm.push(Reply::text("level two could not go deeper"));
    llm.push(Reply::text("level one done"));
    llm.push(Reply::text("all done"));
    let stream = client
        .stream(message("crab", "user", "go deep"))
        .await
        .unwrap();
    llm.wait_for_requests(2).await;
    client.reload(ReloadMsg {}).await.unwrap();
    std::fs::write(scratch.path().join("reloaded"), "").unwrap();
    let turn = Turn::collect(stream).await;
    assert_eq!(turn.text(), "all done");
    let refusal = first_tool_message(&llm.requests()[4]);
    assert!(
        refusal.contains("already 2 levels deep (the limit is 2)"),
        "{refusal}"
    );
}
