//! Every kind of message an allowed user sends gets an answer: media of
//! every kind is saved, places reach the agent as text, what the agent
//! cannot read gets a polite reply, an edit reaches the agent as a
//! correction, and an odd optional field drops nothing.

use crabtalk_testkit::Reply;
use serde_json::json;

use crate::support::{Setup, alice};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_video_without_mime_type_reaches_the_agent_with_its_caption() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.api.add_file("video-1", b"\x00\x00\x00\x18ftypmp42");
    setup.llm.push(Reply::text("nice video"));
    setup.api.video(&alice(), "video-1", 12, "watch this", None);
    setup.api.wait_for_text(chat, "nice video").await;
    let saw = setup.model_saw(0);
    assert!(saw.starts_with("watch this\n[video saved at "), "{saw}");
    let path = saw.split("saved at ").nth(1).unwrap().trim_end_matches(']');
    assert_eq!(std::fs::read(path).unwrap(), b"\x00\x00\x00\x18ftypmp42");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stickers_and_unknown_kinds_are_answered_places_and_files_reach_the_agent() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.api.message_with(
        &alice(),
        "",
        json!({"sticker": {"file_id": "st", "file_unique_id": "st", "type": "regular", "width": 512, "height": 512, "is_animated": false, "is_video": false, "emoji": "👍"}}),
    );
    setup
        .api
        .wait_for_text(chat, "can't read stickers yet")
        .await;
    setup
        .api
        .message_with(&alice(), "", json!({"hologram": {"id": 1}}));
    setup
        .api
        .wait_for_text(chat, "can't read this kind of message yet")
        .await;
    assert!(setup.llm.requests().is_empty(), "the agent got a sticker");
    setup.llm.set_default(Reply::text("understood"));
    setup.api.message_with(
        &alice(),
        "",
        json!({"location": {"latitude": 52.52, "longitude": 13.405}}),
    );
    setup
        .api
        .wait_until("a reply to the location", |api| {
            api.chat_text(chat).contains("understood")
        })
        .await;
    assert_eq!(setup.model_saw(0), "[location: 52.520000, 13.405000]");
    for (field, file, kind) in [
        ("audio", "audio-1", "audio file"),
        ("video_note", "note-1", "video note"),
    ] {
        setup.api.add_file(file, b"data");
        let before = setup.llm.requests().len();
        setup.api.message_with(
            &alice(),
            "",
            json!({ field: {"file_id": file, "file_unique_id": file, "duration": 2, "length": 240} }),
        );
        setup.llm.wait_for_requests(before + 1).await;
        let saw = setup.model_saw(before);
        assert!(saw.starts_with(&format!("[{kind} saved at ")), "{saw}");
    }
    // Two polite replies and three answers so far.
    setup
        .api
        .wait_until("five messages", |api| api.messages(chat).len() == 5)
        .await;
    // Someone joining is nobody writing: no reply.
    setup.api.message_with(
        &alice(),
        "",
        json!({"new_chat_members": [{"id": 5, "is_bot": false, "first_name": "Eve"}]}),
    );
    setup.llm.push(Reply::text("after the note"));
    setup.api.text(&alice(), "ping");
    setup.api.wait_for_text(chat, "after the note").await;
    assert_eq!(setup.api.messages(chat).len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_message_reaches_the_agent_as_a_correction() {
    let mut setup = Setup::start("").await;
    setup.start_gateway().await;
    let chat = alice().id;
    setup.llm.push(Reply::text("see you at 5"));
    setup.api.text(&alice(), "meet at 5?");
    setup.api.wait_for_text(chat, "see you at 5").await;
    let polls = setup.api.calls_of("getUpdates");
    let asked = &polls.last().unwrap().params["allowed_updates"];
    assert!(
        asked
            .as_array()
            .unwrap()
            .iter()
            .any(|kind| kind == "edited_message"),
        "{asked}"
    );
    setup.llm.push(Reply::text("6 then"));
    setup.api.edited_text(&alice(), 42, "meet at 6?");
    setup.api.wait_for_text(chat, "6 then").await;
    assert_eq!(
        setup.model_saw(1),
        format!("{}\nmeet at 6?", crabtalk_telegram::CORRECTION)
    );
    // A live location moving is an edit without text: nothing to say.
    setup.api.push_update(json!({"edited_message": {
        "message_id": 43, "date": 1, "edit_date": 2,
        "chat": {"id": chat, "type": "private", "first_name": "Alice"},
        "from": {"id": chat, "is_bot": false, "first_name": "Alice"},
        "location": {"latitude": 1.0, "longitude": 2.0, "live_period": 60}
    }}));
    setup.llm.push(Reply::text("last"));
    setup.api.text(&alice(), "bye");
    setup.api.wait_for_text(chat, "last").await;
    assert_eq!(setup.model_saw(2), "bye");
}
