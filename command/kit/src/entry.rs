//! The whole `main` of a component.
//!
//! In this order: parse the command line (clap exits 2 on bad usage; the
//! kit's `check` is added to every component's, see [`crate::check`]), find
//! the home, load `$CRABTALK_HOME/env` while the process still has one
//! thread (so `RUST_LOG` may come from it too), set up logging, install the
//! TLS provider, start a current-thread runtime (a component is small; one
//! thread keeps its idle footprint at a few megabytes), install the
//! SIGINT/SIGTERM handlers, and run the component's code with a
//! [`Component`]; once it has settled, the pages start-up alone needed are
//! given back (`footprint`). Its result becomes the exit code ([`exit`](crate::exit)).
//! Tasks still running when the code returns get [`RUNTIME_GRACE`] to
//! finish before the process exits.

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use clap::FromArgMatches;
use crabtalk_home::{Home, Service};

use crate::check::Check;
use crate::cli::{
    CHECK, ComponentCli, Mode, RunCli, RunCommand, Verbosity, run_command, with_check,
};
use crate::config::ConfigError;
use crate::exit::exit_code;
use crate::{Component, Shutdown};

/// How long tasks left running at the end get before the process exits.
pub(crate) const RUNTIME_GRACE: Duration = Duration::from_millis(200);

/// The `main` of a component whose only command is `run`: `run` calls
/// `run_component` with the component, which is the service until it
/// returns; `check` calls `check` (see [`crate::check`] for ready ones).
pub fn main_run<F, Fut>(
    service: Service,
    about: &'static str,
    check: Check,
    run_component: F,
) -> ExitCode
where
    F: FnOnce(Component) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    // clap wants a 'static name; one small string for the life of main.
    let binary: &'static str = Box::leak(service.binary().to_owned().into_boxed_str());
    let matches = run_command(binary, about).get_matches();
    if matches.subcommand_name() == Some(CHECK) {
        return exit_code(binary, run_check(verbosity_of(&matches), service, check));
    }
    let cli = RunCli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let result = run_parsed(cli.verbosity, cli.mode(), service, |component| {
        match cli.command {
            RunCommand::Run => run_component(component),
        }
    });
    exit_code(binary, result)
}

/// The `main` of a component with its own command line `C` (which has a
/// `run` command among others, and gets the kit's `check`):
/// `run_component` gets the parsed line and the component, and decides
/// what to do; `check` runs [`ComponentCli::check`].
pub fn main_with<C, F, Fut>(service: Service, run_component: F) -> ExitCode
where
    C: ComponentCli,
    F: FnOnce(C, Component) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let binary = service.binary().to_owned();
    let matches = with_check(C::command()).get_matches();
    if matches.subcommand_name() == Some(CHECK) {
        return exit_code(
            &binary,
            run_check(verbosity_of(&matches), service, C::check),
        );
    }
    let cli = C::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let result = run_parsed(cli.verbosity(), cli.mode(), service, |component| {
        run_component(cli, component)
    });
    exit_code(&binary, result)
}

/// The `-v` count of a parsed command line (the flattened [`Verbosity`]).
fn verbosity_of(matches: &clap::ArgMatches) -> Verbosity {
    let count = matches
        .try_get_one::<u8>("verbose")
        .ok()
        .flatten()
        .copied()
        .unwrap_or(0);
    Verbosity::from_count(count)
}

/// `<binary> check`: the home, the env file (the files may name variables
/// from it), then `check` on a component that starts nothing; its summary
/// on stdout.
fn run_check(verbosity: Verbosity, service: Service, check: Check) -> anyhow::Result<()> {
    let home = prepare(verbosity, Mode::Command)?;
    let summary = check(&Component::new(home, service, Shutdown::new()))?;
    println!("{summary}");
    Ok(())
}

/// The `main` of a component that only serves MCP tools: `run` serves
/// `factory`'s handler (one per MCP session) until shutdown.
#[cfg(feature = "service")]
pub fn main_mcp<S, F>(service: Service, about: &'static str, factory: F) -> ExitCode
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    main_run(
        service,
        about,
        crate::check::no_config,
        |component| async move {
            component.serve_mcp(crate::mcp::mcp_router(factory)).await?;
            Ok(())
        },
    )
}

/// Everything after parsing.
fn run_parsed<F, Fut>(
    verbosity: Verbosity,
    mode: Mode,
    service: Service,
    run_component: F,
) -> anyhow::Result<()>
where
    F: FnOnce(Component) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let home = prepare(verbosity, mode)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| anyhow::anyhow!("cannot start the async runtime: {err}"))?;
    let result = runtime.block_on(async {
        let shutdown = Shutdown::on_signals()
            .map_err(|err| anyhow::anyhow!("cannot listen for shutdown signals: {err}"))?;
        // Start-up's pages of the executable go back once it settles
        // (`footprint`); the task ends with the runtime.
        tokio::spawn(crate::footprint::release_after_settling());
        run_component(Component::new(home, service, shutdown)).await
    });
    runtime.shutdown_timeout(RUNTIME_GRACE);
    result
}

/// What every crabtalk program does first, in this order: find the home,
/// load `$CRABTALK_HOME/env` (call it while the process has one thread),
/// set up logging for the service or a one-shot command (`mode`). The
/// daemon and the kit's `main` both use it.
pub fn prepare(verbosity: Verbosity, mode: Mode) -> Result<Home, ConfigError> {
    let home = Home::from_env()?;
    prepare_home(&home, verbosity, mode)?;
    Ok(home)
}

/// [`prepare`] for a home found some other way (`crabtalkd --home`).
pub fn prepare_home(home: &Home, verbosity: Verbosity, mode: Mode) -> Result<(), ConfigError> {
    let loaded = home.load_env_file()?;
    crate::logging::init(verbosity, mode);
    if !loaded.is_empty() {
        tracing::info!(
            "loaded {} from {}",
            loaded.join(", "),
            home.env_file().display()
        );
    }
    Ok(())
}
