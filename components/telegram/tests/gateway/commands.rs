//! Commands: the menu, /stop, /new, /agent, /help, skills.

use std::time::Duration;

use crabtalk_testkit::Reply;

use crate::support::{Setup, alice, all_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_skills_are_registered_and_unknown_ones_get_help() {
    let mut setup = Setup::start("").await;
    let skill = setup.daemon.path().join("skills").join("daily-report");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: daily-report\ndescription: Write the daily report\n---\nWrite a short daily report.\n",
    )
    .unwrap();
    setup.start_gateway().await;
    setup
        .api
        .wait_until("the skill in the menu", |api| {
            api.commands()
                .iter()
                .any(|c| c["command"] == "daily_report")
        })
        .await;
    let names: Vec<String> = setup
        .api
        .commands()
        .iter()
        .map(|c| c["command"].as_str().unwrap().to_owned())
        .collect();
    for own in ["start", "help", "new", "stop", "agent"] {
        assert!(names.contains(&own.to_string()), "{names:?}");
    }
    let chat = alice().id;
    setup.api.text(&alice(), "/nope");
    let help = setup.api.wait_for_text(chat, "I don't know /nope").await;
    assert!(help.text.contains("/daily_report"), "{}", help.text);
    setup.llm.push(Reply::text("report written"));
    setup.api.text(&alice(), "/daily_report for today");
    setup.api.wait_for_text(chat, "report written").await;
    let saw = setup.model_saw(0);
    assert!(
        saw.contains("Write a short daily report.") && saw.contains("for today"),
        "{saw}"
    );
    setup.api.text(&alice(), "/agent");
    setup.api.wait_for_text(chat, "This chat talks to").await;
    setup.api.text(&alice(), "/agent nobody");
    setup
        .api
        .wait_for_text(chat, "no agent called nobody")
        .await;
    setup.api.text(&alice(), "/start");
    setup.api.wait_for_text(chat, "Hello!").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_running_turn_within_two_seconds() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::Stall("thinking about it".into()));
    setup.api.text(&alice(), "long job");
    setup.api.wait_for_text(chat, "thinking about it").await;
    let asked = tokio::time::Instant::now();
    setup.api.text(&alice(), "/stop");
    setup.api.wait_for_text(chat, "⏹ Stopped.").await;
    let stopped = setup
        .api
        .calls()
        .into_iter()
        .filter(|c| c.params.to_string().contains("Stopped."))
        .map(|c| c.at)
        .next()
        .unwrap();
    assert!(
        stopped - asked < Duration::from_secs(2),
        "stopped {:?} after /stop",
        stopped - asked
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_compacts_the_conversation() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::text("noted: blue"));
    setup.api.text(&alice(), "my favourite colour is blue");
    setup.api.wait_for_text(chat, "noted: blue").await;
    setup.llm.push(Reply::text("SUMMARY: the user likes blue."));
    setup.api.text(&alice(), "/new");
    setup.api.wait_for_text(chat, "New conversation").await;
    setup.llm.push(Reply::text("fresh start"));
    setup.api.text(&alice(), "hello again");
    setup.api.wait_for_text(chat, "fresh start").await;
    let last = setup.llm.requests().last().unwrap().to_string();
    assert!(last.contains("SUMMARY: the user likes blue."), "{last}");
    assert!(!last.contains("my favourite colour is blue"), "{last}");
}

/// The system prompt of the `n`th model request.
fn system_prompt(setup: &Setup, n: usize) -> String {
    setup.llm.requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_switches_the_chat_and_an_unknown_name_keeps_the_current_one() {
    let mut setup = Setup::start("").await;
    let agents = setup.daemon.path().join("agents");
    std::fs::write(
        agents.join("other.toml"),
        "description = \"the other one\"\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("other.md"),
        "You are OTHER-AGENT, the second agent.\n",
    )
    .unwrap();
    setup
        .daemon
        .client()
        .await
        .reload(crabtalk_proto::msg::ReloadMsg {})
        .await
        .unwrap();
    setup.start_gateway().await;
    let chat = alice().id;

    setup.llm.push(Reply::text("default here"));
    setup.api.text(&alice(), "who are you");
    setup.api.wait_for_text(chat, "default here").await;
    assert!(!system_prompt(&setup, 0).contains("OTHER-AGENT"));

    setup.api.text(&alice(), "/agent other");
    setup
        .api
        .wait_for_text(chat, "This chat now talks to other.")
        .await;
    setup.llm.push(Reply::text("other here"));
    setup.api.text(&alice(), "and now?");
    setup.api.wait_for_text(chat, "other here").await;
    assert!(
        system_prompt(&setup, 1).contains("You are OTHER-AGENT"),
        "{}",
        system_prompt(&setup, 1)
    );
    // The other agent's conversation starts afresh.
    assert!(!all_text(&setup.llm.requests()[1]).contains("who are you"));

    setup.api.text(&alice(), "/agent nonexistent");
    setup
        .api
        .wait_for_text(chat, "There is no agent called nonexistent")
        .await;
    setup.llm.push(Reply::text("still other"));
    setup.api.text(&alice(), "still you?");
    setup.api.wait_for_text(chat, "still other").await;
    let prompt = system_prompt(&setup, 2);
    assert!(prompt.contains("You are OTHER-AGENT"), "{prompt}");

    // The choice outlives the gateway.
    setup.kill9_gateway();
    setup.start_gateway().await;
    setup.llm.push(Reply::text("other after a restart"));
    setup.api.text(&alice(), "after the restart?");
    setup.api.wait_for_text(chat, "other after a restart").await;
    let prompt = system_prompt(&setup, 3);
    assert!(prompt.contains("You are OTHER-AGENT"), "{prompt}");
    setup.api.text(&alice(), "/agent");
    setup
        .api
        .wait_for_text(chat, "This chat talks to other.")
        .await;
}
