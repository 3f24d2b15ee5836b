//! `crabup`: the crabtalk installer and service manager.
//!
//! Not built yet: this binary only reports that.

fn main() -> std::process::ExitCode {
    eprintln!("crabup: not yet built");
    std::process::ExitCode::FAILURE
}
