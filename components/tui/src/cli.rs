//! The command line.

use clap::{Parser, Subcommand};

/// Talk to your crabtalk agents from a terminal, or from a script.
///
/// Without -p, starts a chat: type a message and press Enter; the reply
/// streams in, rendered. /help lists the slash commands and keys.
///
/// The daemon is found through CRABTALK_HOME (default ~/.crabtalk): its
/// socket, then the TCP port in its port file; --tcp names an address
/// instead. Each agent keeps one conversation per sender, so --sender picks
/// which conversation you continue.
#[derive(Debug, Parser)]
#[command(name = "crabtalk-tui", version, max_term_width = 100)]
#[command(
    after_help = "Exit status: 0 success, 1 the daemon or the turn reported an error, 2 bad usage, 3 the daemon cannot be reached, 130 interrupted."
)]
pub struct Cli {
    /// The agent to talk to [default: the daemon's default agent]
    #[arg(short, long, global = true, value_name = "NAME")]
    pub agent: Option<String>,

    /// Who you are to the agent [default: your user name]
    #[arg(long, value_name = "NAME")]
    pub sender: Option<String>,

    /// Reach the daemon over TCP: at ADDR (host:port), or without ADDR at
    /// the port in CRABTALK_HOME's port file. The token comes from --token,
    /// else from CRABTALK_HOME's run/token when ADDR is that daemon's
    /// loopback port
    #[arg(
        long,
        global = true,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = ""
    )]
    pub tcp: Option<String>,

    /// The token a daemon requires on TCP (every TCP listener has one; a
    /// daemon keeps its own in $CRABTALK_HOME/run/token)
    #[arg(
        long,
        global = true,
        env = "CRABTALK_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,

    /// Send PROMPT, print the reply and exit (non-zero on error); `-p -`
    /// reads the prompt from standard input
    #[arg(
        short = 'p',
        long = "print",
        value_name = "PROMPT",
        allow_hyphen_values = true
    )]
    pub prompt: Option<String>,

    /// With -p or `events`: print JSON objects, one per line, instead of text
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the daemon's events as lines until interrupted (--agent
    /// filters by agent)
    Events,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn print_mode_and_events_parse() {
        let cli = Cli::try_parse_from(["crabtalk-tui", "-p", "-", "--agent", "ranger", "--json"])
            .unwrap();
        assert_eq!(cli.prompt.as_deref(), Some("-"));
        assert_eq!(cli.agent.as_deref(), Some("ranger"));
        assert!(cli.json);
        let cli = Cli::try_parse_from(["crabtalk-tui", "events", "--agent", "crab"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Events)));
        assert_eq!(cli.agent.as_deref(), Some("crab"));
    }
}
