//! The administrative operations of the protocol on the real daemon.

use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary, poll_until};

#[tokio::test]
async fn ping_reports_versions_and_stats_count_things() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let pong = client.ping().await.unwrap();
    assert_eq!(pong.protocol, crabtalk_proto::PROTOCOL);
    assert!(!pong.server_version.is_empty());
    llm.push(Reply::text("hi"));
    Turn::run(&client, message("crab", "user", "hello")).await;
    let stats = client.get_stats(GetStats {}).await.unwrap();
    assert_eq!(stats.registered_agents, 2, "crab and the built-in worker");
    assert_eq!(stats.active_conversations, 1);
    assert_eq!(stats.active_model, "scripted");
    let active = client
        .list_active_conversations(ListActiveConversationsMsg::default())
        .await
        .unwrap();
    assert_eq!(active.conversations.len(), 1);
    assert_eq!(active.conversations[0].message_count, 2);
}

#[tokio::test]
async fn agents_can_be_created_read_updated_renamed_and_deleted() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let config = r#"{"description":"finds things","max_iterations":4,"mcps":[{"name":"gh","command":"gh-mcp","env":{"TOKEN":"ghp_secret"},"auth":"Bearer x"}]}"#;
    let created = client
        .create_agent(CreateAgentMsg {
            name: "scout".into(),
            config: config.into(),
            prompt: "You are Scout.".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        (created.description.as_str(), created.max_iterations),
        ("finds things", 4)
    );
    assert_eq!(created.mcps, ["gh"]);
    assert!(
        !created.config.contains("ghp_secret") && !created.config.contains("Bearer x"),
        "{}",
        created.config
    );
    assert!(
        daemon.path().join("agents/scout.toml").exists()
            && daemon.path().join("agents/scout.md").exists()
    );

    let duplicate = client
        .create_agent(CreateAgentMsg {
            name: "Scout".into(),
            config: String::new(),
            prompt: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(duplicate.code(), Some(409));
    let bad_name = client
        .create_agent(CreateAgentMsg {
            name: "../evil".into(),
            config: String::new(),
            prompt: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad_name.code(), Some(400));
    let bad_json = client
        .create_agent(CreateAgentMsg {
            name: "x".into(),
            config: "{not json".into(),
            prompt: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad_json.code(), Some(400));
    // A misspelt key is refused, not dropped (it could be a restriction).
    let typo = client
        .create_agent(CreateAgentMsg {
            name: "y".into(),
            config: r#"{"tols":["read"]}"#.into(),
            prompt: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(typo.code(), Some(400));
    assert!(
        typo.to_string()
            .contains("unknown key `tols`; did you mean `tools`?"),
        "{typo}"
    );

    let updated = client
        .update_agent(UpdateAgentMsg {
            name: "scout".into(),
            config: r#"{"max_iterations":9}"#.into(),
            prompt: String::new(),
        })
        .await
        .unwrap();
    assert_eq!(updated.max_iterations, 9);
    assert_eq!(
        std::fs::read_to_string(daemon.path().join("agents/scout.md")).unwrap(),
        "You are Scout.",
        "an empty prompt keeps the prompt"
    );

    llm.push(Reply::text("scouting"));
    Turn::run(&client, message("scout", "user", "go")).await;
    let renamed = client
        .rename_agent(RenameAgentMsg {
            old_name: "scout".into(),
            new_name: "ranger".into(),
        })
        .await
        .unwrap();
    assert_eq!(renamed.name, "ranger");
    let conversations = client
        .list_conversations(ListConversationsMsg {
            agent: "ranger".into(),
            sender: String::new(),
        })
        .await
        .unwrap();
    assert_eq!(
        conversations.conversations.len(),
        1,
        "conversations follow the rename"
    );
    assert_eq!(conversations.conversations[0].agent, "ranger");
    let missing = client
        .get_agent(GetAgentMsg {
            name: "scout".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Some(404));

    client
        .delete_agent(DeleteAgentMsg {
            name: "ranger".into(),
        })
        .await
        .unwrap();
    let agents: Vec<String> = client
        .list_agents(ListAgentsMsg {})
        .await
        .unwrap()
        .agents
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(agents, ["crab", "worker"]);
    let builtin = client
        .delete_agent(DeleteAgentMsg {
            name: "worker".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(builtin.code(), Some(409));
    let default = client
        .delete_agent(DeleteAgentMsg {
            name: "crab".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(default.code(), Some(409));
}

#[tokio::test]
async fn conversations_are_listed_read_and_deleted_by_handle() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    llm.push(Reply::text("one"));
    Turn::run(&client, message("crab", "alice", "hello")).await;
    llm.push(Reply::text("two"));
    Turn::run(&client, message("crab", "bob", "hey")).await;

    let alice = client
        .list_conversations(ListConversationsMsg {
            agent: String::new(),
            sender: "alice".into(),
        })
        .await
        .unwrap();
    assert_eq!(alice.conversations.len(), 1);
    let info = &alice.conversations[0];
    assert_eq!((info.agent.as_str(), info.message_count), ("crab", 2));
    let history = client
        .get_conversation_history(GetConversationHistoryMsg {
            file_path: info.file_path.clone(),
        })
        .await
        .unwrap();
    let pairs: Vec<(&str, &str)> = history
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(pairs, [("user", "hello"), ("assistant", "one")]);
    assert_eq!(history.agent, "crab");

    for bad in ["../../etc/passwd", "/etc/passwd", "crab/../crab/alice", ""] {
        let err = client
            .get_conversation_history(GetConversationHistoryMsg {
                file_path: bad.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(400), "{bad}: {err}");
    }
    let err = client
        .get_conversation_history(GetConversationHistoryMsg {
            file_path: "crab/nobody".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));

    client
        .delete_conversation(DeleteConversationMsg {
            file_path: info.file_path.clone(),
        })
        .await
        .unwrap();
    let all = client
        .list_conversations(ListConversationsMsg::default())
        .await
        .unwrap();
    let senders: Vec<&str> = all
        .conversations
        .iter()
        .map(|c| c.sender.as_str())
        .collect();
    assert_eq!(senders, ["bob"]);
    // A deleted conversation starts afresh.
    llm.push(Reply::text("new"));
    Turn::run(&client, message("crab", "alice", "again")).await;
    let contents: Vec<String> = llm.requests()[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(contents, ["again"]);
}

#[tokio::test]
async fn models_are_listed_and_switched() {
    let llm = ScriptedLlm::start().await;
    let config = format!(
        "[[providers]]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodels = [\"small\", \"large\"]\n[transport]\ntcp = \"off\"\n",
        llm.base_url()
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    let client = daemon.client().await;
    let models = client.list_models(ListModelsMsg {}).await.unwrap().models;
    let listed: Vec<(&str, bool)> = models.iter().map(|m| (m.name.as_str(), m.active)).collect();
    assert_eq!(listed, [("large", false), ("small", true)]);
    client
        .set_active_model(SetActiveModelMsg {
            model: "large".into(),
        })
        .await
        .unwrap();
    let err = client
        .set_active_model(SetActiveModelMsg {
            model: "huge".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
    assert!(err.to_string().contains("large, small"), "{err}");
    llm.push(Reply::text("big answer"));
    let turn = Turn::run(&client, message("crab", "user", "hi")).await;
    assert_eq!(turn.end().model, "large");
    assert_eq!(llm.requests()[0]["model"], "large");
}

#[tokio::test]
async fn config_is_shown_redacted_and_reload_picks_up_changes() {
    let llm = ScriptedLlm::start().await;
    let config = format!(
        "[[providers]]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\napi_key = \"sk-very-secret\"\nmodels = [\"scripted\"]\n[transport]\ntcp = \"off\"\n[env]\nGH_TOKEN = \"ghp_hidden\"\n",
        llm.base_url()
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    let client = daemon.client().await;
    let shown = client.get_config(GetConfig {}).await.unwrap().config;
    assert!(
        !shown.contains("sk-very-secret") && !shown.contains("ghp_hidden"),
        "{shown}"
    );
    assert!(
        shown.contains("GH_TOKEN") && shown.contains("<redacted>"),
        "{shown}"
    );

    // A new agent file and a second model appear after reload.
    std::fs::write(
        daemon.path().join("agents/owl.toml"),
        "description = \"wise\"\n",
    )
    .unwrap();
    std::fs::write(
        daemon.path().join("config.toml"),
        config.replace(
            "models = [\"scripted\"]",
            "models = [\"scripted\", \"other\"]",
        ),
    )
    .unwrap();
    client.reload(ReloadMsg {}).await.unwrap();
    let owl = client
        .get_agent(GetAgentMsg { name: "owl".into() })
        .await
        .unwrap();
    assert_eq!(owl.description, "wise");
    assert_eq!(
        client
            .list_models(ListModelsMsg {})
            .await
            .unwrap()
            .models
            .len(),
        2
    );

    // A broken config is refused and the running one stays.
    std::fs::write(daemon.path().join("config.toml"), "default_agent = [\n").unwrap();
    let err = client.reload(ReloadMsg {}).await.unwrap_err();
    assert_eq!(err.code(), Some(400));
    assert!(err.to_string().contains("config.toml:"), "{err}");
    assert_eq!(
        client
            .list_models(ListModelsMsg {})
            .await
            .unwrap()
            .models
            .len(),
        2
    );
}

#[tokio::test]
async fn idle_conversations_are_evicted_and_reloaded_on_demand() {
    let llm = ScriptedLlm::start().await;
    let config = TestDaemon::config_for(&llm.base_url())
        .replace("[llm]\n", "[conversations]\nmax_in_memory = 2\n\n[llm]\n");
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    let client = daemon.client().await;
    for sender in ["a", "b", "c", "d"] {
        llm.push(Reply::text(&format!("hi {sender}")));
        Turn::run(&client, message("crab", sender, &format!("I am {sender}"))).await;
    }
    // The cap is enforced as each turn lets go of its conversation.
    poll_until("eviction down to the cap", async || {
        let active = client
            .list_active_conversations(ListActiveConversationsMsg::default())
            .await
            .unwrap();
        (active.conversations.len() <= 2).then_some(())
    })
    .await;
    llm.push(Reply::text("still here"));
    Turn::run(&client, message("crab", "a", "remember me?")).await;
    let text = llm.requests().last().unwrap().to_string();
    assert!(
        text.contains("I am a") && text.contains("hi a"),
        "a reloaded conversation keeps its history: {text}"
    );
}

#[tokio::test]
async fn conversations_idle_past_the_reloaded_limit_leave_memory_and_come_back_whole() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let active = || async {
        client
            .get_stats(GetStats {})
            .await
            .unwrap()
            .active_conversations
    };
    llm.push(Reply::text("hi a"));
    Turn::run(&client, message("crab", "a", "I am a")).await;
    assert_eq!(active().await, 1);

    // The default idle time is half an hour; a reload makes it a second.
    let config = TestDaemon::config_for(&llm.base_url())
        .replace("[llm]\n", "[conversations]\nidle_evict_secs = 1\n\n[llm]\n");
    std::fs::write(daemon.path().join("config.toml"), config).unwrap();
    client.reload(ReloadMsg {}).await.unwrap();
    let reloaded = std::time::Instant::now();
    poll_until("eviction of the idle conversation", async || {
        (active().await == 0).then_some(())
    })
    .await;
    // At most an idle time plus a sweep (half of it) after the reload.
    assert!(
        reloaded.elapsed() < std::time::Duration::from_secs(5),
        "evicted after {:?}",
        reloaded.elapsed()
    );

    llm.push(Reply::text("welcome back"));
    let turn = Turn::run(&client, message("crab", "a", "remember me?")).await;
    assert_eq!(turn.text(), "welcome back");
    let text = llm.requests().last().unwrap().to_string();
    assert!(
        text.contains("I am a") && text.contains("hi a"),
        "the conversation is read back from disk: {text}"
    );
}
