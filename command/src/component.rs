//! The `main` of a component binary.
//!
//! Every crabtalk service binary has the same outer shape, so a unit that
//! runs `<binary> run` works for all of them:
//!
//! - a clap CLI with a `run` subcommand (the foreground service, what units
//!   run) and a global `-v`/`--verbose` (repeat for more);
//! - tracing to stderr (which the service manager appends to
//!   `logs/<name>.log`): `info` by default, `debug` with `-v`, `trace` with
//!   `-vv`; `RUST_LOG` overrides;
//! - `$CRABTALK_HOME/env` loaded before anything else runs (launchd and
//!   Task Scheduler cannot pass it; see
//!   [`Home::load_env_file`](crabtalk_proto::home::Home::load_env_file));
//! - exit codes: 0 success, 1 failure, 2 bad usage (clap),
//!   [`CONFIG_EXIT_CODE`] (78, `EX_CONFIG`) for missing or invalid
//!   configuration, which systemd units are told not to restart on, and
//!   [`NOT_BUILT_EXIT_CODE`] (69, `EX_UNAVAILABLE`) for a component whose
//!   service does not exist yet.
//!
//! A component with only `run` calls [`main_mcp`] (or [`main_run`] for a
//! service that is not MCP alone). One with more commands flattens
//! [`Verbosity`] into its own parser and adds a `Run` variant, then uses
//! [`prepare`] and [`exit_code`].
//!
//! ```no_run
//! # #[derive(Clone, Default)] struct SearchTools;
//! # impl rmcp::ServerHandler for SearchTools {}
//! fn main() -> std::process::ExitCode {
//!     crabtalk_command::component::main_mcp(
//!         crabtalk_command::Service::new("search", "crabtalk-search", "meta-search").unwrap(),
//!         "Meta-search MCP service for crabtalk agents",
//!         SearchTools::default,
//!     )
//! }
//! ```

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use crabtalk_proto::home::Home;

pub use crate::unit::{CONFIG_EXIT_CODE, NOT_BUILT_EXIT_CODE};
use crate::{Service, mcp};

/// `-v`, `-vv`: more log detail. Flatten it into a component's parser.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Verbosity {
    /// More log detail on stderr: -v for debug, -vv for trace (RUST_LOG overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// The CLI of a component whose only command is `run`.
#[derive(Debug, clap::Parser)]
pub struct RunCli {
    #[command(flatten)]
    pub verbosity: Verbosity,
    #[command(subcommand)]
    pub command: RunCommand,
}

/// The commands of [`RunCli`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Subcommand)]
pub enum RunCommand {
    /// Run the service in the foreground (what its service unit runs). Use
    /// `crabup <name> start` to run it in the background as a service.
    Run,
}

/// The clap definition of a `run`-only component named `binary`: what
/// tests parse unit command lines with.
pub fn run_command(binary: &'static str, about: &'static str) -> clap::Command {
    RunCli::command()
        .name(binary)
        .bin_name(binary)
        .about(about)
        .after_help(
            "Files: while it runs, $CRABTALK_HOME/run/<name>.port (CRABTALK_HOME defaults to \
             ~/.crabtalk); as a service it logs to $CRABTALK_HOME/logs/<name>.log. Install, \
             start and stop it with `crabup`.",
        )
}

/// Missing or invalid configuration: exits with [`CONFIG_EXIT_CODE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The component exists as a command line only: exits with
/// [`NOT_BUILT_EXIT_CODE`].
#[derive(Debug, thiserror::Error)]
#[error(
    "the {0} service is not built yet (this binary has only its command line); stop it with \
     `crabup {0} stop`"
)]
pub struct NotBuilt(pub String);

/// Sends tracing to stderr at the level `-v` asks for (`RUST_LOG` wins).
pub fn init_tracing(verbosity: Verbosity) {
    let default = match verbosity.verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal, never in a service's log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// The exit code for a component's result, printing the error to stderr.
/// A [`ConfigError`] anywhere in the chain gives [`CONFIG_EXIT_CODE`].
pub fn exit_code(binary: &str, result: anyhow::Result<()>) -> ExitCode {
    let Err(err) = result else {
        return ExitCode::SUCCESS;
    };
    eprintln!("{binary}: error: {err:#}");
    if err.chain().any(|cause| cause.is::<ConfigError>()) {
        ExitCode::from(CONFIG_EXIT_CODE)
    } else if err.chain().any(|cause| cause.is::<NotBuilt>()) {
        ExitCode::from(NOT_BUILT_EXIT_CODE)
    } else {
        ExitCode::FAILURE
    }
}

/// What every component does before its command runs, in this order: find
/// the home, load `$CRABTALK_HOME/env` (while the process has one thread,
/// so `RUST_LOG` may come from it too), and set up tracing. Failures are
/// [`ConfigError`]s.
pub fn prepare(verbosity: Verbosity) -> Result<Home, ConfigError> {
    let home = Home::from_env().map_err(|err| ConfigError(err.to_string()))?;
    let loaded = home
        .load_env_file()
        .map_err(|err| ConfigError(err.to_string()))?;
    init_tracing(verbosity);
    if !loaded.is_empty() {
        tracing::info!(
            "loaded {} from {}",
            loaded.join(", "),
            home.env_file().display()
        );
    }
    Ok(home)
}

/// A runtime for one component: a single thread keeps a component small.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The whole `main` of a component that only serves MCP: parse `run` and
/// `-v`, [`prepare`], serve `factory`'s handler with [`mcp::run_mcp`].
pub fn main_mcp<S, F>(service: Service, about: &'static str, factory: F) -> ExitCode
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    main_run(service, about, move |home, service| {
        runtime()?.block_on(mcp::run_mcp(home, service, mcp::mcp_router(factory)))?;
        Ok(())
    })
}

/// The whole `main` of a `run`-only component: parse `run` and `-v`,
/// [`prepare`], then call `run`, which is the service until it returns.
pub fn main_run<F>(service: Service, about: &'static str, run: F) -> ExitCode
where
    F: FnOnce(&Home, &Service) -> anyhow::Result<()>,
{
    // clap wants a 'static name; one small string for the life of main.
    let binary: &'static str = Box::leak(service.binary().to_owned().into_boxed_str());
    let matches = run_command(binary, about).get_matches();
    let cli = match RunCli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let result = prepare(cli.verbosity)
        .map_err(anyhow::Error::from)
        .and_then(|home| match cli.command {
            RunCommand::Run => run(&home, &service),
        });
    exit_code(binary, result)
}

/// The `main` of a component whose service is not built yet: its command
/// line is the real one (units that run it parse), and `run` fails with
/// [`NotBuilt`].
pub fn main_not_built(service: Service, about: &'static str) -> ExitCode {
    main_run(service, about, |_, service| {
        Err(NotBuilt(service.name().to_owned()).into())
    })
}

#[cfg(test)]
mod tests {
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
        assert_eq!(run.verbosity.verbose, 0);
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
    fn config_errors_exit_with_ex_config() {
        let config: anyhow::Result<()> =
            Err(anyhow::Error::new(ConfigError("no token".into())).context("starting"));
        assert_eq!(exit_code("x", config), ExitCode::from(78));
        assert_eq!(
            exit_code("x", Err(anyhow::anyhow!("boom"))),
            ExitCode::FAILURE
        );
        assert_eq!(exit_code("x", Ok(())), ExitCode::SUCCESS);
        let not_built: anyhow::Result<()> = Err(NotBuilt("search".into()).into());
        assert_eq!(exit_code("x", not_built), ExitCode::from(69));
    }
}
