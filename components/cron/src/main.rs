//! `crabtalk-cron`: parses its command line and hands over to the library
//! (`run` without an id is the service; everything else a command).

use clap::Parser;
use crabtalk_command::component::{exit_code, prepare};
use crabtalk_cron::cli::{self, Cli, Command};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = prepare(cli.verbosity)
        .map_err(anyhow::Error::from)
        .and_then(|home| match cli.command {
            Command::Run { id: None, .. } => crabtalk_cron::service::run(&home, &cli::service()),
            command => crabtalk_cron::commands::run(&home, command),
        });
    exit_code(cli::BINARY, result)
}
