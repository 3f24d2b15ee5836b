//! `crabtalk-search`: the crabtalk meta-search MCP service.
//!
//! Not built yet: this binary only reports that.

fn main() -> std::process::ExitCode {
    eprintln!("crabtalk-search: not yet built");
    std::process::ExitCode::FAILURE
}
