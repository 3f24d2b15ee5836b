//! `crabtalkd`: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;
use crabtalk_home::Home;
use crabtalk_home::exit::{EX_CONFIG, FAILURE};
use crabtalk_kit::Shutdown;
use crabtalk_kit::cli::{Mode, Verbosity};
use crabtalkd::cli::{Cli, Command, MemoryCommand, SessionsCommand};

fn main() -> ExitCode {
    // Before anything is created: the daemon's files are its user's alone.
    crabtalkd::restrict_umask();
    let cli = Cli::parse();
    let home = match &cli.home {
        Some(root) => Home::new(root),
        None => match Home::from_env() {
            Ok(home) => home,
            Err(err) => {
                eprintln!("crabtalkd: {err}");
                return ExitCode::from(EX_CONFIG);
            }
        },
    };
    // The env file before the runtime starts any thread, then logging (so
    // RUST_LOG may come from the file): `run` logs at info (its stderr is
    // its log), a one-shot command only warnings, so its output is its own.
    let mode = match cli.command {
        Command::Run(_) => Mode::Service,
        _ => Mode::Command,
    };
    if let Err(err) = crabtalk_kit::prepare_home(&home, Verbosity::from_count(cli.verbose), mode) {
        eprintln!("crabtalkd: {err}");
        return ExitCode::from(EX_CONFIG);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("crabtalkd: cannot start the async runtime: {err}");
            return ExitCode::from(FAILURE);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(_) => {
                let shutdown = Shutdown::on_signals()?;
                crabtalkd::run(home, shutdown.cancellation_token()).await
            }
            Command::Reload => crabtalkd::reload(&home).await,
            Command::Check => crabtalkd::check(&home),
            Command::Memory(MemoryCommand::Dump(args)) => {
                crabtalkd::memory_dump(&home, &args.agent, &args.dir).map(|done| println!("{done}"))
            }
            Command::Memory(MemoryCommand::Load(args)) => {
                crabtalkd::memory_load(&home, &args.agent, &args.dir).map(|done| println!("{done}"))
            }
            Command::Mcp => {
                let shutdown = Shutdown::on_signals()?;
                crabtalkd::run_bridge(home, shutdown.cancellation_token()).await
            }
            Command::Sessions(SessionsCommand::Search(args)) => {
                crabtalkd::sessions_search(&home, &args)
                    .await
                    .map(|found| println!("{found}"))
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crabtalkd: {err:#}");
            ExitCode::from(crabtalkd::exit_code(&err))
        }
    }
}
