//! The `process` backend: a detached child, for machines with no service
//! manager (containers, WSL, CI).
//!
//! `start` spawns `<binary> run` in its own session (`setsid`), with stdin
//! from `/dev/null`, stdout and stderr appended to `logs/<name>.log`, the
//! home as working directory, `CRABTALK_HOME` and `PATH` set and
//! `$CRABTALK_HOME/env` loaded, and records it in `run/<name>.pid`:
//!
//! ```text
//! 4242
//! exe=/home/me/.cargo/bin/crabtalkd
//! started_at=2026-11-22T10:00:00Z
//! ```
//!
//! State comes from that pid: running when the process is alive and runs
//! that binary, failed when the pid file outlived its process. Nothing
//! restarts a service that dies here; `crabup ps` shows it failed and
//! `start` starts it again. `stop` sends SIGTERM, waits, then SIGKILL.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_home::{EnvFile, Home, write_atomic};

use super::{
    Installed, ManagerError, ManagerKind, Restarted, ServiceManager, ServiceState, ServiceStatus,
    Started, Stopped, Uninstalled, prepare_home, require_binary,
};
use crate::liveness::{pid_alive, pid_runs};
use crate::unit::UnitSpec;

/// How long `stop` waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `start` watches a new child for an immediate exit.
pub const START_WATCH: Duration = Duration::from_millis(300);

/// The process backend for services of one home.
#[derive(Debug, Clone)]
pub struct ProcessManager {
    home: Home,
}

/// The contents of `run/<name>.pid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidFile {
    pub pid: u32,
    pub exe: Option<PathBuf>,
    pub started_at: Option<String>,
}

impl PidFile {
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let pid = lines.next()?.parse().ok().filter(|&pid| pid > 0)?;
        let mut file = Self {
            pid,
            exe: None,
            started_at: None,
        };
        for line in lines {
            match line.split_once('=') {
                Some(("exe", exe)) => file.exe = Some(PathBuf::from(exe)),
                Some(("started_at", at)) => file.started_at = Some(at.to_owned()),
                _ => {}
            }
        }
        Some(file)
    }

    pub fn render(&self) -> String {
        let mut text = format!("{}\n", self.pid);
        if let Some(exe) = &self.exe {
            text.push_str(&format!("exe={}\n", exe.display()));
        }
        if let Some(at) = &self.started_at {
            text.push_str(&format!("started_at={at}\n"));
        }
        text
    }

    /// Reads a pid file; a missing or unreadable one is `None`.
    pub fn read(path: &Path) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(path).ok()?)
    }
}

impl ProcessManager {
    pub fn new(home: &Home) -> Self {
        Self { home: home.clone() }
    }

    fn pid_path(&self, spec: &UnitSpec) -> PathBuf {
        spec.service.pid_file(&self.home)
    }

    /// The recorded pid, and whether that process is alive and ours.
    fn recorded(&self, spec: &UnitSpec) -> Option<(PidFile, bool)> {
        let file = PidFile::read(&self.pid_path(spec))?;
        let program = file.exe.clone().unwrap_or_else(|| spec.program.clone());
        let ours = pid_runs(file.pid, &program);
        Some((file, ours))
    }

    fn spawn(&self, spec: &UnitSpec) -> Result<Child, ManagerError> {
        require_binary(spec)?;
        prepare_home(spec)?;
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        // A log can hold anything a service says: its user's alone.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let log = options
            .open(&spec.log_file)
            .map_err(ManagerError::io("opening the log", &spec.log_file))?;
        let log_err = log
            .try_clone()
            .map_err(ManagerError::io("opening the log", &spec.log_file))?;
        // The same rule as the binary's own loading: the environment wins.
        let env_file =
            EnvFile::read(&spec.env_file).map_err(|err| ManagerError::Other(err.to_string()))?;
        let env = env_file
            .unset_vars(|key| std::env::var_os(key).is_some())
            .into_iter()
            .map(|var| (var.key.clone(), var.value.clone()));
        let mut command = Command::new(&spec.program);
        command
            .args(spec.service.args())
            .current_dir(&spec.home)
            .envs(env)
            .env(crabtalk_home::HOME_ENV, &spec.home)
            .env("PATH", &spec.path_env)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: setsid is async-signal-safe; it detaches the child
            // from our session and terminal so it outlives us and no
            // terminal signal (Ctrl-C, hangup) reaches it.
            unsafe {
                command.pre_exec(|| {
                    if libc::setsid() == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        command
            .spawn()
            .map_err(ManagerError::io("starting", &spec.program))
    }

    /// Sends SIGTERM, waits, then SIGKILL; returns once `pid` is gone.
    fn terminate(&self, spec: &UnitSpec, pid: u32) -> Result<(), ManagerError> {
        if send_signal(pid, Signal::Term) && wait_gone(pid, STOP_TIMEOUT) {
            return Ok(());
        }
        send_signal(pid, Signal::Kill);
        if wait_gone(pid, STOP_TIMEOUT) {
            return Ok(());
        }
        Err(ManagerError::WouldNotStop {
            service: spec.service.name().to_owned(),
            pid,
            seconds: 2 * STOP_TIMEOUT.as_secs(),
        })
    }

    /// Removes the pid file, and the port file when it was left by `pid`.
    fn clean_up_after(&self, spec: &UnitSpec, pid: u32) {
        let _ = std::fs::remove_file(self.pid_path(spec));
        let port_file = spec.service.port_file(&self.home);
        if crabtalk_home::PortFile::read(&port_file).is_ok_and(|f| f.pid == Some(pid)) {
            let _ = std::fs::remove_file(port_file);
        }
    }
}

impl ServiceManager for ProcessManager {
    fn kind(&self) -> ManagerKind {
        ManagerKind::Process
    }

    fn unit_path(&self, _spec: &UnitSpec) -> Option<PathBuf> {
        None
    }

    fn install(&self, spec: &UnitSpec) -> Result<Installed, ManagerError> {
        require_binary(spec)?;
        prepare_home(spec)?;
        Ok(Installed::NoUnit)
    }

    fn start(&self, spec: &UnitSpec) -> Result<Started, ManagerError> {
        match self.recorded(spec) {
            Some((file, true)) => {
                return Ok(Started::AlreadyRunning {
                    pid: Some(file.pid),
                });
            }
            Some((file, false)) => self.clean_up_after(spec, file.pid),
            None => {}
        }
        let log_start = std::fs::metadata(&spec.log_file).map_or(0, |m| m.len());
        let mut child = self.spawn(spec)?;
        let pid = child.id();
        let record = PidFile {
            pid,
            exe: Some(spec.program.clone()),
            started_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        };
        let pid_path = self.pid_path(spec);
        write_atomic(&pid_path, record.render().as_bytes())
            .map_err(ManagerError::io("writing the pid file", &pid_path))?;
        // Catch the common failure (bad config, missing library) at once
        // instead of reporting "started" for a process that is already gone.
        let deadline = Instant::now() + START_WATCH;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                let _ = std::fs::remove_file(&pid_path);
                return Err(ManagerError::ExitedAtStart {
                    service: spec.service.name().to_owned(),
                    status: status.to_string(),
                    log: spec.log_file.clone(),
                    tail: log_tail_since(&spec.log_file, log_start),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Reap the child if it exits while this process still lives, so it
        // never lingers as a zombie of a long-running caller.
        std::thread::spawn(move || child.wait());
        Ok(Started::Started { pid: Some(pid) })
    }

    fn stop(&self, spec: &UnitSpec) -> Result<Stopped, ManagerError> {
        match self.recorded(spec) {
            None => Ok(Stopped::NotRunning),
            Some((file, false)) => {
                // Dead (or the pid now belongs to someone else): never
                // signal it, just clear what it left.
                self.clean_up_after(spec, file.pid);
                Ok(Stopped::NotRunning)
            }
            Some((file, true)) => {
                self.terminate(spec, file.pid)?;
                self.clean_up_after(spec, file.pid);
                Ok(Stopped::Stopped {
                    pid: Some(file.pid),
                })
            }
        }
    }

    fn restart(&self, spec: &UnitSpec) -> Result<Restarted, ManagerError> {
        require_binary(spec)?;
        let old_pid = match self.stop(spec)? {
            Stopped::Stopped { pid } => pid,
            Stopped::NotRunning => None,
        };
        let new_pid = match self.start(spec)? {
            Started::Started { pid } | Started::AlreadyRunning { pid } => pid,
        };
        Ok(Restarted { old_pid, new_pid })
    }

    fn status(&self, spec: &UnitSpec) -> Result<ServiceStatus, ManagerError> {
        Ok(match self.recorded(spec) {
            None => ServiceStatus::new(ServiceState::Stopped),
            Some((file, true)) => ServiceStatus::running(Some(file.pid)),
            Some((file, false)) => {
                let detail = if pid_alive(file.pid) {
                    format!("pid {} now belongs to another program", file.pid)
                } else {
                    format!("pid {} exited without being stopped", file.pid)
                };
                ServiceStatus {
                    state: ServiceState::Failed,
                    pid: Some(file.pid),
                    detail: Some(detail),
                }
            }
        })
    }

    fn uninstall(&self, spec: &UnitSpec) -> Result<Uninstalled, ManagerError> {
        self.stop(spec)?;
        Ok(Uninstalled::NotInstalled)
    }
}

/// What the log gained since byte `from` (at most the last 20 lines).
fn log_tail_since(log: &Path, from: u64) -> String {
    let lines = crate::logs::last_lines(log, 20).unwrap_or_default();
    let len = std::fs::metadata(log).map_or(0, |m| m.len());
    if len <= from {
        return "(nothing)".into();
    }
    lines.join("\n")
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Sends a signal; false when the process is already gone.
fn send_signal(pid: u32, signal: Signal) -> bool {
    #[cfg(unix)]
    {
        let signal = match signal {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        // SAFETY: plain kill(2) on a pid we checked is alive and ours.
        unsafe { libc::kill(pid, signal) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = signal;
        std::process::Command::new("taskkill")
            .args(["/PID", &pid.to_string(), "/T", "/F"])
            .status()
            .is_ok_and(|s| s.success())
    }
}

fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while pid_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_files_round_trip_and_refuse_junk() {
        let file = PidFile {
            pid: 42,
            exe: Some("/bin/x y".into()),
            started_at: Some("2026-01-01T00:00:00Z".into()),
        };
        assert_eq!(PidFile::parse(&file.render()), Some(file));
        assert_eq!(PidFile::parse("0"), None);
        assert_eq!(PidFile::parse("abc"), None);
        assert_eq!(PidFile::parse(""), None);
    }
}
