//! `crabup`: install crabtalk binaries and run them as services.
//!
//! `crabup pull daemon` installs the release's prebuilt, checked binary
//! (RFC 0016); `crabup daemon start` renders the platform's unit through
//! `crabtalk-command` and starts it; `crabup ps` shows every crabtalk
//! service in one view (RFC 0011). The binary's `main` only calls
//! [`main`]; everything else lives in private modules here, one command
//! per module in `subcommands/`.

mod build;
mod cargo;
mod cli;
mod config_check;
mod context;
mod installs;
mod mcp;
mod names;
mod providers;
mod reach;
mod release;
mod setup;
mod subcommands;
mod terminal;

/// Comments and trailing commas out of a JSONC text (an MCP host's
/// config), as `crabup mcp add` reads it.
pub use mcp::jsonc::strip_comments;

use std::process::ExitCode;

use clap::Parser;

/// What `crabup <name> status` exits with when the service is not running
/// (the LSB convention `systemctl status` follows too).
pub const NOT_RUNNING_EXIT: u8 = 3;

/// Runs crabup with the process's arguments.
pub fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match subcommands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("crabup: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
