//! Running a manager's own command-line tool (`systemctl`, `launchctl`,
//! `schtasks`) with errors that say which command failed and how.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// An external program a manager drives.
#[derive(Debug, Clone)]
pub struct Tool {
    program: PathBuf,
    /// Arguments put before every call (`--user` for systemctl).
    prefix: Vec<String>,
}

/// A tool that could not run or reported failure.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
}

/// What a tool printed and how it exited.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Tool {
    pub fn new(program: impl Into<PathBuf>, prefix: &[&str]) -> Self {
        Self {
            program: program.into(),
            prefix: prefix.iter().map(|arg| arg.to_string()).collect(),
        }
    }

    fn describe(&self, args: &[&OsStr]) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.prefix.iter().cloned());
        words.extend(args.iter().map(|arg| arg.to_string_lossy().into_owned()));
        words.join(" ")
    }

    /// Runs the tool and returns its output whatever its exit status.
    pub fn output<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<ToolOutput, ToolError> {
        let args: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
        let Output {
            status,
            stdout,
            stderr,
        } = Command::new(&self.program)
            .args(&self.prefix)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|source| ToolError::Spawn {
                command: self.describe(&args),
                source,
            })?;
        Ok(ToolOutput {
            success: status.success(),
            code: status.code(),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    /// Runs the tool and fails unless it exits with success.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<ToolOutput, ToolError> {
        let output = self.output(args)?;
        if output.success {
            return Ok(output);
        }
        let args: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
        let stderr = if output.stderr.trim().is_empty() {
            output.stdout.trim().to_owned()
        } else {
            output.stderr.trim().to_owned()
        };
        Err(ToolError::Failed {
            command: self.describe(&args),
            status: output.code.map_or_else(
                || "killed by a signal".to_owned(),
                |code| format!("exit code {code}"),
            ),
            stderr,
        })
    }
}
