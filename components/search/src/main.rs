//! `crabtalk-search`: parses its command line and hands over to the
//! library through the component kit (`run` is the service; everything
//! else a command).

use crabtalk_search::cli::{self, Cli, Command};

fn main() -> std::process::ExitCode {
    crabtalk_kit::main_with(cli::service(), |cli: Cli, component| async move {
        match cli.command {
            Command::Run => crabtalk_search::run(&component).await,
            command => crabtalk_search::run_command(&component, command).await,
        }
    })
}
