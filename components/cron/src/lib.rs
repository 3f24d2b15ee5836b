//! `crabtalk-cron`: the crabtalk scheduler.
//!
//! Entries in `$CRABTALK_HOME/config/crons.toml` ([`config`]) say when
//! ([`schedule`]: crontab expressions with crontab(5)'s semantics, one-shot
//! times, intervals, each in an IANA zone), what (a skill or a message),
//! for whom (agent and sender: the conversation it speaks in) and where the
//! reply goes. The service ([`service`]) runs the [`engine`], which claims
//! each slot on disk before firing it through the daemon, so a restart or a
//! crash never fires a slot twice, and records every slot in
//! `logs/cron-runs.jsonl` ([`runlog`]). Agents manage entries through the
//! MCP tools the service offers (`tools.rs`); people through the CLI
//! ([`cli`]), which goes through the same code.
//!
//! Without the default `service` feature the crate is the command line,
//! the schedules and the `crons.toml` model, without the engine, MCP or
//! HTTP (what `crabup` links).

use std::path::PathBuf;

use crabtalk_home::Home;

pub mod admin;
pub mod check;
pub mod cli;
pub mod config;
#[cfg(feature = "service")]
pub mod engine;
#[cfg(feature = "service")]
pub mod fire;
pub mod runlog;
pub mod schedule;
#[cfg(feature = "service")]
pub mod service;
pub mod state;
#[cfg(feature = "service")]
pub mod subcommands;
#[cfg(feature = "service")]
mod tools;

/// `$CRABTALK_HOME/cron/`: the scheduler's own data (claims, locks).
pub fn data_dir(home: &Home) -> PathBuf {
    home.root().join("cron")
}

pub use crabtalk_home::create_private_dir;
