//! `crabtalk-search`: parses its command line and hands over to the
//! library through the component kit (`run` is the service; everything
//! else a command).

use crabtalk_search::cli::{self, Cli, Command};

fn main() -> std::process::ExitCode {
    crabtalk_kit::main_with(cli::service(), |cli: Cli, component| async move {
        match cli.command {
            Command::Run => crabtalk_search::service::run(&component).await,
            command => crabtalk_search::subcommands::run(&component, command).await,
        }
    })
}
