//! `crabtalkd`, the crabtalk daemon, as a library: the binary only parses its
//! command line and calls [`process::run`]; tests and benches reach every
//! subsystem here.
//!
//! - [`config`]: `config.toml` and agent definitions.
//! - [`storage`]: conversation logs, metadata, handles.
//! - [`provider`]: language models through crabllm.
//! - [`runtime`]: conversations and turns.
//! - [`tools`]: the hooks and the built-in tools; [`skills`]: `SKILL.md`.
//! - [`bus`]: event subscriptions.
//!
//! The cores it feeds are crates of their own that know nothing of it:
//! `crabtalk-memory` (the per-agent CRMEM store, recall, dump/load) and
//! `crabtalk-session-index` (session search), both over `crabtalk-bm25`.
//! The daemon keeps the adapters: `runtime::memories` (one store per agent,
//! owned by the runtime) and `runtime::sessions` (the index fed by every
//! append and rebuilt from the logs).
//! - [`server`]: the protocol operations; [`process`]: startup, listeners,
//!   signals, shutdown; [`lock`]: one daemon per home; [`leftovers`]: the
//!   temp files crashes leave, cleared at start; [`commands`]: the other
//!   subcommands (`memory dump|load`, `sessions search`).
//! - [`token`]: the token every TCP client sends; [`private`]: the home
//!   and everything in it kept to the daemon's user.

pub mod bus;
pub mod cli;
pub mod commands;
pub mod config;
pub mod hook;
pub mod leftovers;
pub mod lock;
pub mod mcp;
pub mod memories;
pub mod private;
pub mod process;
pub mod provider;
pub mod runtime;
pub mod server;
pub mod sessions;
pub mod skills;
pub mod storage;
pub mod token;
pub mod tools;
