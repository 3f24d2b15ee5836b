//! `bash` where there is no Unix process model: refused with a clear
//! message rather than run without its guarantees.

use std::path::PathBuf;
use std::time::Duration;

/// Bytes kept of each of stdout and stderr.
pub const OUTPUT_CAP: usize = 64 * 1024;

pub enum Ending {
    Exited(i32),
    TimedOut,
    Vanished,
}

pub struct Finished {
    pub ending: Ending,
    pub stdout: Captured,
    pub stderr: Captured,
}

#[derive(Default)]
pub struct Captured {
    pub kept: Vec<u8>,
    pub total: usize,
    pub cut_off: bool,
}

/// Why a command did not run: here, always, for want of Unix.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("bash runs only on Unix systems, where everything a call starts can be stopped")]
    Unsupported,
}

pub async fn run(
    _command: &str,
    _cwd: PathBuf,
    _env: Vec<(String, String)>,
    _timeout: Duration,
) -> Result<Finished, RunError> {
    Err(RunError::Unsupported)
}
