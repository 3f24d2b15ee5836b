//! What the daemon finds after crashes and leftovers, on the real binary:
//! renames onto what a deleted agent left, temp files of interrupted
//! writes, message counts whose sidecars lag, a message too big to show.

use crabtalk_proto::Client;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, poll_until};
use serde_json::Value;

async fn turn(llm: &ScriptedLlm, client: &Client, agent: &str, sender: &str, text: &str) {
    llm.push(Reply::text("ok"));
    let turn = Turn::run(client, message(agent, sender, text)).await;
    assert_eq!(turn.text(), "ok");
}

async fn conversations(client: &Client, agent: &str) -> Vec<ConversationInfo> {
    client
        .list_conversations(ListConversationsMsg {
            agent: agent.into(),
            sender: String::new(),
        })
        .await
        .unwrap()
        .conversations
}

#[tokio::test]
async fn a_rename_onto_what_a_deleted_agent_left_is_refused_before_anything_moves() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    for name in ["scout", "ranger"] {
        client
            .create_agent(CreateAgentMsg {
                name: name.into(),
                ..Default::default()
            })
            .await
            .unwrap();
        turn(&llm, &client, name, "user", "hello").await;
    }
    client
        .delete_agent(DeleteAgentMsg {
            name: "scout".into(),
        })
        .await
        .unwrap();
    assert!(daemon.path().join("sessions/scout").is_dir(), "left behind");

    let err = client
        .rename_agent(RenameAgentMsg {
            old_name: "ranger".into(),
            new_name: "scout".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(409), "{err}");
    assert!(
        err.to_string().contains("sessions/scout") && err.to_string().contains("move it aside"),
        "{err}"
    );
    // Nothing moved: ranger is whole, with its conversation.
    assert!(daemon.path().join("agents/ranger.toml").is_file());
    assert!(!daemon.path().join("agents/scout.toml").exists());
    client
        .get_agent(GetAgentMsg {
            name: "ranger".into(),
        })
        .await
        .unwrap();
    assert_eq!(conversations(&client, "ranger").await.len(), 1);
    turn(&llm, &client, "ranger", "user", "still here").await;

    // Once the leftovers are moved aside, the rename goes through.
    std::fs::rename(
        daemon.path().join("sessions/scout"),
        daemon.path().join("scout-archive"),
    )
    .unwrap();
    client
        .rename_agent(RenameAgentMsg {
            old_name: "ranger".into(),
            new_name: "scout".into(),
        })
        .await
        .unwrap();
    assert_eq!(conversations(&client, "scout").await[0].message_count, 4);
}

#[tokio::test]
async fn temp_files_left_by_interrupted_writes_are_removed_at_start() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    turn(&llm, &client, "crab", "user", "hello").await;
    drop(client);
    daemon.kill9();
    let dead = u32::MAX - 11;
    let live = std::process::id();
    let home = daemon.path().to_owned();
    let leftovers = [
        home.join(format!("memory/.crab.crmem.{dead}.0.tmp")),
        home.join(format!("agents/.crab.toml.{dead}.3.tmp")),
        home.join(format!("sessions/crab/.user.meta.json.{dead}.7.tmp")),
        home.join(format!(".subscriptions.json.{dead}.1.tmp")),
        home.join(format!("run/.crabtalk.port.{dead}.2.tmp")),
    ];
    // A writer that still runs may be in the middle of its write.
    let in_progress = home.join(format!("memory/.crab.crmem.{live}.0.tmp"));
    std::fs::create_dir_all(home.join("memory")).unwrap();
    for file in leftovers.iter().chain([&in_progress]) {
        std::fs::write(file, "a copy").unwrap();
    }
    daemon.spawn().await;
    for file in &leftovers {
        assert!(!file.exists(), "{} is still there", file.display());
    }
    assert!(in_progress.exists());
    assert!(home.join("memory").is_dir() && home.join("sessions/crab").is_dir());
}

#[tokio::test]
async fn message_counts_are_true_after_a_crash() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let senders: Vec<String> = (0..6).map(|i| format!("user{i}")).collect();
    // Several turns in a row: the sidecar is rewritten at most once a
    // second, so the last counts are only in the logs when the daemon dies.
    for sender in &senders {
        for i in 0..3 {
            turn(&llm, &client, "crab", sender, &format!("message {i}")).await;
        }
    }
    drop(client);
    daemon.kill9();
    daemon.spawn().await;
    let client = daemon.client().await;
    poll_until("the listing to show every message", async || {
        let listed = conversations(&client, "crab").await;
        let counts: Vec<u64> = listed.iter().map(|info| info.message_count).collect();
        (listed.len() == senders.len() && counts.iter().all(|&count| count == 6)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_message_too_big_to_show_is_cut_and_the_newest_are_still_shown() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    turn(&llm, &client, "crab", "user", "hello").await;
    let handle = conversations(&client, "crab").await[0].file_path.clone();
    drop(client);
    daemon.stop().await;

    // Two more messages written as the daemon writes them: a 12 MiB one and
    // a short answer after it.
    let log = daemon.path().join("sessions/crab/user.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut template: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let mut append = String::new();
    template["content"] = Value::from("y".repeat(12 * 1024 * 1024));
    append.push_str(&template.to_string());
    append.push('\n');
    template["role"] = Value::from("assistant");
    template["content"] = Value::from("the newest answer");
    append.push_str(&template.to_string());
    append.push('\n');
    std::fs::write(&log, format!("{text}{append}")).unwrap();

    daemon.spawn().await;
    let client = daemon.client().await;
    let history = client
        .get_conversation_history(GetConversationHistoryMsg { file_path: handle })
        .await
        .unwrap();
    let contents: Vec<&str> = history
        .messages
        .iter()
        .map(|message| message.content.as_str())
        .collect();
    assert_eq!(contents.len(), 4, "nothing left out");
    assert_eq!(contents[0], "hello");
    assert!(
        contents[2].starts_with("yyyy")
            && contents[2].ends_with(&format!(
                "[message cut for the history view: {} bytes, the first 262144 shown]",
                12 * 1024 * 1024
            )),
        "{}",
        &contents[2][contents[2].len() - 120..]
    );
    assert_eq!(contents[3], "the newest answer");
}
