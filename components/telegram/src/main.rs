//! `crabtalk-telegram`: parses its command line and hands over to the component
//! main helper (see the library for what is built).

use crabtalk_telegram::cli;

fn main() -> std::process::ExitCode {
    crabtalk_kit::main_not_built(cli::service(), cli::ABOUT)
}
