//! The command line of `crabtalk-telegram`, in the library so tests (and
//! crabup's) parse exactly what the binary accepts.

use clap::{CommandFactory, Parser, Subcommand};
use crabtalk_home::Service;
use crabtalk_kit::Component;
use crabtalk_kit::cli::{ComponentCli, Mode, Verbosity};

/// The executable's name.
pub const BINARY: &str = "crabtalk-telegram";

/// The first line of `--help`.
pub const ABOUT: &str = "Telegram gateway for crabtalk: chats with agents through a Telegram bot";

/// This binary as a service: `run/telegram.port`, `logs/telegram.log`.
pub fn service() -> Service {
    Service::new("telegram", BINARY, "crabtalk Telegram gateway").expect("a valid service name")
}

/// The clap definition `main` parses with (with the kit's `check`).
pub fn command() -> clap::Command {
    crabtalk_kit::cli::with_check(Cli::command())
}

#[derive(Debug, Parser)]
#[command(
    name = BINARY,
    bin_name = BINARY,
    version,
    about = ABOUT,
    after_help = "Files: its configuration in $CRABTALK_HOME/config/telegram.toml (CRABTALK_HOME defaults \
                  to ~/.crabtalk; token, allow, pairing, groups), its state in $CRABTALK_HOME/telegram/ \
                  (update offset, pairing codes, chats), downloaded media in $CRABTALK_HOME/files/telegram/. \
                  While it runs it announces its MCP port in run/telegram.port. Install, start and stop it \
                  with `crabup telegram`."
)]
pub struct Cli {
    #[command(flatten)]
    pub verbosity: Verbosity,
    #[command(subcommand)]
    pub command: Command,
}

impl ComponentCli for Cli {
    fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    fn mode(&self) -> Mode {
        match self.command {
            Command::Run => Mode::Service,
            Command::Pair(_) => Mode::Command,
        }
    }

    fn check(component: &Component) -> anyhow::Result<String> {
        crate::check::check(component)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Run the gateway in the foreground (what its service unit runs). Use
    /// `crabup telegram start` to run it in the background as a service.
    Run,
    /// Pairing: the codes strangers got from the bot, approved or denied
    /// here on this machine (never from a chat).
    #[command(subcommand)]
    Pair(PairCommand),
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum PairCommand {
    /// The pending codes (who asked, when, until when) and the users
    /// approved so far.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let the user who got CODE talk to the agent.
    Approve { code: String },
    /// Refuse CODE (the user is not told).
    Deny { code: String },
    /// Take back an approval: USER_ID may no longer talk to the agent.
    Revoke { user_id: i64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(args)
    }

    #[test]
    fn run_pair_and_verbosity_parse() {
        assert_eq!(
            parse(&["crabtalk-telegram", "-v", "run"]).unwrap().command,
            Command::Run
        );
        assert_eq!(
            parse(&["crabtalk-telegram", "pair", "approve", "AB12CD"])
                .unwrap()
                .command,
            Command::Pair(PairCommand::Approve {
                code: "AB12CD".into()
            })
        );
        assert_eq!(
            parse(&["crabtalk-telegram", "pair", "list", "--json"])
                .unwrap()
                .command,
            Command::Pair(PairCommand::List { json: true })
        );
        assert!(parse(&["crabtalk-telegram"]).is_err());
        assert!(parse(&["crabtalk-telegram", "pair", "approve"]).is_err());
        assert!(parse(&["crabtalk-telegram", "start"]).is_err());
    }
}
