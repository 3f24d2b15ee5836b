//! `crabtalk-telegram`: parses its command line and hands over to the
//! library through the component kit (`run` is the gateway; `pair` the
//! pairing commands).

use crabtalk_telegram::cli::{self, Cli, Command};

fn main() -> std::process::ExitCode {
    crabtalk_kit::main_with(cli::service(), |cli: Cli, component| async move {
        match cli.command {
            Command::Run => crabtalk_telegram::run(&component).await,
            Command::Pair(pair) => crabtalk_telegram::pair(component.home(), pair),
        }
    })
}
