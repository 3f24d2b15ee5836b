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
//! - [`bm25`]: the inverted BM25 index and tokenizer shared by memory recall
//!   and session search.
//! - [`memory`]: the per-agent CRMEM memory store, recall, dump/load.
//! - [`search`]: the session search index.
//! - [`server`]: the protocol operations; [`process`]: startup, listeners,
//!   signals, shutdown; [`lock`]: one daemon per home; [`leftovers`]: the
//!   temp files crashes leave, cleared at start; [`commands`]: the other
//!   subcommands (`memory dump|load`, `sessions search`).

pub mod bm25;
pub mod bus;
pub mod cli;
pub mod commands;
pub mod config;
pub mod leftovers;
pub mod lock;
pub mod mcp;
pub mod memory;
pub mod process;
pub mod provider;
pub mod runtime;
pub mod search;
pub mod server;
pub mod skills;
pub mod storage;
pub mod tools;
