//! `crabup`: install crabtalk binaries and run them as services.
//!
//! `crabup pull daemon` is `cargo install crabtalkd`; `crabup daemon start`
//! renders the platform's unit through `crabtalk-command` and starts it;
//! `crabup ps` shows every crabtalk service in one view (RFC 0011). The
//! binary's `main` only calls [`main`]; everything else lives here, one
//! command per module in [`commands`].

pub mod cargo;
pub mod cli;
pub mod commands;
pub mod config_check;
pub mod context;
pub mod names;
pub mod providers;
pub mod reach;
pub mod setup;
mod terminal;

use std::process::ExitCode;

use clap::Parser;

/// What `crabup <name> status` exits with when the service is not running
/// (the LSB convention `systemctl status` follows too).
pub const NOT_RUNNING_EXIT: u8 = 3;

/// Runs crabup with the process's arguments.
pub fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("crabup: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
