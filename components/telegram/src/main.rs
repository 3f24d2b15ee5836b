//! `crabtalk-telegram`: the crabtalk Telegram gateway.
//!
//! Not built yet: this binary only reports that.

fn main() -> std::process::ExitCode {
    eprintln!("crabtalk-telegram: not yet built");
    std::process::ExitCode::FAILURE
}
