//! Turns end to end: the real `crabtalkd` in a temp home, a scripted LLM over
//! real HTTP, and the real protocol client.

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, answer, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary, within};
use serde_json::{Value, json};

/// One Anthropic provider at `llm` serving `claude-scripted`.
fn anthropic_config(llm: &ScriptedLlm) -> String {
    format!(
        "default_model = \"claude-scripted\"\n[[providers]]\nkind = \"anthropic\"\napi_key = \"test\"\nbase_url = \"{}\"\nmodels = [\"claude-scripted\"]\n[transport]\ntcp = \"off\"\n",
        llm.base_url()
    )
}

/// The messages of a recorded request, as (role, content) pairs.
fn roles_and_contents(request: &Value) -> Vec<(String, String)> {
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

fn ask(id: &str, question: &str) -> ToolCall {
    ToolCall::new(
        id,
        "ask_user",
        json!({"questions": [{"question": question, "options": [{"label": "blue"}]}]}),
    )
}

#[tokio::test]
async fn a_streamed_turn_emits_events_in_order() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::Thinking {
        thinking: "let me think".into(),
        text: "Hello there, friend!".into(),
    });
    let client = daemon.client().await;
    let turn = Turn::run(&client, message("crab", "user", "hi")).await;

    assert_eq!(turn.text(), "Hello there, friend!");
    let mut kinds = turn.kinds();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking",
            "thinking_end",
            "text_start",
            "chunk",
            "text_end",
            "context_usage",
            "end"
        ]
    );
    let chunks = turn
        .events
        .iter()
        .filter(|e| matches!(e, Event::Chunk(_)))
        .count();
    assert!(chunks > 3, "the reply arrives in pieces, not at once");
    let end = turn.end();
    assert_eq!(end.agent, "crab");
    assert_eq!(end.model, "scripted");
    assert!(end.error.is_empty(), "{}", end.error);
    let usage = end.usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (21, 7));

    // The request carried the agent's prompt, the message, and asked for usage.
    let request = &llm.requests()[0];
    assert_eq!(request["stream_options"]["include_usage"], json!(true));
    let messages = roles_and_contents(request);
    assert_eq!(messages[0].0, "system");
    assert!(messages[0].1.contains("You are Crab"), "{}", messages[0].1);
    assert_eq!(messages[1], ("user".into(), "hi".into()));
}

/// A model that takes its time between pieces, as a real one does: each
/// piece then goes from the turn straight to the socket (the request's
/// lane), and the pieces still arrive whole and in order, the end last.
#[tokio::test]
async fn a_paced_reply_arrives_piece_by_piece_in_order() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.pace_streams(std::time::Duration::from_millis(3));
    llm.push(Reply::Text(
        "one two three four five six seven eight nine ten".into(),
    ));
    let client = daemon.client().await;
    for _ in 0..3 {
        let turn = Turn::run(&client, message("crab", "user", "count")).await;
        assert_eq!(
            turn.text(),
            "one two three four five six seven eight nine ten"
        );
        let mut kinds = turn.kinds();
        kinds.dedup();
        assert_eq!(
            kinds,
            [
                "start",
                "text_start",
                "chunk",
                "text_end",
                "context_usage",
                "end"
            ]
        );
        assert!(turn.end().error.is_empty(), "{}", turn.end().error);
        llm.push(Reply::Text(
            "one two three four five six seven eight nine ten".into(),
        ));
    }
}

#[tokio::test]
async fn the_anthropic_api_streams_text_and_tool_calls() {
    let llm = ScriptedLlm::start().await;
    let daemon = TestDaemon::start(daemon_binary(), &anthropic_config(&llm)).await;
    let client = daemon.client().await;
    llm.push(Reply::Tools {
        text: "Asking.".into(),
        calls: vec![ask("toolu_1", "Colour?")],
    });
    llm.push(Reply::text("Blue it is."));

    let mut stream = client
        .stream(message("crab", "user", "pick a colour"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::AskUser(_)))
        .await;
    let Some(Event::ToolStart(start)) = turn
        .events
        .iter()
        .find(|e| matches!(e, Event::ToolStart(_)))
    else {
        panic!("no ToolStart: {:?}", turn.kinds());
    };
    assert_eq!(start.calls[0].id, "toolu_1");
    assert_eq!(
        serde_json::from_str::<Value>(&start.calls[0].arguments).unwrap()["questions"][0]["question"],
        "Colour?"
    );
    answer(&client, "crab", "user", "blue", "").await.unwrap();
    turn.read_until(&mut stream, |_| false).await;
    assert_eq!(turn.text(), "Asking.Blue it is.");
    let end = turn.end();
    assert!(end.error.is_empty(), "{}", end.error);
    assert_eq!(
        end.usage.unwrap().prompt_tokens,
        42,
        "usage is summed over both model calls"
    );
    let second = &llm.requests()[1];
    let text = second.to_string();
    assert!(text.contains("toolu_1") && text.contains("blue"), "{text}");
}

/// Text with characters of two, three and four bytes in UTF-8.
const MIXED: &str = "Grüße — ça va? 🦀 数据 ok";

/// A turn whose model streams arrive cut anywhere in their bytes: text,
/// thinking and two tool calls, all with multi-byte characters, must come
/// through whole.
async fn a_turn_over_streams_cut_anywhere(llm: &ScriptedLlm, daemon: &TestDaemon) {
    llm.chop_streams();
    llm.push(Reply::Tools {
        text: MIXED.into(),
        calls: vec![ask("call_1", "Farbe? 🎨"), ask("call_2", "Größe?")],
    });
    llm.push(Reply::Thinking {
        thinking: "überlegen… 🤔".into(),
        text: MIXED.into(),
    });
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", "user", "zwei Fragen"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    let mut asks = 0;
    turn.read_until(&mut stream, |e| {
        asks += matches!(e, Event::AskUser(_)) as usize;
        asks == 2
    })
    .await;
    let Some(Event::ToolStart(start)) = turn
        .events
        .iter()
        .find(|e| matches!(e, Event::ToolStart(_)))
    else {
        panic!("no ToolStart: {:?}", turn.kinds());
    };
    let calls: Vec<(&str, String)> = start
        .calls
        .iter()
        .map(|call| {
            let arguments: Value = serde_json::from_str(&call.arguments).unwrap();
            let question = arguments["questions"][0]["question"].as_str().unwrap();
            (call.id.as_str(), question.to_owned())
        })
        .collect();
    assert_eq!(
        calls,
        [("call_1", "Farbe? 🎨".into()), ("call_2", "Größe?".into())]
    );
    answer(&client, "crab", "user", "groß", "call_2")
        .await
        .unwrap();
    answer(&client, "crab", "user", "blau", "call_1")
        .await
        .unwrap();
    turn.read_until(&mut stream, |_| false).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    assert_eq!(turn.text(), format!("{MIXED}{MIXED}"));
    let thinking: String = turn
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Thinking(thinking) => Some(thinking.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "überlegen… 🤔");
    let usage = turn.end().usage.unwrap();
    assert_eq!(usage.completion_tokens, 14, "usage of both calls arrived");
    // Both results went back, in call order.
    let second = llm.requests()[1].to_string();
    let (blau, gross) = (second.find("blau").unwrap(), second.find("groß").unwrap());
    assert!(blau < gross, "{second}");
}

#[tokio::test]
async fn openai_streams_cut_anywhere_in_their_bytes_come_through_whole() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    a_turn_over_streams_cut_anywhere(&llm, &daemon).await;
}

#[tokio::test]
async fn anthropic_streams_cut_anywhere_in_their_bytes_come_through_whole() {
    let llm = ScriptedLlm::start().await;
    let daemon = TestDaemon::start(daemon_binary(), &anthropic_config(&llm)).await;
    a_turn_over_streams_cut_anywhere(&llm, &daemon).await;
}

#[tokio::test]
async fn ask_user_round_trip() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::tools(vec![ask("c1", "Colour?")]));
    llm.push(Reply::text("Blue it is."));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", "user", "pick a colour"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::AskUser(_)))
        .await;
    let Some(Event::AskUser(asked)) = turn.events.last() else {
        unreachable!()
    };
    assert_eq!(asked.call_id, "c1");
    assert_eq!(asked.questions[0].question, "Colour?");
    assert_eq!(asked.questions[0].options[0].label, "blue");

    // No question waits on another conversation.
    let err = answer(&client, "crab", "other", "x", "").await.unwrap_err();
    assert_eq!(err.code(), Some(404), "{err}");
    answer(&client, "crab", "user", "blue", "c1").await.unwrap();
    turn.read_until(&mut stream, |_| false).await;
    let result = turn.events.iter().find_map(|e| match e {
        Event::ToolResult(result) => Some(result.clone()),
        _ => None,
    });
    let result = result.expect("a tool result");
    assert_eq!(
        (
            result.call_id.as_str(),
            result.output.as_str(),
            result.is_error
        ),
        ("c1", "blue", false)
    );
    assert_eq!(turn.text(), "Blue it is.");
    let messages = &llm.requests()[1]["messages"];
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(
        (tool["tool_call_id"].as_str(), tool["content"].as_str()),
        (Some("c1"), Some("blue"))
    );
}

#[tokio::test]
async fn tool_results_arrive_in_completion_order_and_enter_history_in_call_order() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::tools(vec![
        ask("first", "One?"),
        ask("second", "Two?"),
    ]));
    llm.push(Reply::text("Both answered."));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", "user", "two questions"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    let mut asks = 0;
    turn.read_until(&mut stream, |e| {
        asks += matches!(e, Event::AskUser(_)) as usize;
        asks == 2
    })
    .await;
    // Answer the second question first.
    for (id, reply) in [("second", "two"), ("first", "one")] {
        answer(&client, "crab", "user", reply, id).await.unwrap();
    }
    turn.read_until(&mut stream, |_| false).await;
    let completed: Vec<String> = turn.tool_results().into_iter().map(|r| r.call_id).collect();
    assert_eq!(completed, ["second", "first"]);
    let messages = llm.requests()[1]["messages"].as_array().unwrap().clone();
    let tool_ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["first", "second"]);
    let kinds = turn.kinds();
    let complete = kinds.iter().position(|k| *k == "tools_complete").unwrap();
    assert!(
        kinds[..complete]
            .iter()
            .filter(|k| **k == "tool_result")
            .count()
            == 2
    );
}

#[tokio::test]
async fn kill_mid_stream_ends_the_turn_and_the_conversation_goes_on() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::Stall("partial answ".into()));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", "user", "tell me a long story"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::Chunk(_)))
        .await;
    assert_eq!(llm.aborted_streams(), 0);
    client
        .kill(KillMsg {
            agent: "crab".into(),
            sender: "user".into(),
        })
        .await
        .unwrap();
    turn.read_until(&mut stream, |_| false).await;
    assert!(
        turn.end().error.contains("cancelled"),
        "{}",
        turn.end().error
    );
    // The daemon hung up on the model: the stalled reply, which never ends
    // by itself, was dropped by its client.
    llm.wait_for_aborted_streams(1).await;

    llm.push(Reply::text("fresh start"));
    let next = Turn::run(&client, message("crab", "user", "again")).await;
    assert_eq!(next.text(), "fresh start");
    let contents: Vec<String> = roles_and_contents(&llm.requests()[1])
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    assert!(contents.contains(&"tell me a long story".to_owned()));
    assert!(
        !contents.iter().any(|c| c.contains("partial")),
        "the cut-off reply is not in the history: {contents:?}"
    );
}

#[tokio::test]
async fn kill_mid_tool_closes_the_call_and_the_conversation_goes_on() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::tools(vec![ask("waiting", "Will you answer?")]));
    let client = daemon.client().await;
    let mut stream = client
        .stream(message("crab", "user", "ask me"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::AskUser(_)))
        .await;
    client
        .kill(KillMsg {
            agent: "crab".into(),
            sender: "user".into(),
        })
        .await
        .unwrap();
    turn.read_until(&mut stream, |_| false).await;
    assert!(
        turn.end().error.contains("cancelled"),
        "{}",
        turn.end().error
    );
    // The question was withdrawn.
    let err = answer(&client, "crab", "user", "late", "")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));

    llm.push(Reply::text("ok"));
    let next = Turn::run(&client, message("crab", "user", "never mind")).await;
    assert!(next.end().error.is_empty());
    let messages = llm.requests()[1]["messages"].as_array().unwrap().clone();
    let closed = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the dangling call got a result");
    assert_eq!(closed["tool_call_id"], "waiting");
    assert!(closed["content"].as_str().unwrap().contains("cancelled"));
}

#[tokio::test]
async fn steering_reaches_the_next_model_call() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::tools(vec![ask("c1", "Colour?")]));
    llm.push(Reply::text("Blue and green."));
    let client = daemon.client().await;
    // Nothing to steer before the turn.
    let err = client
        .steer_session(SteerSessionMsg {
            agent: "crab".into(),
            sender: "user".into(),
            content: "x".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(409));

    let mut stream = client
        .stream(message("crab", "user", "pick"))
        .await
        .unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::AskUser(_)))
        .await;
    client
        .steer_session(SteerSessionMsg {
            agent: "crab".into(),
            sender: "user".into(),
            content: "also consider green".into(),
        })
        .await
        .unwrap();
    answer(&client, "crab", "user", "blue", "").await.unwrap();
    turn.read_until(&mut stream, |_| false).await;
    assert!(
        turn.events
            .iter()
            .any(|e| matches!(e, Event::UserSteered(s) if s.content == "also consider green"))
    );
    let messages = roles_and_contents(&llm.requests()[1]);
    assert_eq!(
        messages.last().unwrap(),
        &("user".to_owned(), "also consider green".to_owned())
    );
}

#[tokio::test]
async fn guest_turns_are_attributed_and_framing_is_never_persisted() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "owl".into(),
            config: String::new(),
            prompt: "You are Owl.".into(),
        })
        .await
        .unwrap();
    llm.push(Reply::text("hello from crab"));
    Turn::run(&client, message("crab", "user", "hi")).await;
    llm.push(Reply::tools(vec![ask("g1", "guests cannot ask")]));
    let mut guest_msg = message("crab", "user", "owl, what do you think?");
    guest_msg.guest = Some("owl".into());
    let guest = Turn::run(&client, guest_msg).await;
    assert!(matches!(&guest.events[0], Event::Start(start) if start.agent == "owl"));
    assert_eq!(guest.end().agent, "owl");
    assert!(
        !guest.kinds().contains(&"tool_start"),
        "guest turns are text only"
    );

    let guest_request = &llm.requests()[1];
    assert!(
        guest_request.get("tools").is_none(),
        "no tool schemas for a guest"
    );
    let system = guest_request["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are Owl."), "{system}");
    assert!(system.contains("as a guest"), "{system}");

    llm.push(Reply::text("back to crab"));
    Turn::run(&client, message("crab", "user", "thanks")).await;
    let primary_request = &llm.requests()[2];
    let text = primary_request.to_string();
    assert!(text.contains("<from agent=\\\"owl\\\">"), "{text}");
    assert!(
        primary_request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("guests")
    );

    // On disk: the guest reply carries its agent; no framing anywhere.
    let log = std::fs::read_to_string(daemon.path().join("sessions/crab/user.jsonl")).unwrap();
    assert!(log.contains("\"agent\":\"owl\""), "{log}");
    assert!(
        !log.contains("as a guest") && !log.contains("<from"),
        "{log}"
    );
}

#[tokio::test]
async fn max_iterations_stops_a_looping_agent() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "looper".into(),
            config: r#"{"max_iterations": 2}"#.into(),
            prompt: String::new(),
        })
        .await
        .unwrap();
    llm.set_default(Reply::tools(vec![ToolCall::new(
        "x",
        "no_such_tool",
        json!({}),
    )]));
    let turn = Turn::run(&client, message("looper", "user", "loop")).await;
    assert!(
        turn.end().error.contains("max_iterations"),
        "{}",
        turn.end().error
    );
    assert_eq!(llm.requests().len(), 2);
    let result = turn.events.iter().find_map(|e| match e {
        Event::ToolResult(r) => Some(r.clone()),
        _ => None,
    });
    let result = result.unwrap();
    assert!(
        result.is_error && result.output.contains("no tool named"),
        "{}",
        result.output
    );
}

#[tokio::test]
async fn a_tool_outside_the_agents_scope_is_refused_at_dispatch() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "scoped".into(),
            config: r#"{"tools": ["read"]}"#.into(),
            prompt: String::new(),
        })
        .await
        .unwrap();
    llm.push(Reply::tools(vec![ask("c1", "sneaky?")]));
    llm.push(Reply::text("fine"));
    let turn = Turn::run(&client, message("scoped", "user", "go")).await;
    let refused = turn
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        refused.is_error && refused.output.contains("outside this agent's scope"),
        "{}",
        refused.output
    );
    assert!(!turn.kinds().contains(&"ask_user"), "the tool never ran");
    let requests = llm.requests();
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        ["read", "delegate"],
        "only what the scope allows (delegation is never scoped)"
    );
    let system = llm.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("<scope>\ntools: read, delegate\n"),
        "{system}"
    );
}

#[tokio::test]
async fn send_collects_the_whole_reply() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.push(Reply::text("the whole answer"));
    let client = daemon.client().await;
    let reply = client
        .send(SendMsg {
            agent: "crab".into(),
            content: "hi".into(),
            sender: Some("cli".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (
            reply.agent.as_str(),
            reply.content.as_str(),
            reply.model.as_str()
        ),
        ("crab", "the whole answer", "scripted")
    );
    assert_eq!(reply.usage.unwrap().total_tokens, 28);
    let err = client
        .send(SendMsg {
            agent: "nobody".into(),
            content: "hi".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
    assert!(
        err.to_string().contains("crab"),
        "the error lists the agents: {err}"
    );
}

#[tokio::test]
async fn crab_md_instructions_reach_the_system_prompt() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    std::fs::write(daemon.path().join("Crab.md"), "Always answer in haiku.").unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("Crab.md"), "This project uses tabs.").unwrap();
    llm.push(Reply::text("ok"));
    let client = daemon.client().await;
    let mut request = message("crab", "user", "hi");
    request.cwd = Some(project.path().display().to_string());
    Turn::run(&client, request).await;
    let system = llm.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let haiku = system
        .find("Always answer in haiku.")
        .expect("global instructions");
    let tabs = system
        .find("This project uses tabs.")
        .expect("project instructions");
    assert!(haiku < tabs);

    let mut bad = message("crab", "user", "hi");
    bad.cwd = Some("/no/such/dir".into());
    let err = client.stream(bad).await.unwrap();
    let turn_err = within("refusal", futures::StreamExt::next(&mut Box::pin(err)))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(turn_err.code(), Some(400));
}

#[tokio::test]
async fn subscribers_see_events_with_the_real_sender_and_run_ids() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    llm.push(Reply::text("one"));
    llm.push(Reply::text("two"));
    Turn::run(&client, message("crab", "tg:42", "first")).await;
    Turn::run(&client, message("crab", "tg:42", "second")).await;
    let mut done = Vec::new();
    within("two DONE events", async {
        while done.len() < 2 {
            let event = futures::StreamExt::next(&mut events)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(event.sender, "tg:42");
            assert_eq!(event.agent, "crab");
            assert_ne!(event.run_id, 0);
            if event.kind == AgentEventKind::Done as i32 {
                done.push(event);
            }
        }
    })
    .await;
    assert_ne!(
        done[0].run_id, done[1].run_id,
        "each turn has its own run id"
    );
    assert!(done[0].error.is_empty());
}

#[tokio::test]
async fn turns_on_one_conversation_run_in_the_order_they_were_sent() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    llm.push(Reply::Gated("first answer".into()));
    llm.push(Reply::text("second answer"));
    // Both sent before either is answered.
    let first = client
        .stream(message("crab", "user", "first question"))
        .await
        .unwrap();
    let second = client
        .stream(message("crab", "user", "second question"))
        .await
        .unwrap();
    llm.wait_for_requests(1).await;
    let asked_first = roles_and_contents(&llm.requests()[0]);
    assert_eq!(asked_first.last().unwrap().1, "first question");
    llm.release();
    let (first, second) = (Turn::collect(first).await, Turn::collect(second).await);
    assert_eq!(
        (first.text().as_str(), second.text().as_str()),
        ("first answer", "second answer")
    );
    let contents: Vec<String> = roles_and_contents(&llm.requests()[1])
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    assert_eq!(
        contents[1..],
        ["first question", "first answer", "second question"]
    );
}

/// A client's turns run on a serving thread of the daemon, not on its main
/// runtime's workers (RFC 0049): the serving threads exist, and they are
/// the ones that spend the CPU of twenty turns.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_client_s_turns_run_on_a_serving_thread() {
    use crabtalk_testkit::cpu::of_threads;

    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.set_default(Reply::text("a reply of a few words, streamed in pieces"));
    let client = daemon.client().await;
    Turn::run(&client, message("crab", "user", "warm up")).await;
    let threads = |prefix| of_threads(daemon.pid(), prefix).expect("the daemon's threads in /proc");
    let (serving, serving_before) = threads("crabtalk-serve");
    let (workers, workers_before) = threads("tokio-rt-worker");
    assert!(serving >= 1, "no serving thread in the daemon");
    assert!(workers >= 1, "no main runtime worker in the daemon");
    for n in 0..20 {
        let turn = Turn::run(&client, message("crab", "user", &format!("turn {n}"))).await;
        assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    }
    let on_serving = threads("crabtalk-serve").1 - serving_before;
    let on_workers = threads("tokio-rt-worker").1 - workers_before;
    assert!(
        on_serving > on_workers,
        "twenty turns took {on_serving:?} on the serving threads and {on_workers:?} on the main workers"
    );
}
