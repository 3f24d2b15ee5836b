//! The command line of `crabtalk-search`, in the library so tests can parse a
//! unit's command line with exactly what the binary accepts.

use crabtalk_home::Service;
use crabtalk_kit::cli::run_command;

/// The executable's name.
pub const BINARY: &str = "crabtalk-search";

/// The first line of `--help`.
pub const ABOUT: &str = "Meta-search MCP service for crabtalk agents: web search and page fetch";

/// This binary as a service: `run/search.port`, `logs/search.log`.
pub fn service() -> Service {
    Service::new("search", BINARY, "crabtalk meta-search service").expect("a valid service name")
}

/// The clap definition `main` parses with.
pub fn command() -> clap::Command {
    run_command(BINARY, ABOUT)
}
