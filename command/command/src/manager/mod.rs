//! Service managers: who keeps a crabtalk service running.
//!
//! One small interface, [`ServiceManager`], over four backends:
//!
//! | kind | where | unit | state from |
//! |---|---|---|---|
//! | [`launchd`] | macOS | `~/Library/LaunchAgents/<label>.plist` | `launchctl print` |
//! | [`systemd`] | Linux with a user manager | `~/.config/systemd/user/<label>.service` | `systemctl --user show` |
//! | [`schtasks`] | Windows | a Task Scheduler task | `schtasks /Query` |
//! | [`process`] | anywhere else (containers, WSL, CI) | none | `run/<name>.pid` + the pid |
//!
//! [`ManagerKind::select`] picks one: `CRABTALK_SERVICE_MANAGER` when set,
//! else the platform's, else `process` when no service manager runs.
//! Whether a service runs is always asked of the manager (or the pid, for
//! the process backend), never inferred from a unit file existing.
//!
//! Every operation is idempotent and says what it did: starting a running
//! service reports [`Started::AlreadyRunning`], stopping a stopped one
//! [`Stopped::NotRunning`]; restart always stops and starts again.

pub mod launchd;
pub mod process;
pub mod schtasks;
pub mod systemd;
mod tool;

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crabtalk_home::Home;

use crate::liveness::PortProbe;
use crate::unit::{RenderError, UnitSpec};

pub use tool::{Tool, ToolError};

/// The variable that forces a manager.
pub const MANAGER_ENV: &str = "CRABTALK_SERVICE_MANAGER";

/// How long [`wait_until_ready`] waits by default.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// A service manager backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManagerKind {
    Launchd,
    Systemd,
    Schtasks,
    Process,
}

impl ManagerKind {
    pub const ALL: [ManagerKind; 4] = [Self::Launchd, Self::Systemd, Self::Schtasks, Self::Process];

    pub fn name(self) -> &'static str {
        match self {
            Self::Launchd => "launchd",
            Self::Systemd => "systemd",
            Self::Schtasks => "schtasks",
            Self::Process => "process",
        }
    }

    pub fn parse(name: &str) -> Result<Self, ManagerError> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == name.trim())
            .ok_or_else(|| ManagerError::UnknownKind(name.to_owned()))
    }

    /// The unit format this manager installs, if any.
    pub fn unit_format(self) -> Option<crate::UnitFormat> {
        match self {
            Self::Launchd => Some(crate::UnitFormat::Launchd),
            Self::Systemd => Some(crate::UnitFormat::Systemd),
            Self::Schtasks => Some(crate::UnitFormat::Schtasks),
            Self::Process => None,
        }
    }

    /// `CRABTALK_SERVICE_MANAGER` when set, else what this machine runs.
    pub fn select() -> Result<Self, ManagerError> {
        Self::select_from(std::env::var(MANAGER_ENV).ok().as_deref(), Self::detect)
    }

    /// `forced` (the value of `CRABTALK_SERVICE_MANAGER`) when it is set
    /// and not blank, else what `detect` finds.
    pub fn select_from(
        forced: Option<&str>,
        detect: impl FnOnce() -> Self,
    ) -> Result<Self, ManagerError> {
        match forced {
            Some(name) if !name.trim().is_empty() => Self::parse(name),
            _ => Ok(detect()),
        }
    }

    /// The platform's manager when it is usable, else `process`.
    pub fn detect() -> Self {
        Self::detect_on(std::env::consts::OS, systemd::user_manager_available)
    }

    /// The manager of `os` (as in [`std::env::consts::OS`]): launchd on
    /// macOS, Task Scheduler on Windows, and elsewhere systemd when
    /// `user_systemd_runs` finds a user manager, else `process` (containers,
    /// WSL without systemd, CI).
    pub fn detect_on(os: &str, user_systemd_runs: impl FnOnce() -> bool) -> Self {
        match os {
            "macos" => Self::Launchd,
            "windows" => Self::Schtasks,
            _ if user_systemd_runs() => Self::Systemd,
            _ => Self::Process,
        }
    }

    /// A manager of this kind for services of `home`.
    pub fn open(self, home: &Home) -> Result<Box<dyn ServiceManager>, ManagerError> {
        Ok(match self {
            Self::Launchd => Box::new(launchd::Launchd::for_current_user()?),
            Self::Systemd => Box::new(systemd::Systemd::for_current_user()?),
            Self::Schtasks => Box::new(schtasks::Schtasks::new(home)),
            Self::Process => Box::new(process::ProcessManager::new(home)),
        })
    }
}

impl fmt::Display for ManagerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a service runs, as its manager reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    Running,
    /// Installed (or known) but not running.
    Stopped,
    /// It exited with an error (or was killed) and is not running.
    Failed,
    /// It exited with an error and its manager starts it again shortly.
    Restarting,
    /// The manager does not know it.
    NotInstalled,
}

impl ServiceState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
            Self::Restarting => "restarting",
            Self::NotInstalled => "not installed",
        }
    }
}

impl fmt::Display for ServiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A manager's answer about one service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStatus {
    pub state: ServiceState,
    pub pid: Option<u32>,
    /// The manager's own words, when they add something (exit code, reason).
    pub detail: Option<String>,
    /// How many times the manager restarted it after a failure, when it
    /// says (systemd's `NRestarts`, the process backend's supervisor).
    pub restarts: Option<u32>,
    /// How its last process ended, when the manager says
    /// (`killed by signal 9 (SIGKILL)`).
    pub last_exit: Option<String>,
}

impl ServiceStatus {
    pub fn new(state: ServiceState) -> Self {
        Self {
            state,
            pid: None,
            detail: None,
            restarts: None,
            last_exit: None,
        }
    }

    pub fn running(pid: Option<u32>) -> Self {
        Self {
            pid,
            ..Self::new(ServiceState::Running)
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn is_running(&self) -> bool {
        self.state == ServiceState::Running
    }
}

/// What [`ServiceManager::install`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// The unit was written (new or changed) and registered.
    Written(PathBuf),
    /// The unit on disk was already this one.
    Unchanged(PathBuf),
    /// This manager has no unit (the process backend).
    NoUnit,
}

/// What [`ServiceManager::start`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    Started { pid: Option<u32> },
    AlreadyRunning { pid: Option<u32> },
}

/// What [`ServiceManager::stop`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    Stopped { pid: Option<u32> },
    NotRunning,
}

/// What [`ServiceManager::restart`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restarted {
    pub old_pid: Option<u32>,
    pub new_pid: Option<u32>,
}

/// What [`ServiceManager::uninstall`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uninstalled {
    Removed(PathBuf),
    NotInstalled,
}

/// Why a manager operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error(
        "unknown service manager {0:?} in {MANAGER_ENV}: use process, systemd, launchd or schtasks"
    )]
    UnknownKind(String),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{binary} is not installed at {path}; install it with `crabup pull`")]
    MissingBinary { binary: String, path: PathBuf },
    #[error("{service} exited right after it started ({status}); its log {log} ends with:\n{tail}")]
    ExitedAtStart {
        service: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("{service} (pid {pid}) did not stop within {seconds}s, even after SIGKILL")]
    WouldNotStop {
        service: String,
        pid: u32,
        seconds: u64,
    },
    #[error("{0}")]
    Other(String),
}

impl ManagerError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}

/// A service manager: install, start, stop, restart, ask, uninstall.
pub trait ServiceManager {
    fn kind(&self) -> ManagerKind;

    /// Where this manager keeps the unit of `spec`, if it has one.
    fn unit_path(&self, spec: &UnitSpec) -> Option<PathBuf>;

    /// Writes and registers the unit without starting it.
    fn install(&self, spec: &UnitSpec) -> Result<Installed, ManagerError>;

    /// Installs if needed and starts; a running service is left alone.
    fn start(&self, spec: &UnitSpec) -> Result<Started, ManagerError>;

    /// Stops the service and keeps it from starting at login until the
    /// next `start`; a stopped service is left alone.
    fn stop(&self, spec: &UnitSpec) -> Result<Stopped, ManagerError>;

    /// Stops (if running) and starts again.
    fn restart(&self, spec: &UnitSpec) -> Result<Restarted, ManagerError>;

    /// Asks the manager (or the pid) whether the service runs.
    fn status(&self, spec: &UnitSpec) -> Result<ServiceStatus, ManagerError>;

    /// Stops the service and removes its unit.
    fn uninstall(&self, spec: &UnitSpec) -> Result<Uninstalled, ManagerError>;
}

/// Fails unless the binary a unit runs exists.
pub(crate) fn require_binary(spec: &UnitSpec) -> Result<(), ManagerError> {
    if spec.program.is_file() {
        return Ok(());
    }
    Err(ManagerError::MissingBinary {
        binary: spec.service.binary().to_owned(),
        path: spec.program.clone(),
    })
}

/// Writes `text` to `path` atomically unless it already holds exactly that.
pub(crate) fn write_unit(path: &std::path::Path, text: &[u8]) -> Result<Installed, ManagerError> {
    if std::fs::read(path).is_ok_and(|old| old == text) {
        return Ok(Installed::Unchanged(path.to_owned()));
    }
    crabtalk_home::write_atomic(path, text).map_err(ManagerError::io("writing the unit", path))?;
    Ok(Installed::Written(path.to_owned()))
}

/// Creates the folders a service writes to (`logs/`, `run/`), private to
/// this user (0700) as the daemon wants them: a home crabup made first is
/// never one the daemon then warns about.
pub(crate) fn prepare_home(spec: &UnitSpec) -> Result<(), ManagerError> {
    for dir in [
        spec.home.clone(),
        spec.home.join("logs"),
        spec.home.join("run"),
    ] {
        if dir.is_dir() {
            continue;
        }
        crabtalk_home::create_private_dir(&dir).map_err(ManagerError::io("creating", &dir))?;
    }
    Ok(())
}

/// Whether a started service is ready: its port file names a live process
/// (`pid`, when known) and its port answers — or, for the daemon, its Unix
/// socket accepts a connection (TCP can be turned off in its config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready {
        port: Option<u16>,
    },
    /// The manager no longer reports it running.
    NotRunning(ServiceStatus),
    /// Still running, but no live port file yet.
    TimedOut,
}

/// Polls until the service of `spec` is ready, stops running, or `timeout`
/// passes. A service its manager is restarting is waited for.
pub fn wait_until_ready(
    manager: &dyn ServiceManager,
    spec: &UnitSpec,
    home: &Home,
    timeout: Duration,
) -> Result<Readiness, ManagerError> {
    let port_file = spec.service.port_file(home);
    let deadline = Instant::now() + timeout;
    loop {
        let status = manager.status(spec)?;
        if !status.is_running() && status.state != ServiceState::Restarting {
            return Ok(Readiness::NotRunning(status));
        }
        if let PortProbe::Live(file) = PortProbe::check(&port_file) {
            let ours = match (file.pid, status.pid) {
                (Some(written), Some(running)) => written == running,
                _ => true,
            };
            if ours {
                return Ok(Readiness::Ready {
                    port: Some(file.port),
                });
            }
        }
        #[cfg(unix)]
        if spec.service.is_daemon()
            && std::os::unix::net::UnixStream::connect(home.socket_path()).is_ok()
            && !spec.service.port_file(home).exists()
        {
            return Ok(Readiness::Ready { port: None });
        }
        if Instant::now() >= deadline {
            return Ok(Readiness::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_service_manager_the_process_backend_is_chosen() {
        for os in ["linux", "freebsd"] {
            assert_eq!(ManagerKind::detect_on(os, || false), ManagerKind::Process);
            assert_eq!(ManagerKind::detect_on(os, || true), ManagerKind::Systemd);
        }
        // launchd and Task Scheduler always run; systemd is not even asked.
        let unasked = || panic!("systemd probed on a system without it");
        assert_eq!(
            ManagerKind::detect_on("macos", unasked),
            ManagerKind::Launchd
        );
        assert_eq!(
            ManagerKind::detect_on("windows", unasked),
            ManagerKind::Schtasks
        );
    }

    #[test]
    fn the_variable_forces_a_manager_and_blank_means_detect() {
        let detected = || ManagerKind::Process;
        assert_eq!(
            ManagerKind::select_from(None, detected).unwrap(),
            ManagerKind::Process
        );
        assert_eq!(
            ManagerKind::select_from(Some("  "), detected).unwrap(),
            ManagerKind::Process
        );
        assert_eq!(
            ManagerKind::select_from(Some(" systemd\n"), detected).unwrap(),
            ManagerKind::Systemd
        );
        let not_detected = || panic!("detection ran although a manager was forced");
        assert_eq!(
            ManagerKind::select_from(Some("launchd"), not_detected).unwrap(),
            ManagerKind::Launchd
        );
        assert!(matches!(
            ManagerKind::select_from(Some("upstart"), detected),
            Err(ManagerError::UnknownKind(name)) if name == "upstart"
        ));
    }
}
