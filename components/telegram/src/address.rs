//! Where a conversation lives in Telegram, and its sender in the daemon.
//!
//! | chat | sender |
//! |---|---|
//! | private chat with user 42 | `tg:42` |
//! | group or supergroup -100123 | `tg:-100123` |
//! | forum topic 7 of -100123 | `tg:-100123:7` |
//!
//! In a private chat the chat id is the user id, so `tg:42` names both.

use std::fmt;

/// A chat, and a forum topic in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ChatAddress {
    pub chat: i64,
    /// The topic's thread id in a forum supergroup.
    pub topic: Option<i32>,
}

impl ChatAddress {
    pub(crate) fn chat(chat: i64) -> Self {
        Self { chat, topic: None }
    }

    #[cfg(test)]
    pub(crate) fn topic(chat: i64, topic: i32) -> Self {
        Self {
            chat,
            topic: Some(topic),
        }
    }

    /// Private chats have positive ids; groups, supergroups and channels
    /// negative ones.
    pub(crate) fn is_private(&self) -> bool {
        self.chat > 0
    }

    /// The daemon sender of the conversation at this address.
    pub(crate) fn sender(&self) -> String {
        match self.topic {
            Some(topic) => format!("tg:{}:{topic}", self.chat),
            None => format!("tg:{}", self.chat),
        }
    }

    /// The address a `tg:` sender names; `None` for any other sender.
    pub(crate) fn from_sender(sender: &str) -> Option<Self> {
        let rest = sender.strip_prefix("tg:")?;
        let (chat, topic) = match rest.split_once(':') {
            Some((chat, topic)) => (chat, Some(topic.parse::<i32>().ok().filter(|t| *t > 0)?)),
            None => (rest, None),
        };
        let chat = chat.parse::<i64>().ok().filter(|c| *c != 0)?;
        Some(Self { chat, topic })
    }
}

impl fmt::Display for ChatAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.topic {
            Some(topic) => write!(f, "{} (topic {topic})", self.chat),
            None => write!(f, "{}", self.chat),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_and_addresses_round_trip() {
        for (address, sender) in [
            (ChatAddress::chat(42), "tg:42"),
            (ChatAddress::chat(-100123), "tg:-100123"),
            (ChatAddress::topic(-100123, 7), "tg:-100123:7"),
        ] {
            assert_eq!(address.sender(), sender);
            assert_eq!(ChatAddress::from_sender(sender), Some(address));
        }
        for other in [
            "user", "tg:", "tg:x", "tg:0", "tg:1:x", "tg:1:0", "cron", "tg:1:2:3",
        ] {
            assert_eq!(ChatAddress::from_sender(other), None, "{other}");
        }
        assert!(ChatAddress::chat(42).is_private());
        assert!(!ChatAddress::chat(-5).is_private());
    }
}
