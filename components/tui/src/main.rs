//! `crabtalk-tui`: the crabtalk terminal client.
//!
//! Not built yet: this binary only reports that.

fn main() -> std::process::ExitCode {
    eprintln!("crabtalk-tui: not yet built");
    std::process::ExitCode::FAILURE
}
