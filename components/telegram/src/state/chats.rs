//! The chats the gateway has seen (`telegram/chats.json`): what
//! `telegram_chats` lists, the agent each chat talks to (`/agent`), and
//! groups that became supergroups.
//!
//! When Telegram migrates a group to a supergroup the chat gets a new id
//! (`migrate_to_chat_id`). The conversation keeps the old id's sender, so
//! nothing of it is lost: messages from the new id are mapped to the old
//! sender, and replies to the old sender go to the new id.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crabtalk_home::Home;
use serde::{Deserialize, Serialize};

/// One chat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChatEntry {
    pub chat_id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    pub kind: String,
    /// A group's title, or a person's name.
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub last_seen: String,
    /// The agent `/agent` chose for this chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ChatsFile {
    #[serde(default)]
    chats: BTreeMap<i64, ChatEntry>,
    /// New chat id → the id the conversation started with.
    #[serde(default)]
    migrated: BTreeMap<i64, i64>,
}

/// The chat book of one home.
pub(crate) struct ChatBook {
    path: PathBuf,
    file: parking_lot::Mutex<ChatsFile>,
}

impl ChatBook {
    pub(crate) fn open(home: &Home) -> Self {
        let path = crate::data_dir(home).join("chats.json");
        Self {
            file: parking_lot::Mutex::new(super::read_json(&path)),
            path,
        }
    }

    /// Records a message seen in `chat`.
    pub(crate) fn seen(&self, chat_id: i64, kind: &str, title: &str, username: Option<&str>) {
        let mut file = self.file.lock();
        let entry = file.chats.entry(chat_id).or_default();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let changed = entry.kind != kind
            || entry.title != title
            || entry.username.as_deref() != username
            || entry.last_seen.get(..13) != now.get(..13);
        entry.chat_id = chat_id;
        entry.kind = kind.to_owned();
        entry.title = title.to_owned();
        entry.username = username.map(str::to_owned);
        entry.last_seen = now;
        // Written at most once an hour per chat unless something changed.
        if changed {
            self.save(&file);
        }
    }

    /// The agent chosen for `chat`.
    pub(crate) fn agent_of(&self, chat: i64) -> Option<String> {
        self.file.lock().chats.get(&chat)?.agent.clone()
    }

    /// Chooses the agent of `chat` (`None`: the configured one).
    pub(crate) fn set_agent(&self, chat: i64, agent: Option<String>) {
        let mut file = self.file.lock();
        let entry = file.chats.entry(chat).or_default();
        entry.chat_id = chat;
        entry.agent = agent;
        self.save(&file);
    }

    /// Records that `old` became `new`.
    pub(crate) fn migrated(&self, old: i64, new: i64) {
        let mut file = self.file.lock();
        let origin = file.migrated.get(&old).copied().unwrap_or(old);
        if file.migrated.get(&new) == Some(&origin) {
            return;
        }
        file.migrated.insert(new, origin);
        if let Some(entry) = file.chats.get(&old).cloned() {
            file.chats.entry(new).or_insert(ChatEntry {
                chat_id: new,
                kind: "supergroup".into(),
                ..entry
            });
        }
        self.save(&file);
        tracing::info!("group {old} became supergroup {new}; its conversation continues");
    }

    /// The chat id a conversation in `chat` is named after (its id before
    /// any migration).
    pub(crate) fn conversation_chat(&self, chat: i64) -> i64 {
        self.file
            .lock()
            .migrated
            .get(&chat)
            .copied()
            .unwrap_or(chat)
    }

    /// The chat id messages for the conversation of `chat` go to now.
    pub(crate) fn current_chat(&self, chat: i64) -> i64 {
        let file = self.file.lock();
        file.migrated
            .iter()
            .filter(|(_, origin)| **origin == chat)
            .map(|(new, _)| *new)
            .max_by_key(|new| file.chats.get(new).map(|e| e.last_seen.clone()))
            .unwrap_or(chat)
    }

    /// Every chat seen, most recent first.
    pub(crate) fn list(&self) -> Vec<ChatEntry> {
        let mut chats: Vec<ChatEntry> = self.file.lock().chats.values().cloned().collect();
        chats.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
        chats
    }

    fn save(&self, file: &ChatsFile) {
        if let Err(err) = super::write_json(&self.path, file) {
            tracing::warn!("cannot write {}: {err}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migrated_group_keeps_its_conversation_and_gets_replies_at_its_new_id() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let book = ChatBook::open(&home);
        book.seen(-5, "group", "Team", None);
        book.set_agent(-5, Some("crab".into()));
        book.migrated(-5, -1005);
        assert_eq!(book.conversation_chat(-1005), -5);
        assert_eq!(book.current_chat(-5), -1005);
        assert_eq!(book.current_chat(42), 42);
        let again = ChatBook::open(&home);
        assert_eq!(again.conversation_chat(-1005), -5);
        assert_eq!(again.agent_of(-5).as_deref(), Some("crab"));
        assert_eq!(again.list().len(), 2);
    }
}
