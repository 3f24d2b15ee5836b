//! `crabtalk-telegram`: the gateway between Telegram chats and the
//! crabtalk daemon.
//!
//! A person writes to the bot; the gateway long-polls the Bot API
//! ([`gateway::poller`]), decides whether the sender may talk to the agent
//! ([`access`]: an allow-list, pairing codes approved on this machine,
//! groups that answer when addressed), and starts a turn in the daemon for
//! the conversation `tg:<user>` (groups: `tg:<chat>[:<topic>]`). The reply
//! streams back as one message that is edited as text arrives
//! ([`outbox`]: a queue per chat that keeps Telegram's per-chat and global
//! limits and drops intermediate frames, never the final text), rendered
//! from Markdown into Telegram's HTML subset and split by Telegram's own
//! measure ([`render`]). Questions become inline keyboards, commands are
//! registered with Telegram, media is saved under
//! `$CRABTALK_HOME/files/telegram/`.
//!
//! Replies of turns that something else started for a `tg:` conversation
//! (cron, delegation, events) are relayed to the chat exactly once
//! ([`gateway::relay`], [`state::ledger`]); agents send messages with the
//! MCP tools `telegram_send` and `telegram_chats` ([`tools`]).
//!
//! Without the default `service` feature the crate is the command line
//! ([`cli`]), the config type ([`config`]), the Bot API client
//! ([`wire`]) and the token check ([`token`]): what crabup links for
//! first-run setup.

pub mod check;
pub mod cli;
pub mod config;
pub mod token;
pub mod wire;

#[cfg(feature = "service")]
pub mod access;
#[cfg(feature = "service")]
pub mod address;
#[cfg(feature = "service")]
pub mod api;
#[cfg(feature = "service")]
pub mod gateway;
#[cfg(feature = "service")]
pub mod lock;
#[cfg(feature = "service")]
pub mod outbox;
#[cfg(feature = "service")]
pub mod reload;
#[cfg(feature = "service")]
pub mod render;
#[cfg(feature = "service")]
pub mod service;
#[cfg(feature = "service")]
pub mod state;
#[cfg(feature = "service")]
pub mod subcommands;
#[cfg(feature = "service")]
pub mod tools;

/// `$CRABTALK_HOME/telegram/`: the gateway's own state.
pub fn data_dir(home: &crabtalk_home::Home) -> std::path::PathBuf {
    home.root().join("telegram")
}

pub use crabtalk_home::create_private_dir;
