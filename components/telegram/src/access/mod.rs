//! Who may reach the agent.
//!
//! - Private chats: the users in `allow`, plus those approved with
//!   `crabtalk-telegram pair approve`. An empty `allow` means nobody — a
//!   bot is public, anyone can find it and write to it.
//! - Strangers (anyone else, in a private chat): nothing reaches the
//!   agent. With `pairing = true` they get a code ([`pairing`]) that a
//!   person approves on this machine; never from a chat.
//! - Groups: only the chats in `groups` or `open_groups` (or the
//!   supergroups they became), and there only when the bot is addressed
//!   unless `require_mention = false`. In a group of `groups` only the
//!   users who may talk in private (allowed or paired) are answered: being
//!   added to a group gives nobody the agent. A group of `open_groups`
//!   answers every member, because the owner said so for that group.
//!
//! Sending (`telegram_send`, the relay) is held to the same table: only to
//! chats that may talk to the agent.

pub(crate) mod pairing;

use crabtalk_home::Home;

use crate::address::ChatAddress;
use crate::config::TelegramConfig;
use crate::state::chats::ChatBook;
use pairing::PairingStore;

/// Whether `chat`, or the group it was before becoming a supergroup, is in
/// `list`.
fn listed(list: &[i64], chat: i64, chats: &ChatBook) -> bool {
    list.contains(&chat) || list.contains(&chats.conversation_chat(chat))
}

/// The access table of a running gateway.
pub(crate) struct Access {
    allow: Vec<i64>,
    groups: Vec<i64>,
    open_groups: Vec<i64>,
    pairing: bool,
    require_mention: bool,
    store: PairingStore,
}

impl Access {
    pub(crate) fn new(home: &Home, config: &TelegramConfig) -> Self {
        Self {
            allow: config.allow.clone(),
            groups: config.groups.clone(),
            open_groups: config.open_groups.clone(),
            pairing: config.pairing,
            require_mention: config.require_mention,
            store: PairingStore::of(home),
        }
    }

    pub(crate) fn pairing(&self) -> Option<&PairingStore> {
        self.pairing.then_some(&self.store)
    }

    pub(crate) fn require_mention(&self) -> bool {
        self.require_mention
    }

    /// Whether user `user` may talk to the agent in a private chat.
    pub(crate) fn user_allowed(&self, user: i64) -> bool {
        self.allow.contains(&user) || self.store.is_approved(user)
    }

    /// Whether the group `chat` is one the bot answers in (`chats` knows
    /// which group a supergroup was).
    pub(crate) fn group_allowed(&self, chat: i64, chats: &ChatBook) -> bool {
        listed(&self.groups, chat, chats) || listed(&self.open_groups, chat, chats)
    }

    /// Whether `user` may speak to the agent in the group `chat`: a group
    /// the bot answers in, and either one open to every member or a user
    /// allowed (or paired) anyway.
    pub(crate) fn member_allowed(&self, chat: i64, user: i64, chats: &ChatBook) -> bool {
        self.group_allowed(chat, chats)
            && (listed(&self.open_groups, chat, chats) || self.user_allowed(user))
    }

    /// Whether messages may be sent to `to`.
    pub(crate) fn may_send_to(&self, to: ChatAddress, chats: &ChatBook) -> bool {
        if to.is_private() {
            self.user_allowed(to.chat)
        } else {
            self.group_allowed(to.chat, chats)
        }
    }

    /// Every chat that may talk to the agent by configuration or approval.
    pub(crate) fn known_chats(&self) -> Vec<i64> {
        let mut chats: Vec<i64> = self.allow.clone();
        chats.extend(self.store.approved().into_iter().map(|a| a.user_id));
        chats.extend(&self.groups);
        chats.extend(&self.open_groups);
        chats.sort_unstable();
        chats.dedup();
        chats
    }
}
