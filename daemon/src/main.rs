//! `crabtalkd`: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;
use crabtalk_proto::home::Home;
use crabtalkd::cli::{Cli, Command, MemoryCommand, SessionsCommand};
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(cli.log_filter()));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();

    let home = match &cli.home {
        Some(root) => Home::new(root),
        None => match Home::from_env() {
            Ok(home) => home,
            Err(err) => {
                eprintln!("crabtalkd: {err}");
                return ExitCode::FAILURE;
            }
        },
    };
    // Before the runtime starts any thread (see `load_env_file`).
    if let Err(err) = home.load_env_file() {
        eprintln!("crabtalkd: {err}");
        return ExitCode::from(crabtalkd::process::EX_CONFIG);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("crabtalkd: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(_) => {
                let shutdown = CancellationToken::new();
                let trigger = shutdown.clone();
                tokio::spawn(async move {
                    crabtalkd::process::shutdown_signal().await;
                    trigger.cancel();
                });
                crabtalkd::process::run(home, shutdown).await
            }
            Command::Reload => crabtalkd::process::reload(&home).await,
            Command::Check => crabtalkd::process::check(&home),
            Command::Memory(MemoryCommand::Dump(args)) => {
                crabtalkd::commands::memory_dump(&home, &args.agent, &args.dir)
                    .map(|done| println!("{done}"))
            }
            Command::Memory(MemoryCommand::Load(args)) => {
                crabtalkd::commands::memory_load(&home, &args.agent, &args.dir)
                    .map(|done| println!("{done}"))
            }
            Command::Sessions(SessionsCommand::Search(args)) => {
                crabtalkd::commands::sessions_search(&home, &args)
                    .await
                    .map(|found| println!("{found}"))
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crabtalkd: {err:#}");
            ExitCode::from(crabtalkd::process::exit_code(&err))
        }
    }
}
