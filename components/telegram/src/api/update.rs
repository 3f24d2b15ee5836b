//! Updates as the gateway reads them: plain JSON into types that hold only
//! what the gateway uses.
//!
//! The Bot API marks many fields optional and adds new ones every few
//! months; a reader that insists on a field the server left out drops the
//! whole message (a video without `mime_type` lost its caption too). Here
//! every field but an update's id and a message's chat may be missing, and
//! whatever a message carries besides text (media, a location, a sticker,
//! kinds that do not exist yet) is kept as JSON in [`Message::rest`] and
//! read where it is used, so one odd field never hides the rest.

use serde::Deserialize;
use serde_json::Value;

/// What the gateway asks to be told about.
pub(crate) const ALLOWED_UPDATES: [&str; 3] = ["message", "edited_message", "callback_query"];

/// One update.
#[derive(Debug, Clone)]
pub struct Update {
    pub id: i64,
    pub kind: UpdateKind,
}

/// What an update is about.
#[derive(Debug, Clone)]
pub enum UpdateKind {
    /// A new message.
    Message(Message),
    /// A message changed by its sender (its new text).
    Edited(Message),
    /// A button press.
    Callback(CallbackQuery),
    /// Anything else, by the name of its field.
    Other(String),
}

/// Why an update could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableUpdate {
    #[error("no update_id")]
    NoId,
    /// The field (`message`, `edited_message`, `callback_query`) is not
    /// what the Bot API sends there.
    #[error("{field}: {source}")]
    Malformed {
        field: &'static str,
        source: serde_json::Error,
    },
    /// A message without the chat it is in.
    #[error("{field}: no chat")]
    NoChat { field: &'static str },
    #[error("callback_query: no id")]
    NoCallbackId,
}

impl Update {
    /// Reads one update; the error says what is wrong with it.
    pub fn read(value: &Value) -> Result<Self, UnreadableUpdate> {
        let id = value
            .get("update_id")
            .and_then(Value::as_i64)
            .ok_or(UnreadableUpdate::NoId)?;
        let message = |field: &'static str| -> Result<Option<Message>, UnreadableUpdate> {
            let Some(raw) = value.get(field) else {
                return Ok(None);
            };
            let message = Message::deserialize(raw)
                .map_err(|source| UnreadableUpdate::Malformed { field, source })?;
            if message.chat.id == 0 {
                return Err(UnreadableUpdate::NoChat { field });
            }
            Ok(Some(message))
        };
        let kind = if let Some(message) = message("message")? {
            UpdateKind::Message(message)
        } else if let Some(message) = message("edited_message")? {
            UpdateKind::Edited(message)
        } else if let Some(raw) = value.get("callback_query") {
            let query =
                CallbackQuery::deserialize(raw).map_err(|source| UnreadableUpdate::Malformed {
                    field: "callback_query",
                    source,
                })?;
            if query.id.is_empty() {
                return Err(UnreadableUpdate::NoCallbackId);
            }
            UpdateKind::Callback(query)
        } else {
            let key = value
                .as_object()
                .and_then(|map| map.keys().find(|k| *k != "update_id").cloned())
                .unwrap_or_default();
            UpdateKind::Other(key)
        };
        Ok(Self { id, kind })
    }
}

/// A Telegram user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct User {
    pub id: i64,
    pub is_bot: bool,
    pub first_name: String,
    pub last_name: Option<String>,
    pub username: Option<String>,
}

impl User {
    /// First and last name.
    pub fn full_name(&self) -> String {
        match &self.last_name {
            Some(last) if !last.is_empty() => format!("{} {last}", self.first_name),
            _ => self.first_name.clone(),
        }
    }
}

/// A chat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Chat {
    pub id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: Option<String>,
    pub username: Option<String>,
}

impl Chat {
    pub fn is_private(&self) -> bool {
        self.kind == "private" || (self.kind.is_empty() && self.id > 0)
    }
}

/// A formatted or special part of a message's text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Entity {
    /// `mention`, `bot_command`, `text_mention`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// In UTF-16 units.
    pub offset: usize,
    pub length: usize,
    /// Whom a `text_mention` names.
    pub user: Option<User>,
}

impl Entity {
    /// The part of `text` this entity covers (offsets in UTF-16 units).
    pub fn text<'a>(&self, text: &'a str) -> &'a str {
        let mut units = 0;
        let (mut start, mut end) = (None, None);
        for (at, c) in text.char_indices() {
            if units == self.offset {
                start = Some(at);
            }
            if units == self.offset + self.length {
                end = Some(at);
                break;
            }
            units += c.len_utf16();
        }
        if units == self.offset + self.length {
            end = end.or(Some(text.len()));
        }
        match (start, end) {
            (Some(start), Some(end)) if start <= end => &text[start..end],
            _ => "",
        }
    }
}

/// A message.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Message {
    pub message_id: i32,
    /// 0 for a message the bot can no longer see.
    pub date: i64,
    pub message_thread_id: Option<i32>,
    pub is_topic_message: bool,
    pub from: Option<User>,
    pub chat: Chat,
    pub text: Option<String>,
    pub caption: Option<String>,
    pub entities: Vec<Entity>,
    pub caption_entities: Vec<Entity>,
    pub reply_to_message: Option<Box<Message>>,
    pub migrate_to_chat_id: Option<i64>,
    pub migrate_from_chat_id: Option<i64>,
    /// Every other field (media, locations, stickers, service notes…).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

impl Message {
    /// The text, else the caption.
    pub fn text_or_caption(&self) -> Option<&str> {
        self.text.as_deref().or(self.caption.as_deref())
    }

    /// The entities of [`Message::text_or_caption`], each with its text.
    pub fn entities_with_text(&self) -> Vec<(&Entity, &str)> {
        let (text, entities) = match (&self.text, &self.caption) {
            (Some(text), _) => (text.as_str(), &self.entities),
            (None, Some(caption)) => (caption.as_str(), &self.caption_entities),
            (None, None) => return Vec::new(),
        };
        entities.iter().map(|e| (e, e.text(text))).collect()
    }

    /// The forum topic the message is in.
    pub fn topic(&self) -> Option<i32> {
        self.message_thread_id.filter(|_| self.is_topic_message)
    }

    /// A field of the message besides the ones read above.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.rest.get(key).filter(|v| !v.is_null())
    }
}

/// A press of an inline keyboard button.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    pub message: Option<Message>,
    pub data: Option<String>,
}

impl CallbackQuery {
    /// The message the button is under, when the bot can still see it.
    pub fn regular_message(&self) -> Option<&Message> {
        self.message.as_ref().filter(|m| m.date != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_video_without_mime_type_is_read_with_its_caption() {
        let update = Update::read(&json!({"update_id": 7, "message": {
            "message_id": 3, "date": 1, "chat": {"id": 111, "type": "private"},
            "from": {"id": 111, "is_bot": false, "first_name": "Alice"},
            "caption": "look", "video": {"file_id": "v1", "file_unique_id": "u", "width": 1, "height": 1, "duration": 2}
        }}))
        .unwrap();
        let UpdateKind::Message(message) = update.kind else {
            panic!("{update:?}")
        };
        assert_eq!(message.text_or_caption(), Some("look"));
        assert_eq!(message.field("video").unwrap()["file_id"], "v1");
    }

    #[test]
    fn what_cannot_be_read_says_why() {
        for (value, says) in [
            (json!({"message": {}}), "no update_id"),
            (
                json!({"update_id": 1, "message": {"chat": "not a chat"}}),
                "message:",
            ),
            (
                json!({"update_id": 1, "message": {"text": "hi"}}),
                "no chat",
            ),
            (json!({"update_id": 1, "callback_query": {}}), "no id"),
        ] {
            let err = Update::read(&value).unwrap_err().to_string();
            assert!(err.contains(says), "{value}: {err}");
        }
        let other = Update::read(&json!({"update_id": 2, "poll": {"id": "p"}})).unwrap();
        assert!(matches!(other.kind, UpdateKind::Other(key) if key == "poll"));
    }

    #[test]
    fn entities_are_cut_in_utf16_units() {
        let text = "😀 @crab_bot /help";
        let entity = |offset, length| Entity {
            kind: "mention".into(),
            offset,
            length,
            user: None,
        };
        assert_eq!(entity(3, 9).text(text), "@crab_bot");
        assert_eq!(entity(13, 5).text(text), "/help");
        assert_eq!(entity(13, 50).text(text), "");
        assert_eq!(entity(1, 2).text(text), "");
    }
}
