//! `crabtalkd`: the crabtalk daemon.
//!
//! Not built yet: this binary only reports that.

fn main() -> std::process::ExitCode {
    eprintln!("crabtalkd: not yet built");
    std::process::ExitCode::FAILURE
}
