//! The outer shape of every component's command line.
//!
//! A unit that runs `<binary> run` works for every crabtalk service, so all
//! of them accept:
//!
//! - `run`: the foreground service, what service units start (`crabup
//!   <name> start` runs it in the background);
//! - a global `-v`/`--verbose`, repeated for more detail.
//!
//! A component whose only command is `run` uses [`RunCli`] (through
//! [`main_run`](crate::main_run)); one with more commands flattens
//! [`Verbosity`] into its own clap parser, adds a `Run` variant and
//! implements [`ComponentCli`] (through [`main_with`](crate::main_with)).

use clap::CommandFactory;

/// `-v`, `-vv`: more log detail. Flatten it into a component's parser.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
pub struct Verbosity {
    /// More log detail on stderr: -v for debug, -vv for trace (RUST_LOG overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

impl Verbosity {
    /// The verbosity of `count` `-v` flags.
    pub fn from_count(count: u8) -> Self {
        Self { verbose: count }
    }

    /// The tracing filter it stands for: `info`, `debug` with `-v`,
    /// `trace` with `-vv` or more.
    pub fn filter(self) -> &'static str {
        match self.verbose {
            0 => "info",
            1 => "debug",
            _ => "trace",
        }
    }
}

/// A component's parsed command line, as the kit's `main` needs it.
pub trait ComponentCli: clap::Parser {
    /// How much to log.
    fn verbosity(&self) -> Verbosity;
}

/// The command line of a component whose only command is `run`.
#[derive(Debug, clap::Parser)]
pub struct RunCli {
    #[command(flatten)]
    pub verbosity: Verbosity,
    #[command(subcommand)]
    pub command: RunCommand,
}

impl ComponentCli for RunCli {
    fn verbosity(&self) -> Verbosity {
        self.verbosity
    }
}

/// The commands of [`RunCli`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Subcommand)]
pub enum RunCommand {
    /// Run the service in the foreground (what its service unit runs). Use
    /// `crabup <name> start` to run it in the background as a service.
    Run,
}

/// What every component's `--help` ends with.
pub const FILES_HELP: &str = "Files: its configuration in $CRABTALK_HOME/config/<name>.toml; while it \
     runs, $CRABTALK_HOME/run/<name>.port (CRABTALK_HOME defaults to ~/.crabtalk); as a service \
     it logs to $CRABTALK_HOME/logs/<name>.log. Install, start and stop it with `crabup`.";

/// The clap definition of a `run`-only component named `binary`: what
/// its `main` parses with, and what tests parse unit command lines with.
pub fn run_command(binary: &'static str, about: &'static str) -> clap::Command {
    RunCli::command()
        .name(binary)
        .bin_name(binary)
        .about(about)
        .after_help(FILES_HELP)
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    #[test]
    fn run_and_verbosity_parse_and_anything_else_is_refused() {
        let cli = run_command("crabtalk-x", "x");
        let parse = |args: &[&str]| {
            cli.clone()
                .try_get_matches_from(args)
                .and_then(|m| RunCli::from_arg_matches(&m))
        };
        let run = parse(&["crabtalk-x", "run"]).unwrap();
        assert_eq!(run.command, RunCommand::Run);
        assert_eq!(run.verbosity(), Verbosity::from_count(0));
        assert_eq!(
            parse(&["crabtalk-x", "-vv", "run"])
                .unwrap()
                .verbosity
                .verbose,
            2
        );
        assert_eq!(
            parse(&["crabtalk-x", "run", "-v"])
                .unwrap()
                .verbosity
                .verbose,
            1
        );
        assert!(parse(&["crabtalk-x"]).is_err());
        assert!(parse(&["crabtalk-x", "start"]).is_err());
        assert!(parse(&["crabtalk-x", "run", "extra"]).is_err());
    }

    #[test]
    fn verbosity_names_a_filter() {
        assert_eq!(Verbosity::from_count(0).filter(), "info");
        assert_eq!(Verbosity::from_count(1).filter(), "debug");
        assert_eq!(Verbosity::from_count(5).filter(), "trace");
    }
}
