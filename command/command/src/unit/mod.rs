//! Rendering the unit that runs a [`Service`] under a service manager.
//!
//! A [`UnitSpec`] holds everything a unit says, resolved to concrete values:
//! the program and its arguments (`<binary> run`), the working directory and
//! `CRABTALK_HOME` (both the home), `PATH`, the log file that takes stdout
//! and stderr, and the env file of provider keys. [`UnitSpec::render`] turns
//! it into the text of one [`UnitFormat`] using the askama templates in
//! `service-templates/`, escaping every value for that format (see
//! [`escape`]) or refusing, with a [`RenderError`] naming the value, one the
//! format cannot carry.
//!
//! ```
//! use crabtalk_command::{Service, UnitFormat, UnitSpec};
//! use crabtalk_home::Home;
//!
//! let spec = UnitSpec::new(
//!     Service::daemon(),
//!     &Home::new("/home/me/.crabtalk"),
//!     "/home/me/.cargo/bin/crabtalkd".into(),
//!     "/home/me/.cargo/bin:/usr/bin".into(),
//! );
//! let unit = spec.render(UnitFormat::Systemd).unwrap();
//! assert!(unit.contains("ExecStart=\"/home/me/.cargo/bin/crabtalkd\" \"run\""));
//! ```

pub mod escape;
mod launchd;
mod schtasks;
mod systemd;

use std::fmt;
use std::path::{Path, PathBuf};

use crabtalk_home::Home;

use crate::Service;

/// Seconds a manager waits before restarting a service that failed.
pub const RESTART_DELAY_SECS: u32 = 5;

/// launchd's minimum spacing between two starts of a job (its
/// `ThrottleInterval`; launchd's own default is 10).
pub const LAUNCHD_THROTTLE_SECS: u32 = 10;

/// The comment at the top of every rendered unit.
const HEADER: &str = "Written by crabup (crabtalk-command); edits are overwritten. Preview it with: crabup SERVICE unit";

/// A unit file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnitFormat {
    /// macOS launchd property list (`~/Library/LaunchAgents/<label>.plist`).
    Launchd,
    /// systemd user unit (`~/.config/systemd/user/<label>.service`).
    Systemd,
    /// Windows Task Scheduler task XML (`schtasks /Create /XML`).
    Schtasks,
}

impl UnitFormat {
    pub const ALL: [UnitFormat; 3] = [Self::Launchd, Self::Systemd, Self::Schtasks];

    pub fn name(self) -> &'static str {
        match self {
            Self::Launchd => "launchd",
            Self::Systemd => "systemd",
            Self::Schtasks => "schtasks",
        }
    }
}

impl fmt::Display for UnitFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value a unit format cannot carry.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the {field} {value:?} into a {format} unit: {reason}")]
pub struct RenderError {
    pub format: UnitFormat,
    pub field: &'static str,
    pub value: String,
    pub reason: String,
}

/// Everything a unit says about one service, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitSpec {
    pub service: Service,
    /// The absolute path of the binary.
    pub program: PathBuf,
    /// `CRABTALK_HOME`, also the working directory.
    pub home: PathBuf,
    /// `PATH` for the service.
    pub path_env: String,
    /// `logs/<name>.log`: stdout and stderr, appended.
    pub log_file: PathBuf,
    /// `$CRABTALK_HOME/env`: `KEY=value` lines, loaded where the manager can.
    pub env_file: PathBuf,
}

impl UnitSpec {
    pub fn new(service: Service, home: &Home, program: PathBuf, path_env: String) -> Self {
        Self {
            log_file: service.log_file(home),
            env_file: home.env_file(),
            home: home.root().to_owned(),
            service,
            program,
            path_env,
        }
    }

    /// The full command line: the program, then the service's arguments.
    pub fn command_line(&self) -> Vec<String> {
        let mut line = vec![self.program.display().to_string()];
        line.extend(self.service.args().iter().cloned());
        line
    }

    /// The text of this unit in `format`.
    pub fn render(&self, format: UnitFormat) -> Result<String, RenderError> {
        let text = match format {
            UnitFormat::Launchd => launchd::render(self),
            UnitFormat::Systemd => systemd::render(self),
            UnitFormat::Schtasks => schtasks::render(self),
        }?;
        Ok(text)
    }
}

/// Escapes one field, naming it in the error.
fn field<T>(
    format: UnitFormat,
    name: &'static str,
    value: &str,
    escape: impl FnOnce(&str) -> Result<T, escape::Refusal>,
) -> Result<T, RenderError> {
    escape(value).map_err(|reason| RenderError {
        format,
        field: name,
        value: value.to_owned(),
        reason,
    })
}

/// A path as text, refusing paths that are not valid Unicode (no unit
/// format can be trusted to carry raw bytes).
fn path_text<'a>(
    format: UnitFormat,
    name: &'static str,
    path: &'a Path,
) -> Result<&'a str, RenderError> {
    path.to_str().ok_or_else(|| RenderError {
        format,
        field: name,
        value: path.display().to_string(),
        reason: "it is not valid UTF-8".into(),
    })
}

/// Maps askama's (infallible in practice) render error.
fn rendered(result: askama::Result<String>) -> String {
    result.expect("unit templates render plain fields and cannot fail")
}
