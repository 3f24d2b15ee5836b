//! `crabtalk-telegram`: the gateway between Telegram chats and the
//! crabtalk daemon.
//!
//! A person writes to the bot; the gateway long-polls the Bot API
//! (`gateway/poller.rs`), decides whether the sender may talk to the agent
//! (`access/`: an allow-list, pairing codes approved on this machine,
//! groups that answer when addressed), and starts a turn in the daemon for
//! the conversation `tg:<user>` (groups: `tg:<chat>[:<topic>]`). The reply
//! streams back as one message that is edited as text arrives
//! (`outbox/`: a queue per chat that keeps Telegram's per-chat and global
//! limits and drops intermediate frames, never the final text), rendered
//! from Markdown into Telegram's HTML subset and split by Telegram's own
//! measure ([`render`]). Questions become inline keyboards, commands are
//! registered with Telegram, media is saved under
//! `$CRABTALK_HOME/files/telegram/`.
//!
//! Replies of turns that something else started for a `tg:` conversation
//! (cron, delegation, events) are relayed to the chat exactly once
//! (`gateway/relay.rs`, `state/ledger.rs`); agents send messages with the
//! MCP tools `telegram_send` and `telegram_chats` (`tools.rs`).
//!
//! Without the default `service` feature the crate is the command line
//! ([`cli`]), the config type ([`TelegramConfig`]), the Bot API client
//! ([`BotClient`]) and the token check ([`get_me_blocking`]): what crabup
//! links for first-run setup.
//!
//! The modules are private but two namespaces other crates name by path:
//! [`cli`] (the command line, as the other programs' `cli`) and, with
//! `service`, [`render`] (Markdown to Telegram messages, which the tests
//! and the fuzz oracles check on their own).

mod check;
pub mod cli;
mod config;
mod token;
mod wire;

#[cfg(feature = "service")]
mod access;
#[cfg(feature = "service")]
mod address;
#[cfg(feature = "service")]
mod api;
#[cfg(feature = "service")]
mod gateway;
#[cfg(feature = "service")]
mod lock;
#[cfg(feature = "service")]
mod outbox;
#[cfg(feature = "service")]
mod reload;
#[cfg(feature = "service")]
pub mod render;
#[cfg(feature = "service")]
mod service;
#[cfg(feature = "service")]
mod state;
#[cfg(feature = "service")]
mod subcommands;
#[cfg(feature = "service")]
mod tools;

pub use config::TelegramConfig;
pub use token::get_me_blocking;
pub use wire::{BotClient, CallError};

#[cfg(feature = "service")]
pub use api::update::{Message, Update, UpdateKind};
#[cfg(feature = "service")]
pub use gateway::content;
#[cfg(feature = "service")]
pub use gateway::inbound::CORRECTION;
#[cfg(feature = "service")]
pub use service::run;
#[cfg(feature = "service")]
pub use subcommands::pair;

/// `$CRABTALK_HOME/telegram/`: the gateway's own state.
#[cfg(feature = "service")]
fn data_dir(home: &crabtalk_home::Home) -> std::path::PathBuf {
    home.root().join("telegram")
}
