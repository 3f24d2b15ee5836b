//! What a client needs to show a conversation as people use it: titles
//! from the first message, a fresh start that keeps the old messages, the
//! events another client needs to follow a conversation live, and where
//! the model comes from.

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary, within};
use futures::StreamExt;

async fn listed(client: &crabtalk_proto::Client, sender: &str) -> ConversationInfo {
    client
        .list_conversations(ListConversationsMsg {
            agent: "crab".into(),
            sender: sender.into(),
        })
        .await
        .unwrap()
        .conversations
        .into_iter()
        .next()
        .expect("the conversation is listed")
}

#[tokio::test]
async fn a_conversation_is_titled_after_its_first_message() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.set_default(Reply::text("ok"));
    let client = daemon.client().await;
    Turn::run(
        &client,
        message(
            "crab",
            "ann",
            "\n  Plan the   crab festival for next spring, with music and food stalls and a parade\nmore",
        ),
    )
    .await;
    Turn::run(&client, message("crab", "ann", "second message")).await;
    let info = listed(&client, "ann").await;
    assert_eq!(
        info.title,
        "Plan the crab festival for next spring, with music and food…"
    );
    // The title is kept across a restart (it is in the metadata file).
    let mut daemon = daemon;
    daemon.restart().await;
    let client = daemon.client().await;
    assert_eq!(
        listed(&client, "ann").await.title,
        "Plan the crab festival for next spring, with music and food…"
    );
}

#[tokio::test]
async fn a_fresh_start_keeps_the_old_messages_and_sends_none_of_them() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.set_default(Reply::text("noted"));
    let client = daemon.client().await;
    Turn::run(&client, message("crab", "bo", "my cat is called Miso")).await;
    Turn::run(&client, message("crab", "bo", "and my dog is Tofu")).await;

    let fresh = client
        .compact(CompactMsg {
            agent: "crab".into(),
            sender: "bo".into(),
            fresh: true,
        })
        .await
        .unwrap();
    assert_eq!(fresh.summary, "");
    // No model was asked for a summary.
    assert_eq!(llm.requests().len(), 2);

    Turn::run(&client, message("crab", "bo", "what are we talking about?")).await;
    let request = llm.requests().last().unwrap().to_string();
    assert!(
        !request.contains("Miso") && !request.contains("Tofu"),
        "{request}"
    );
    assert!(
        !request.contains("Summary of the earlier part"),
        "{request}"
    );

    // The old messages are still in the log, before an empty marker.
    let info = listed(&client, "bo").await;
    assert_eq!(info.title, "what are we talking about?");
    let history = client
        .get_conversation_history(GetConversationHistoryMsg {
            file_path: info.file_path.clone(),
        })
        .await
        .unwrap();
    let roles: Vec<(&str, &str)> = history
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(
        roles,
        [
            ("user", "my cat is called Miso"),
            ("assistant", "noted"),
            ("user", "and my dog is Tofu"),
            ("assistant", "noted"),
            ("compact", ""),
            ("user", "what are we talking about?"),
            ("assistant", "noted"),
        ]
    );
    // A conversation that was never started has nothing to start afresh.
    client
        .compact(CompactMsg {
            agent: "crab".into(),
            sender: "nobody".into(),
            fresh: true,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn subscribers_see_who_said_what_in_which_conversation() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "owl".into(),
            config: "{}".into(),
            prompt: "You are Owl.".into(),
        })
        .await
        .unwrap();
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();

    llm.push(Reply::text("hello from crab"));
    let turn = Turn::run(&client, message("crab", "cy", "hi there")).await;
    let Some(Event::Start(start)) = turn.events.first() else {
        panic!("{turn:?}");
    };
    assert!(start.run_id > 0);
    let mut seen = Vec::new();
    within("the turn's events", async {
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            let done = event.kind == AgentEventKind::Done as i32;
            seen.push(event);
            if done {
                return;
            }
        }
    })
    .await;
    let first = &seen[0];
    assert_eq!(first.kind, AgentEventKind::UserMessage as i32, "{seen:?}");
    assert_eq!(
        (first.content.as_str(), first.sender.as_str()),
        ("hi there", "cy")
    );
    assert!(seen.iter().all(|e| e.run_id == start.run_id), "{seen:?}");
    assert!(seen.iter().all(|e| e.conversation_agent == "crab"));

    // A guest speaks in crab's conversation: the speaker is the guest.
    llm.push(Reply::text("hoot"));
    let mut request = message("crab", "cy", "owl, your view?");
    request.guest = Some("owl".into());
    Turn::run(&client, request).await;
    let done = within("the guest turn's done", async {
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.kind == AgentEventKind::Done as i32 {
                return event;
            }
        }
    })
    .await;
    assert_eq!(
        (done.agent.as_str(), done.conversation_agent.as_str()),
        ("owl", "crab")
    );
}

#[tokio::test]
async fn the_models_say_where_the_default_comes_from_and_a_switch_says_it_is_not_saved() {
    let llm = ScriptedLlm::start().await;
    let config = TestDaemon::config_for(&llm.base_url()).replace(
        r#"models = ["scripted"]"#,
        r#"models = ["scripted", "other"]"#,
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    let client = daemon.client().await;
    let list = client.list_models(ListModelsMsg {}).await.unwrap();
    assert_eq!(list.active_source, "default_model in config.toml");

    let pong = client
        .set_active_model(SetActiveModelMsg {
            model: "other".into(),
        })
        .await
        .unwrap();
    assert_eq!(pong.notes.len(), 1, "{pong:?}");
    assert!(
        pong.notes[0].contains("not saved")
            && pong.notes[0].contains("default_model = \"scripted\""),
        "{pong:?}"
    );
    let list = client.list_models(ListModelsMsg {}).await.unwrap();
    assert!(
        list.active_source.contains("not saved"),
        "{}",
        list.active_source
    );
    // An unknown model is refused in a sentence, without a status code.
    let err = client
        .set_active_model(SetActiveModelMsg {
            model: "nosuch".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
    assert_eq!(
        err.to_string(),
        "model \"nosuch\" is not served by any configured provider; known models: other, scripted"
    );
}
