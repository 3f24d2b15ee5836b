//! `crabtalk-cron`: the crabtalk scheduler service.
//!
//! Not built yet: this binary only reports that.

fn main() -> std::process::ExitCode {
    eprintln!("crabtalk-cron: not yet built");
    std::process::ExitCode::FAILURE
}
