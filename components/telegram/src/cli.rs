//! The command line of `crabtalk-telegram`, in the library so tests can parse a
//! unit's command line with exactly what the binary accepts.

use crabtalk_home::Service;
use crabtalk_kit::cli::run_command;

/// The executable's name.
pub const BINARY: &str = "crabtalk-telegram";

/// The first line of `--help`.
pub const ABOUT: &str = "Telegram gateway for crabtalk: chats with agents through a Telegram bot";

/// This binary as a service: `run/telegram.port`, `logs/telegram.log`.
pub fn service() -> Service {
    Service::new("telegram", BINARY, "crabtalk Telegram gateway").expect("a valid service name")
}

/// The clap definition `main` parses with.
pub fn command() -> clap::Command {
    run_command(BINARY, ABOUT)
}
