//! `crabtalk-cron`: the crabtalk scheduler.
//!
//! Entries in `$CRABTALK_HOME/config/crons.toml` (`config`) say when
//! (`schedule`: crontab expressions with crontab(5)'s semantics, one-shot
//! times, intervals, each in an IANA zone), what (a skill or a message),
//! for whom (agent and sender: the conversation it speaks in) and where the
//! reply goes. The service (`service`) runs the `engine`, which claims
//! each slot on disk before firing it through the daemon, so a restart or a
//! crash never fires a slot twice, and records every slot in
//! `logs/cron-runs.jsonl` (`runlog`). Agents manage entries through the
//! MCP tools the service offers (`tools.rs`); people through the CLI
//! ([`cli`]), which goes through the same code.
//!
//! The modules are private but for [`cli`] (the command line, which
//! crabup's CLI check reads too); the binary calls [`run`]
//! and [`run_command`], and what the tests, examples and fuzz oracles
//! drive (the schedules, the `crons.toml` model, the engine with its
//! clocks and firers, the run log and the state file) is re-exported here.
//!
//! Without the default `service` feature the crate is the command line,
//! the schedules and the `crons.toml` model, without the engine, MCP or
//! HTTP (what `crabup` links).

use std::path::PathBuf;

use crabtalk_home::Home;
use crabtalk_home::create_private_dir;

#[cfg(feature = "service")]
mod admin;
mod check;
pub mod cli;
mod config;
#[cfg(feature = "service")]
mod engine;
#[cfg(feature = "service")]
mod fire;
mod runlog;
mod schedule;
#[cfg(feature = "service")]
mod service;
mod state;
#[cfg(feature = "service")]
mod subcommands;
#[cfg(feature = "service")]
mod tools;

#[cfg(feature = "service")]
pub use config::WatchMode;
pub use config::{Change, CronsFile, EditError, KEYS, LoadError, parse_entries};
#[cfg(feature = "service")]
pub use engine::{Clock, Engine, EngineHandle, Files, ManualClock, RunNowError, SystemClock};
#[cfg(feature = "service")]
pub use fire::{By, Firer, Job, Outcome};
pub use runlog::{RunLog, RunRecord, Status};
pub use schedule::{CronExpr, DstNote, Schedule, Span, Timing, Zone, parse_at};
#[cfg(feature = "service")]
pub use service::run;
pub use state::{Claim, StateFile};
#[cfg(feature = "service")]
pub use subcommands::run as run_command;

/// `$CRABTALK_HOME/cron/`: the scheduler's own data (claims, locks).
pub fn data_dir(home: &Home) -> PathBuf {
    home.root().join("cron")
}
