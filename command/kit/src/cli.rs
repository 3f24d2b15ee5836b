//! The outer shape of every component's command line.
//!
//! A unit that runs `<binary> run` works for every crabtalk service, so all
//! of them accept:
//!
//! - `run`: the foreground service, what service units start (`crabup
//!   <name> start` runs it in the background);
//! - `check`: the configuration read as `run` would read it, with nothing
//!   started — a one-line summary and exit 0, or every problem at
//!   `file:line:column` and exit 78. The kit adds it to every component's
//!   command line ([`with_check`]); the component says what it checks
//!   ([`ComponentCli::check`], or the `check` given to
//!   [`main_run`](crate::main_run)). `crabup` runs it before it starts or
//!   restarts a service, so a broken file never takes a working service
//!   down;
//! - a global `-v`/`--verbose`, repeated for more detail.
//!
//! `run` logs at `info` (its stderr is the service's log); every other
//! command is a one-shot whose output a person or a script reads, so it
//! logs only warnings and errors unless `-v` asks for more
//! ([`Verbosity::filter_for`]).
//!
//! A component whose only command is `run` uses [`RunCli`] (through
//! [`main_run`](crate::main_run)); one with more commands flattens
//! [`Verbosity`] into its own clap parser, adds a `Run` variant and
//! implements [`ComponentCli`] (through [`main_with`](crate::main_with)).

use clap::CommandFactory;

use crate::Component;

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

    /// The tracing filter of the service (`run`): `info`, `debug` with
    /// `-v`, `trace` with `-vv` or more.
    pub fn filter(self) -> &'static str {
        self.filter_for(Mode::Service)
    }

    /// The tracing filter for a process in `mode`: a one-shot command
    /// logs only warnings unless `-v` asks for more, so log lines do not
    /// mix with what it prints.
    pub fn filter_for(self, mode: Mode) -> &'static str {
        match (mode, self.verbose) {
            (Mode::Service, 0) => "info",
            (Mode::Command, 0) => "warn",
            (_, 1) => "debug",
            _ => "trace",
        }
    }
}

/// What a process is: the long-running service, or a one-shot command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `run`: its stderr is its log.
    Service,
    /// Anything else: its output is read by a person or a script.
    Command,
}

/// A component's parsed command line, as the kit's `main` needs it.
pub trait ComponentCli: clap::Parser {
    /// How much to log.
    fn verbosity(&self) -> Verbosity;

    /// Whether this command line runs the service (logs at `info`) or a
    /// one-shot command (warnings only, unless `-v`).
    fn mode(&self) -> Mode;

    /// What `<binary> check` runs: the loader `run` uses, on the files it
    /// reads, with nothing started (no port, no lock, no daemon). A
    /// one-line summary when the service would take them; a
    /// [`ConfigError`](crate::config::ConfigError) (exit 78) naming
    /// `file:line:column` when it would not.
    fn check(component: &Component) -> anyhow::Result<String>;
}

/// The name of the subcommand the kit adds to every component.
pub(crate) const CHECK: &str = "check";

/// `command` with the kit's `check` subcommand: what every component's
/// `main` parses with (see [`main_with`](crate::main_with)).
pub fn with_check(command: clap::Command) -> clap::Command {
    command.subcommand(clap::Command::new(CHECK).about(
        "Check the configuration as `run` would read it, starting nothing: prints a \
             summary and exits 0, or prints every problem (file:line:column) and exits 78. \
             `crabup <name> start` and `restart` run it first, so a broken file never stops \
             a running service.",
    ))
}

/// The command line of a component whose only command is `run`.
#[derive(Debug, clap::Parser)]
pub struct RunCli {
    #[command(flatten)]
    pub verbosity: Verbosity,
    #[command(subcommand)]
    pub command: RunCommand,
}

impl RunCli {
    /// Whether it runs the service (always: `run` is its only command).
    pub fn mode(&self) -> Mode {
        match self.command {
            RunCommand::Run => Mode::Service,
        }
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
pub(crate) const FILES_HELP: &str = "Files: its configuration in $CRABTALK_HOME/config/<name>.toml; while it \
     runs, $CRABTALK_HOME/run/<name>.port (CRABTALK_HOME defaults to ~/.crabtalk); as a service \
     it logs to $CRABTALK_HOME/logs/<name>.log. Install, start and stop it with `crabup`.";

/// The clap definition of a `run`-only component named `binary`: what
/// its `main` parses with (`run`, and the kit's `check`), and what tests
/// parse unit command lines with.
pub fn run_command(binary: &'static str, about: &'static str) -> clap::Command {
    with_check(RunCli::command())
        .name(binary)
        .bin_name(binary)
        .version(env!("CARGO_PKG_VERSION"))
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
        assert_eq!(run.verbosity, Verbosity::from_count(0));
        assert_eq!(run.mode(), Mode::Service);
        let check = cli
            .clone()
            .try_get_matches_from(["crabtalk-x", "-v", "check"])
            .unwrap();
        assert_eq!(check.subcommand_name(), Some(CHECK));
        assert_eq!(check.get_count("verbose"), 1);
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
        // A one-shot command says only what went wrong, unless asked.
        assert_eq!(Verbosity::from_count(0).filter_for(Mode::Command), "warn");
        assert_eq!(Verbosity::from_count(1).filter_for(Mode::Command), "debug");
    }
}
