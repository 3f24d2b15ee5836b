//! `crabup`: the crabtalk installer and service manager. See the library.

fn main() -> std::process::ExitCode {
    crabup::main()
}
