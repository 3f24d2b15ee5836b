//! The running gateway: what every part of it shares ([`Gateway`]), and
//! the parts.
//!
//! - [`poller`]: the one long-poll loop, offset persisted per update;
//! - [`inbound`]: a message or a button press → access, commands, media,
//!   questions, or a turn;
//! - [`inbox`]: messages that wait beside the poll loop for a download,
//!   each chat in order;
//! - [`content`]: what a message carries besides text (files, places,
//!   contacts, kinds the agent cannot read);
//! - [`turn`]: a turn of the agent streamed into the chat;
//! - [`ask`]: `ask_user` as inline keyboards;
//! - [`slash`]: `/start /help /new /stop /agent /<skill>` and the menu
//!   registered with `setMyCommands`;
//! - [`media`]: files people send, saved for the agent;
//! - [`relay`]: replies of turns others started for `tg:` conversations.

pub(crate) mod ask;
pub mod content;
pub(crate) mod inbound;
pub(crate) mod inbox;
pub(crate) mod media;
pub(crate) mod poller;
pub(crate) mod relay;
pub(crate) mod slash;
pub(crate) mod turn;

use std::collections::HashMap;
use std::sync::Arc;

use crabtalk_home::Home;
use crabtalk_kit::Shutdown;
use crabtalk_kit::daemon::DaemonLink;

use crate::access::Access;
use crate::address::ChatAddress;
use crate::api::Api;
use crate::config::TelegramConfig;
use crate::outbox::Outbox;
use crate::state::chats::ChatBook;
use crate::state::ledger::Ledger;
use crate::token::BotIdentity;

/// The trigger the gateway's turns carry (`StreamMsg.trigger`): the relay
/// leaves their replies alone, and the daemon does not offer them the
/// gateway's own tools.
pub(crate) const TRIGGER: &str = "telegram";

/// A conversation: where it is in Telegram, and who it is in the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conversation {
    /// The chat (its id before any migration) and topic.
    pub address: ChatAddress,
    /// The daemon's agent (`""`: the default).
    pub agent: String,
}

impl Conversation {
    pub(crate) fn sender(&self) -> String {
        self.address.sender()
    }
}

/// Everything the parts of a running gateway share.
pub(crate) struct Gateway {
    pub home: Home,
    pub config: TelegramConfig,
    pub me: BotIdentity,
    pub api: Api,
    pub outbox: Outbox,
    pub daemon: DaemonLink,
    /// Who may talk: swapped whole when `telegram.toml` changes.
    pub access: parking_lot::RwLock<Arc<Access>>,
    pub inbox: inbox::Inbox,
    pub chats: Arc<ChatBook>,
    pub ledger: Ledger,
    pub asks: ask::Asks,
    pub shutdown: Shutdown,
    /// Telegram command → skill, as registered.
    pub skill_commands: parking_lot::Mutex<HashMap<String, String>>,
    /// Own turns running, per sender.
    pub running: parking_lot::Mutex<HashMap<String, usize>>,
    /// Live replies of own turns, sealed at shutdown.
    pub live: parking_lot::Mutex<Vec<std::sync::Weak<crate::outbox::LiveReply>>>,
}

impl Gateway {
    /// The access table now.
    pub(crate) fn access(&self) -> Arc<Access> {
        self.access.read().clone()
    }

    /// The conversation of `address` (its chat's chosen agent, else the
    /// configured one).
    pub(crate) fn conversation(&self, address: ChatAddress) -> Conversation {
        let agent = self
            .chats
            .agent_of(address.chat)
            .unwrap_or_else(|| self.config.agent_name().to_owned());
        Conversation { address, agent }
    }

    /// Remembers a streaming reply, to seal it at shutdown (replies that
    /// are gone are forgotten here).
    pub(crate) fn track(&self, reply: &Arc<crate::outbox::LiveReply>) {
        let mut live = self.live.lock();
        live.retain(|reply| reply.strong_count() > 0);
        live.push(Arc::downgrade(reply));
    }

    /// Seals every reply still streaming (at shutdown).
    pub(crate) fn seal_all(&self) {
        for reply in self.live.lock().drain(..) {
            if let Some(reply) = reply.upgrade() {
                reply.seal();
            }
        }
    }
}

/// Daemon errors in words a chat understands.
pub(crate) fn error_words(error: &str) -> String {
    let lower = error.to_ascii_lowercase();
    if lower.contains("cancelled by the user") {
        return "⏹ Stopped.".into();
    }
    if lower.contains("not running") || lower.contains("connect") && lower.contains("daemon") {
        return "⚠️ The agent is not reachable right now (crabtalkd is not running). Try again in a moment.".into();
    }
    format!("⚠️ The agent could not finish: {error}")
}
