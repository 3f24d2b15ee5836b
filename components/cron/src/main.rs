//! `crabtalk-cron`: parses its command line and hands over to the library
//! through the component kit (`run` without an id is the service;
//! everything else a command).

use crabtalk_cron::cli::{self, Cli, Command};

fn main() -> std::process::ExitCode {
    crabtalk_kit::main_with(cli::service(), |cli: Cli, component| async move {
        match cli.command {
            Command::Run { id: None, .. } => crabtalk_cron::run(&component).await,
            command => crabtalk_cron::run_command(&component, command).await,
        }
    })
}
