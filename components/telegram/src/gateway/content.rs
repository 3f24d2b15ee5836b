//! What a message carries besides its text, read for the agent.
//!
//! - files ([`attachment`]): photos (the largest size), documents, videos,
//!   audio files, voice notes, video notes and animations — saved by
//!   the gateway (`media.rs`) and referenced by their path;
//! - places and contacts ([`described`]): a line of text for the agent;
//! - kinds the agent cannot read ([`unreadable`]): stickers, polls, dice,
//!   games, stories and kinds this version does not know — the sender gets
//!   a short, polite reply instead of silence;
//! - service notes ([`is_service`]: someone joined, a title changed, a
//!   message was pinned): nobody wrote them to the bot; ignored.
//!
//! Every field is read leniently from the message's JSON: one that is
//! missing or odd makes that piece unusable, never the message.

use serde_json::Value;

use crate::api::update::Message;

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// What it is, in words ("photo", "voice note").
    pub kind: &'static str,
    pub file_id: String,
    /// As Telegram says, when it does.
    pub size: Option<u64>,
    /// A file name (the sender's, or one for its kind).
    pub name: String,
}

/// The fields that carry a file, with their kind and a name for files
/// that come without one. `animation` comes before `document`: Telegram
/// sends an animation as both.
const FILES: [(&str, &str, &str); 6] = [
    ("animation", "animation", "animation.mp4"),
    ("document", "document", "document"),
    ("video", "video", "video.mp4"),
    ("audio", "audio file", "audio"),
    ("voice", "voice note", "voice.ogg"),
    ("video_note", "video note", "video-note.mp4"),
];

/// The file attached to `message`, if any.
pub fn attachment(message: &Message) -> Option<Attachment> {
    if let Some(Value::Array(sizes)) = message.field("photo") {
        let largest = sizes
            .iter()
            .filter(|size| file_id(size).is_some())
            .max_by_key(|size| {
                let number = |key: &str| size.get(key).and_then(Value::as_u64).unwrap_or(0);
                (number("width") * number("height"), number("file_size"))
            })?;
        return Some(Attachment {
            kind: "photo",
            file_id: file_id(largest)?,
            size: largest.get("file_size").and_then(Value::as_u64),
            name: "photo.jpg".into(),
        });
    }
    FILES.iter().find_map(|(field, kind, default_name)| {
        let file = message.field(field)?;
        Some(Attachment {
            kind,
            file_id: file_id(file)?,
            size: file.get("file_size").and_then(Value::as_u64),
            name: file
                .get("file_name")
                .and_then(Value::as_str)
                .filter(|name| !name.trim().is_empty())
                .unwrap_or(default_name)
                .to_owned(),
        })
    })
}

fn file_id(file: &Value) -> Option<String> {
    file.get("file_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// A place or a contact in `message`, as a line for the agent.
pub fn described(message: &Message) -> Option<String> {
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    let place = |location: &Value| {
        let number = |key: &str| location.get(key).and_then(Value::as_f64);
        Some(format!(
            "{:.6}, {:.6}",
            number("latitude")?,
            number("longitude")?
        ))
    };
    if let Some(venue) = message.field("venue") {
        let title = text(venue, "title").unwrap_or_else(|| "a place".into());
        let mut line = format!("[venue: {title}");
        if let Some(address) = text(venue, "address") {
            line.push_str(&format!(", {address}"));
        }
        if let Some(at) = venue.get("location").and_then(place) {
            line.push_str(&format!(" ({at})"));
        }
        line.push(']');
        return Some(line);
    }
    if let Some(location) = message.field("location") {
        let at = place(location)?;
        let live = location.get("live_period").is_some();
        return Some(format!(
            "[{}: {at}]",
            if live { "live location" } else { "location" }
        ));
    }
    if let Some(contact) = message.field("contact") {
        let name = [text(contact, "first_name"), text(contact, "last_name")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let mut line = format!(
            "[contact: {}",
            if name.is_empty() { "someone" } else { &name }
        );
        if let Some(phone) = text(contact, "phone_number") {
            line.push_str(&format!(", {phone}"));
        }
        line.push(']');
        return Some(line);
    }
    None
}

/// Kinds a person sends that the agent cannot read, with their name in a
/// reply.
const UNREADABLE: [(&str, &str); 10] = [
    ("sticker", "stickers"),
    ("poll", "polls"),
    ("dice", "dice"),
    ("game", "games"),
    ("story", "stories"),
    ("invoice", "invoices"),
    ("paid_media", "paid media"),
    ("checklist", "checklists"),
    ("giveaway", "giveaways"),
    ("passport_data", "Telegram Passport data"),
];

/// Fields of service notes: what Telegram writes into a chat itself.
const SERVICE: [&str; 44] = [
    "new_chat_members",
    "left_chat_member",
    "new_chat_title",
    "new_chat_photo",
    "delete_chat_photo",
    "group_chat_created",
    "supergroup_chat_created",
    "channel_chat_created",
    "message_auto_delete_timer_changed",
    "migrate_to_chat_id",
    "migrate_from_chat_id",
    "pinned_message",
    "successful_payment",
    "refunded_payment",
    "users_shared",
    "chat_shared",
    "connected_website",
    "write_access_allowed",
    "proximity_alert_triggered",
    "boost_added",
    "chat_background_set",
    "forum_topic_created",
    "forum_topic_edited",
    "forum_topic_closed",
    "forum_topic_reopened",
    "general_forum_topic_hidden",
    "general_forum_topic_unhidden",
    "giveaway_created",
    "giveaway_winners",
    "giveaway_completed",
    "video_chat_scheduled",
    "video_chat_started",
    "video_chat_ended",
    "video_chat_participants_invited",
    "web_app_data",
    "gift",
    "unique_gift",
    "paid_message_price_changed",
    "direct_message_price_changed",
    "checklist_tasks_done",
    "checklist_tasks_added",
    "suggested_post_approved",
    "suggested_post_declined",
    "suggested_post_paid",
];

/// Whether `message` is a note Telegram wrote into the chat (someone
/// joined, a pin, a new title): nothing to answer.
pub fn is_service(message: &Message) -> bool {
    message.migrate_to_chat_id.is_some()
        || message.migrate_from_chat_id.is_some()
        || SERVICE.iter().any(|key| message.field(key).is_some())
}

/// What to call `message`'s kind in a reply saying it cannot be read:
/// "stickers", or `None` for a kind this version does not know.
pub fn unreadable(message: &Message) -> Option<&'static str> {
    UNREADABLE
        .iter()
        .find(|(key, _)| message.field(key).is_some())
        .map(|(_, name)| *name)
}

/// The reply to a message the agent cannot read.
pub fn cannot_read(kind: Option<&str>) -> String {
    match kind {
        Some(kind) => format!(
            "Sorry, I can't read {kind} yet. Please tell me in words (or send a photo or a file)."
        ),
        None => "Sorry, I can't read this kind of message yet. Please tell me in words (or send a photo or a file).".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    fn message(extra: Value) -> Message {
        let mut value = json!({"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}});
        value
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Message::deserialize(&value).unwrap()
    }

    #[test]
    fn files_of_every_kind_are_found() {
        let photo = message(json!({"photo": [
            {"file_id": "s", "width": 90, "height": 60, "file_size": 100},
            {"file_id": "l", "width": 1280, "height": 960},
        ]}));
        let found = attachment(&photo).unwrap();
        assert_eq!(
            (found.kind, found.file_id.as_str(), found.size),
            ("photo", "l", None)
        );
        let video =
            message(json!({"video": {"file_id": "v", "width": 1, "height": 1, "duration": 1}}));
        let found = attachment(&video).unwrap();
        assert_eq!((found.kind, found.name.as_str()), ("video", "video.mp4"));
        let gif = message(json!({
            "animation": {"file_id": "a", "file_name": "cat.mp4"},
            "document": {"file_id": "a", "file_name": "cat.mp4"},
        }));
        assert_eq!(attachment(&gif).unwrap().kind, "animation");
        for (field, kind) in [
            ("audio", "audio file"),
            ("voice", "voice note"),
            ("video_note", "video note"),
        ] {
            let m = message(json!({ field: {"file_id": "x", "file_size": 3} }));
            let found = attachment(&m).unwrap();
            assert_eq!((found.kind, found.size), (kind, Some(3)), "{field}");
        }
        // A file without an id is no file, and breaks nothing.
        assert_eq!(attachment(&message(json!({"video": {"width": 1}}))), None);
    }

    #[test]
    fn places_and_contacts_become_lines() {
        let at = message(json!({"location": {"latitude": 52.52, "longitude": 13.405}}));
        assert_eq!(described(&at).unwrap(), "[location: 52.520000, 13.405000]");
        let venue = message(json!({
            "venue": {"title": "Café", "address": "Main St 1", "location": {"latitude": 1.0, "longitude": 2.0}},
            "location": {"latitude": 1.0, "longitude": 2.0},
        }));
        assert_eq!(
            described(&venue).unwrap(),
            "[venue: Café, Main St 1 (1.000000, 2.000000)]"
        );
        let contact = message(json!({"contact": {"first_name": "Bo", "phone_number": "+1 555"}}));
        assert_eq!(described(&contact).unwrap(), "[contact: Bo, +1 555]");
    }

    #[test]
    fn stickers_are_unreadable_and_service_notes_are_not_messages() {
        let sticker = message(json!({"sticker": {"file_id": "s", "emoji": "👍"}}));
        assert_eq!(unreadable(&sticker), Some("stickers"));
        assert!(cannot_read(unreadable(&sticker)).contains("can't read stickers"));
        let joined = message(json!({"new_chat_members": [{"id": 5, "first_name": "X"}]}));
        assert!(is_service(&joined) && unreadable(&joined).is_none());
        let future = message(json!({"hologram": {"id": 1}}));
        assert!(!is_service(&future) && unreadable(&future).is_none());
    }
}
