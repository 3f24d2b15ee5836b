//! The daemon's configuration, checked before a running daemon is touched.
//!
//! `crabup` does not read the daemon's files itself (it must not know the
//! daemon's insides): it asks the installed `crabtalkd check`, which runs
//! the very checks a start or reload would. A restart with a broken
//! `config.toml` would stop a working daemon and start one that refuses to
//! run; asking first leaves the running daemon as it is and puts the
//! problems, with their file, line and column, in front of the person.

use std::path::Path;
use std::process::Command;

use crabtalk_proto::home::Home;

/// What `crabtalkd check` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigVerdict {
    /// The daemon would take every file; its one-line summary.
    Fine(String),
    /// The daemon would refuse a file: every problem, one per line.
    Refused(String),
    /// The check could not be run (an older `crabtalkd` without `check`, or
    /// it failed for another reason); why.
    Unavailable(String),
}

/// The exit status of `crabtalkd check` for refused files (EX_CONFIG).
const REFUSED: i32 = 78;

/// Runs `crabtalkd --home HOME check` with the installed `binary`.
pub fn check(binary: &Path, home: &Home) -> ConfigVerdict {
    let output = match Command::new(binary)
        .arg("--home")
        .arg(home.root())
        .arg("check")
        .env("CRABTALK_HOME", home.root())
        .env_remove("RUST_LOG")
        .output()
    {
        Ok(output) => output,
        Err(err) => {
            return ConfigVerdict::Unavailable(format!("cannot run {}: {err}", binary.display()));
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    let stderr = stderr
        .strip_prefix("crabtalkd: ")
        .unwrap_or(&stderr)
        .to_owned();
    match output.status.code() {
        Some(0) => ConfigVerdict::Fine(stdout),
        Some(REFUSED) => ConfigVerdict::Refused(stderr),
        _ if stderr.contains("unrecognized subcommand") => ConfigVerdict::Unavailable(format!(
            "{} has no `check` command (an older crabtalkd; `crabup pull daemon` updates it)",
            binary.display()
        )),
        _ => ConfigVerdict::Unavailable(format!(
            "`{} check` failed ({}): {stderr}",
            binary.display(),
            output.status
        )),
    }
}
