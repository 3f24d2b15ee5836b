//! From a component's result to its exit code.
//!
//! The codes are [`crabtalk_home::exit`]'s: 0 success, 1 failure, 2 a bad
//! command line (clap exits with it itself), 78 (`EX_CONFIG`) when a
//! [`ConfigError`] is anywhere in the error's chain — systemd units are told
//! not to restart on it, since restarting cannot fix a file.

use std::process::ExitCode;

use crabtalk_home::exit::{EX_CONFIG, FAILURE};

use crate::config::ConfigError;

/// The exit code for a component's result, printing the error to stderr
/// as `<binary>: error: <cause: cause: …>`.
pub(crate) fn exit_code(binary: &str, result: anyhow::Result<()>) -> ExitCode {
    let Err(err) = result else {
        return ExitCode::SUCCESS;
    };
    eprintln!("{binary}: error: {err:#}");
    ExitCode::from(code_of(&err))
}

/// The exit code `err` stands for.
pub(crate) fn code_of(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<ConfigError>()) {
        EX_CONFIG
    } else {
        FAILURE
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn config_errors_anywhere_in_the_chain_exit_78() {
        let config: anyhow::Result<()> = Err(anyhow::Error::new(ConfigError::Missing {
            path: PathBuf::from("/h/config/x.toml"),
        })
        .context("starting"));
        assert_eq!(exit_code("x", config), ExitCode::from(78));
        assert_eq!(
            exit_code("x", Err(anyhow::anyhow!("boom"))),
            ExitCode::FAILURE
        );
        assert_eq!(exit_code("x", Ok(())), ExitCode::SUCCESS);
    }
}
