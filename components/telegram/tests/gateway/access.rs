//! Who reaches the agent: the allow-list, pairing, groups.

use std::process::Command;

use crabtalk_fake_bot_api::TgUser;
use crabtalk_testkit::Reply;

use crate::support::{BIN, Setup, alice, mallory};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_allow_list_lets_nobody_in() {
    let mut setup = Setup::start("allow = []").await;
    setup.start_gateway().await;
    let first = setup.api.text(&alice(), "hello?");
    setup
        .api
        .wait_until("the update to be confirmed", |api| {
            api.pending_updates() == 0
                && api
                    .calls_of("getUpdates")
                    .iter()
                    .any(|c| c.params["offset"].as_i64() == Some(first + 1))
        })
        .await;
    assert!(
        setup.llm.requests().is_empty(),
        "nobody may talk, yet the model was asked"
    );
    assert!(
        setup.api.messages(alice().id).is_empty(),
        "a stranger got an answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allowed_users_reach_the_agent() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.llm.push(Reply::text("hi Alice"));
    setup.api.text(&mallory(), "let me in");
    setup.api.text(&alice(), "hello");
    setup.api.wait_for_text(alice().id, "hi Alice").await;
    assert_eq!(setup.llm.requests().len(), 1);
    assert_eq!(setup.model_saw(0), "hello");
    assert!(setup.api.messages(mallory().id).is_empty());
}

fn pair(setup: &Setup, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("pair")
        .args(args)
        .env("CRABTALK_HOME", setup.daemon.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_codes_are_bounded_and_approved_only_on_the_machine() {
    let mut setup = Setup::start("allow = []\npairing = true").await;
    setup.start_gateway().await;
    let bob = TgUser::new(222, "Bob");
    setup.api.text(&bob, "hi");
    let first = setup
        .api
        .wait_for_text(bob.id, "give the owner this code")
        .await;
    let code: String = first
        .text
        .split("this code: ")
        .nth(1)
        .unwrap()
        .chars()
        .take(6)
        .collect();
    assert_eq!(code.len(), 6, "{}", first.text);
    // A chat cannot approve itself.
    setup.api.text(&bob, &format!("/approve {code}"));
    setup.api.text(&bob, "please");
    let last = setup.api.text(&bob, "pretty please");
    setup
        .api
        .wait_until("the stranger's messages to be handled", |api| {
            api.calls_of("getUpdates")
                .iter()
                .any(|c| c.params["offset"].as_i64() == Some(last + 1))
        })
        .await;
    setup
        .api
        .wait_until("two answers to the stranger", |api| {
            api.messages(bob.id).len() >= 2
        })
        .await;
    assert!(setup.llm.requests().is_empty());
    let listed = pair(&setup, &["list"]);
    assert!(listed.contains(&code) && listed.contains("Bob"), "{listed}");
    pair(&setup, &["approve", &code.to_lowercase()]);
    setup.llm.push(Reply::text("welcome, Bob"));
    setup.api.text(&bob, "am I in?");
    setup.api.wait_for_text(bob.id, "welcome, Bob").await;
    assert_eq!(setup.model_saw(0), "am I in?");
    // Replies in a chat go out in order: anything queued before the
    // welcome is there now. Two answers to a stranger, no more.
    let codes = setup
        .api
        .messages(bob.id)
        .iter()
        .filter(|m| m.text.contains("this code"))
        .count();
    assert_eq!(codes, 2, "{:?}", setup.api.messages(bob.id));
    // Revoked: out again.
    pair(&setup, &["revoke", "222"]);
    let after = setup.api.text(&bob, "still there?");
    setup
        .api
        .wait_until("the revoked user's message to be handled", |api| {
            api.calls_of("getUpdates")
                .iter()
                .any(|c| c.params["offset"].as_i64() == Some(after + 1))
        })
        .await;
    assert_eq!(setup.llm.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_answer_only_when_addressed_and_name_the_speaker() {
    let group = -100_500;
    let mut setup = Setup::start(&format!("allow = [111, 333]\ngroups = [{group}]")).await;
    setup.start_gateway().await;
    let carol = TgUser::new(333, "Carol");
    setup
        .api
        .group_text(group, &carol, "talking among ourselves", false);
    setup
        .api
        .group_text(-100_999, &carol, "@crab_test_bot over here", false);
    setup.llm.push(Reply::text("at your service"));
    setup
        .api
        .group_text(group, &carol, "@crab_test_bot what time is it", false);
    let answer = setup.api.wait_for_text(group, "at your service").await;
    assert_eq!(setup.llm.requests().len(), 1);
    assert_eq!(setup.model_saw(0), "Carol (@carol): what time is it");
    setup.llm.push(Reply::text("replying to a reply"));
    setup.api.group_text(group, &carol, "and now?", true);
    setup.api.wait_for_text(group, "replying to a reply").await;
    assert_eq!(setup.llm.requests().len(), 2);
    assert!(setup.api.messages(-100_999).is_empty());
    let _ = answer;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_without_require_mention_hears_everything_and_topics_are_conversations() {
    let group = -100_600;
    let mut setup = Setup::start(&format!(
        "allow = [111, 333]\ngroups = [{group}]\nrequire_mention = false"
    ))
    .await;
    setup.start_gateway().await;
    let carol = TgUser::new(333, "Carol");
    setup.llm.push(Reply::text("heard you"));
    setup.api.topic_text(group, 7, &carol, "no mention here");
    let answer = setup.api.wait_for_text(group, "heard you").await;
    assert_eq!(answer.topic, Some(7));
    let client = setup.daemon.client().await;
    let list = client
        .list_conversations(crabtalk_proto::msg::ListConversationsMsg::default())
        .await
        .unwrap();
    assert!(
        list.conversations
            .iter()
            .any(|c| c.sender == format!("tg:{group}:7")),
        "{list:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_becomes_a_supergroup_keeps_its_conversation() {
    let (old, new) = (-4_000, -1_004_000);
    let mut setup = Setup::start(&format!(
        "allow = [111, 333]\ngroups = [{old}]\nrequire_mention = false"
    ))
    .await;
    setup.start_gateway().await;
    let carol = TgUser::new(333, "Carol");
    setup.llm.push(Reply::text("first answer"));
    setup.api.group_text(old, &carol, "remember 42", false);
    setup.api.wait_for_text(old, "first answer").await;
    setup.api.migrate(old, new, &carol);
    setup.llm.push(Reply::text("second answer"));
    setup.api.group_text(new, &carol, "what did I say?", false);
    setup.api.wait_for_text(new, "second answer").await;
    let second = setup.llm.requests()[1].to_string();
    assert!(
        second.contains("remember 42"),
        "the conversation was not kept: {second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_listed_group_only_allowed_members_are_answered_unless_the_group_is_open() {
    let (listed, open) = (-100_800, -100_801);
    let mut setup = Setup::start(&format!(
        "groups = [{listed}]\nopen_groups = [{open}]\nrequire_mention = false"
    ))
    .await;
    setup.start_gateway().await;
    // Mallory was added to the listed group: she is no allowed user, so
    // nothing she says there reaches the agent, nor does her button press.
    setup
        .api
        .group_text(listed, &mallory(), "run `id` for me", false);
    // Alice is allowed: she is answered in the same group, after Mallory.
    setup.llm.push(Reply::text("hello alice"));
    setup.api.group_text(listed, &alice(), "hi", false);
    setup.api.wait_for_text(listed, "hello alice").await;
    assert_eq!(setup.llm.requests().len(), 1);
    assert_eq!(setup.model_saw(0), "Alice (@alice): hi");
    // In the open group every member speaks, Mallory too, as the group's
    // gateway sender.
    setup.llm.push(Reply::text("hello everyone"));
    setup.api.group_text(open, &mallory(), "hi all", false);
    setup.api.wait_for_text(open, "hello everyone").await;
    assert_eq!(setup.llm.requests().len(), 2);
    let client = setup.daemon.client().await;
    let list = client
        .list_conversations(crabtalk_proto::msg::ListConversationsMsg::default())
        .await
        .unwrap();
    let senders: Vec<&str> = list
        .conversations
        .iter()
        .map(|c| c.sender.as_str())
        .collect();
    assert!(
        senders.contains(&format!("tg:{open}").as_str()),
        "{senders:?}"
    );
    assert!(
        senders.contains(&format!("tg:{listed}").as_str()),
        "{senders:?}"
    );
}
