//! Downloads beside the poll loop: one slow file stalls no other chat,
//! a chat's own messages keep their order, downloads are bounded, and a
//! message waiting for its file survives a crash.

use crabtalk_fake_bot_api::TgUser;
use crabtalk_testkit::Reply;

use crate::support::{Setup, alice};

fn bob() -> TgUser {
    TgUser::new(222, "Bob")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_download_holds_up_no_other_chat_and_its_own_chat_keeps_order() {
    let mut setup = Setup::start("allow = [111, 222]").await;
    setup.start_gateway().await;
    setup.llm.set_default(Reply::text("noted"));
    setup.api.add_file("slow-photo", b"\xff\xd8 slow");
    setup.api.hold_downloads();
    setup.api.photo(&alice(), "slow-photo", 7, "first, a photo");
    setup
        .api
        .wait_until("the download to begin", |api| api.downloads() == 1)
        .await;
    setup.api.text(&alice(), "then this");
    setup.llm.push(Reply::text("bob is answered"));
    setup.api.text(&bob(), "hello");
    // Bob's reply comes while Alice's file is still on its way.
    setup.api.wait_for_text(bob().id, "bob is answered").await;
    assert_eq!(setup.llm.requests().len(), 1, "alice's messages went ahead");
    setup.api.release_downloads();
    setup
        .api
        .wait_until("both of alice's replies", |api| {
            api.messages(alice().id).len() == 2
        })
        .await;
    assert!(
        setup
            .model_saw(1)
            .starts_with("first, a photo\n[photo saved at "),
        "{}",
        setup.model_saw(1)
    );
    assert_eq!(setup.model_saw(2), "then this");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_downloads_run_at_once() {
    let users: Vec<TgUser> = (1..=6)
        .map(|i| TgUser::new(1000 + i, &format!("User{i}")))
        .collect();
    let allow: Vec<String> = users.iter().map(|u| u.id.to_string()).collect();
    let mut setup = Setup::start(&format!("allow = [111, {}]", allow.join(", "))).await;
    setup.start_gateway().await;
    setup.llm.set_default(Reply::text("got it"));
    setup.api.hold_downloads();
    for (i, user) in users.iter().enumerate() {
        let file = format!("file-{i}");
        setup.api.add_file(&file, b"bytes");
        setup.api.photo(user, &file, 5, "");
    }
    setup
        .api
        .wait_until("four downloads", |api| api.downloads() == 4)
        .await;
    // Every update after the photos was handled: the loop is past them.
    setup.api.text(&alice(), "are you there?");
    setup.api.wait_for_text(alice().id, "got it").await;
    assert_eq!(setup.api.downloads(), 4, "more than four downloads at once");
    setup.api.release_downloads();
    for user in &users {
        setup.api.wait_for_text(user.id, "got it").await;
    }
    assert_eq!(setup.api.downloads(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_waiting_for_its_file_survives_kill_9() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    setup.api.add_file("photo-k", b"\xff\xd8 kept");
    setup.api.hold_downloads();
    let id = setup.api.photo(&alice(), "photo-k", 7, "keep this");
    setup
        .api
        .wait_until("the download to begin", |api| api.downloads() == 1)
        .await;
    // Handled as far as Telegram is concerned: written down to wait.
    crabtalk_testkit::eventually("the offset past the photo", || {
        setup.offset() == Some(id + 1)
    })
    .await;
    setup.kill9_gateway();
    setup.api.release_downloads();
    setup.llm.push(Reply::text("kept it"));
    setup.start_gateway().await;
    setup.api.wait_for_text(alice().id, "kept it").await;
    assert!(
        setup
            .model_saw(0)
            .starts_with("keep this\n[photo saved at "),
        "{}",
        setup.model_saw(0)
    );
    assert_eq!(setup.llm.requests().len(), 1);
    let waiting = setup.daemon.path().join("telegram/inbound");
    crabtalk_testkit::eventually("the waiting file to be removed", || {
        std::fs::read_dir(&waiting).map_or(true, |mut d| d.next().is_none())
    })
    .await;
}
