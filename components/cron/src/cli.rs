//! The command line of `crabtalk-cron`, in the library so tests can parse a
//! unit's command line with exactly what the binary accepts.

use crabtalk_home::Service;
use crabtalk_kit::cli::run_command;

/// The executable's name.
pub const BINARY: &str = "crabtalk-cron";

/// The first line of `--help`.
pub const ABOUT: &str = "Scheduler for crabtalk: runs skills and messages for agents on a schedule";

/// This binary as a service: `run/cron.port`, `logs/cron.log`.
pub fn service() -> Service {
    Service::new("cron", BINARY, "crabtalk scheduler").expect("a valid service name")
}

/// The clap definition `main` parses with.
pub fn command() -> clap::Command {
    run_command(BINARY, ABOUT)
}
