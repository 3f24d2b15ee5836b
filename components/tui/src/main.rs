//! `crabtalk-tui`: parses the command line and hands it to the library.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = crabtalk_tui::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("crabtalk-tui: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(crabtalk_tui::run(cli))
}
