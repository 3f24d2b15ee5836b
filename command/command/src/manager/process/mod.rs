//! The `process` backend: for machines with no service manager
//! (containers, minimal VMs, WSL without systemd, CI).
//!
//! `start` runs the service detached in its own session (`setsid`), with
//! stdin from `/dev/null`, stdout and stderr appended to
//! `logs/<name>.log`, the home as working directory, `CRABTALK_HOME` and
//! `PATH` set and `$CRABTALK_HOME/env` loaded, and records it in
//! `run/<name>.pid` ([`record`]).
//!
//! With a supervisor ([`ProcessManager::supervised_by`], what crabup
//! uses; Unix only) what is detached is a small supervising process
//! ([`supervisor`]) that runs the service as its child and starts it again
//! when it fails, as systemd's `Restart=on-failure` would ([`policy`]:
//! backoff, a start limit, clean exits and configuration errors not
//! restarted), logging each restart; the pid file then also holds the
//! supervisor, the phase, the restarts and the last exit. Without one the
//! service itself is detached and nothing restarts it.
//!
//! State comes from the pids: running when the service's process is alive
//! and runs that binary; restarting while its supervisor waits to start it
//! again; failed when the pid file outlived both (or the supervisor gave
//! up); stopped after a clean end. `stop` signals the supervisor (which
//! stops the service and is not restarting anything), or, without one,
//! the service: SIGTERM, a wait, then SIGKILL.

pub mod policy;
pub mod record;
#[cfg(unix)]
pub mod supervisor;

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_home::{EnvFile, Home, write_atomic};

pub use self::record::{Phase, PidFile};
use super::{
    Installed, ManagerError, ManagerKind, Restarted, ServiceManager, ServiceState, ServiceStatus,
    Started, Stopped, Uninstalled, prepare_home, require_binary,
};
use crate::liveness::{pid_alive, pid_runs};
use crate::unit::UnitSpec;

/// How long `stop` waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `start` watches a new service for an immediate exit.
pub const START_WATCH: Duration = Duration::from_millis(300);

/// How long `start` waits for a supervisor to report its first start.
const SUPERVISOR_REPORT: Duration = Duration::from_secs(10);

/// The program that supervises: run as `<program> <args>…` followed by
/// [`supervisor::arguments`], it must call [`supervisor::main`] with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// The process backend for services of one home.
#[derive(Debug, Clone)]
pub struct ProcessManager {
    home: Home,
    supervisor: Option<SupervisorCommand>,
}

/// What the pid file says, checked against the system.
struct Recorded {
    file: PidFile,
    /// The service's process is alive and runs its binary.
    service: bool,
    /// The supervisor is alive and runs its program (`None`: there is none).
    supervisor: Option<bool>,
}

impl Recorded {
    fn supervisor_alive(&self) -> bool {
        self.supervisor == Some(true)
    }
}

impl ProcessManager {
    /// Services run detached, with nothing to restart them.
    pub fn new(home: &Home) -> Self {
        Self {
            home: home.clone(),
            supervisor: None,
        }
    }

    /// Services run under `supervisor`, which restarts them after a
    /// failure (on Unix; elsewhere they run as with [`ProcessManager::new`]).
    pub fn supervised_by(mut self, supervisor: SupervisorCommand) -> Self {
        self.supervisor = cfg!(unix).then_some(supervisor);
        self
    }

    fn pid_path(&self, spec: &UnitSpec) -> PathBuf {
        spec.service.pid_file(&self.home)
    }

    /// The pid file, and whether its processes are alive and ours.
    fn recorded(&self, spec: &UnitSpec) -> Option<Recorded> {
        let file = PidFile::read(&self.pid_path(spec))?;
        let program = file.exe.clone().unwrap_or_else(|| spec.program.clone());
        let service = pid_runs(file.pid, &program);
        let supervisor = file.supervisor.map(|pid| match &file.supervisor_exe {
            Some(exe) => pid_runs(pid, exe),
            None => pid_alive(pid),
        });
        Some(Recorded {
            file,
            service,
            supervisor,
        })
    }

    /// Sends SIGTERM, waits, then SIGKILL; returns once `pid` is gone.
    fn terminate(&self, spec: &UnitSpec, pid: u32, grace: Duration) -> Result<(), ManagerError> {
        if send_signal(pid, Signal::Term) && wait_gone(pid, grace) {
            return Ok(());
        }
        send_signal(pid, Signal::Kill);
        if wait_gone(pid, STOP_TIMEOUT) {
            return Ok(());
        }
        Err(ManagerError::WouldNotStop {
            service: spec.service.name().to_owned(),
            pid,
            seconds: (grace + STOP_TIMEOUT).as_secs(),
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

    /// `start` without a supervisor: the service itself, detached.
    fn start_bare(&self, spec: &UnitSpec) -> Result<Started, ManagerError> {
        let log_start = log_len(spec);
        let mut child = spawn_service(spec, true)?;
        let pid = child.id();
        let record = PidFile::new(pid, spec.program.clone(), now_text());
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
        reap(child);
        Ok(Started::Started { pid: Some(pid) })
    }

    /// `start` with a supervisor: it is detached, starts the service, and
    /// says in the pid file how the first start went.
    fn start_supervised(
        &self,
        spec: &UnitSpec,
        supervisor: &SupervisorCommand,
    ) -> Result<Started, ManagerError> {
        #[cfg(unix)]
        {
            require_binary(spec)?;
            prepare_home(spec)?;
            let log_start = log_len(spec);
            let (stdout, stderr) = open_log(spec)?;
            let mut command = Command::new(&supervisor.program);
            command
                .args(&supervisor.args)
                .args(supervisor::arguments(spec))
                .current_dir(&spec.home)
                .env(crabtalk_home::HOME_ENV, &spec.home)
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr);
            detach(&mut command);
            let mut child = command.spawn().map_err(ManagerError::io(
                "starting the supervisor",
                &supervisor.program,
            ))?;
            let supervisor_pid = child.id();
            let pid_path = self.pid_path(spec);
            let deadline = Instant::now() + SUPERVISOR_REPORT;
            loop {
                let file =
                    PidFile::read(&pid_path).filter(|f| f.supervisor == Some(supervisor_pid));
                if let Some(file) = &file
                    && file.phase.is_some_and(|phase| phase != Phase::Starting)
                    && !file.phase.is_some_and(Phase::is_final)
                {
                    reap(child);
                    return Ok(Started::Started {
                        pid: Some(file.pid),
                    });
                }
                if let Ok(Some(status)) = child.try_wait() {
                    let why = file
                        .as_ref()
                        .and_then(|f| f.last_exit.clone())
                        .unwrap_or_else(|| format!("its supervisor exited ({status})"));
                    let _ = std::fs::remove_file(&pid_path);
                    return Err(ManagerError::ExitedAtStart {
                        service: spec.service.name().to_owned(),
                        status: why,
                        log: spec.log_file.clone(),
                        tail: log_tail_since(&spec.log_file, log_start),
                    });
                }
                if Instant::now() >= deadline {
                    reap(child);
                    return Ok(Started::Started {
                        pid: file.map(|f| f.pid),
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        #[cfg(not(unix))]
        {
            let _ = supervisor;
            self.start_bare(spec)
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
        if let Some(recorded) = self.recorded(spec) {
            if recorded.service || recorded.supervisor_alive() {
                return Ok(Started::AlreadyRunning {
                    pid: recorded.service.then_some(recorded.file.pid),
                });
            }
            self.clean_up_after(spec, recorded.file.pid);
        }
        match &self.supervisor {
            Some(supervisor) => self.start_supervised(spec, supervisor),
            None => self.start_bare(spec),
        }
    }

    fn stop(&self, spec: &UnitSpec) -> Result<Stopped, ManagerError> {
        let Some(recorded) = self.recorded(spec) else {
            return Ok(Stopped::NotRunning);
        };
        let pid = recorded.file.pid;
        if !recorded.service && !recorded.supervisor_alive() {
            // Dead (or the pids now belong to others): never signal them,
            // just clear what they left.
            self.clean_up_after(spec, pid);
            return Ok(Stopped::NotRunning);
        }
        if let (true, Some(supervisor)) = (recorded.supervisor_alive(), recorded.file.supervisor) {
            // The supervisor stops the service (up to STOP_TIMEOUT, then
            // SIGKILL) and exits without restarting anything.
            self.terminate(spec, supervisor, STOP_TIMEOUT + Duration::from_secs(5))?;
        }
        // A service whose supervisor is gone (or never was) is stopped here.
        let program = recorded
            .file
            .exe
            .clone()
            .unwrap_or_else(|| spec.program.clone());
        if pid_runs(pid, &program) {
            self.terminate(spec, pid, STOP_TIMEOUT)?;
        }
        self.clean_up_after(spec, pid);
        Ok(Stopped::Stopped {
            pid: recorded.service.then_some(pid),
        })
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
        let Some(recorded) = self.recorded(spec) else {
            return Ok(ServiceStatus::new(ServiceState::Stopped));
        };
        Ok(status_of(spec.service.name(), &recorded))
    }

    fn uninstall(&self, spec: &UnitSpec) -> Result<Uninstalled, ManagerError> {
        self.stop(spec)?;
        Ok(Uninstalled::NotInstalled)
    }
}

/// The state a pid file and its processes amount to.
fn status_of(name: &str, recorded: &Recorded) -> ServiceStatus {
    let file = &recorded.file;
    let history = |mut status: ServiceStatus| {
        if file.supervisor.is_some() {
            status.restarts = Some(file.restarts);
        }
        status.last_exit = file.last_exit.clone();
        status
    };
    if recorded.service {
        let mut status = ServiceStatus::running(Some(file.pid));
        if recorded.supervisor == Some(false) {
            status.detail = Some(format!(
                "its supervisor (pid {}) is gone: it will not be restarted if it fails; `crabup {name} restart` supervises it again",
                file.supervisor.unwrap_or_default(),
            ));
        }
        return history(status);
    }
    if recorded.supervisor_alive() {
        let detail = match (&file.last_exit, &file.retry_at) {
            (Some(exit), Some(at)) => format!("pid {} {exit}; starting it again at {at}", file.pid),
            (Some(exit), None) => format!("pid {} {exit}; starting it again", file.pid),
            _ => "starting".to_owned(),
        };
        return history(ServiceStatus::new(ServiceState::Restarting).with_detail(detail));
    }
    let status = match file.phase {
        Some(Phase::Exited) => ServiceStatus::new(ServiceState::Stopped).with_detail(format!(
            "pid {} {} on its own",
            file.pid,
            file.last_exit.as_deref().unwrap_or("ended")
        )),
        Some(Phase::Failed | Phase::GaveUp) => ServiceStatus::new(ServiceState::Failed)
            .with_detail(format!(
                "pid {} {}",
                file.pid,
                file.last_exit.as_deref().unwrap_or("failed")
            )),
        _ if pid_alive(file.pid) => ServiceStatus::new(ServiceState::Failed)
            .with_detail(format!("pid {} now belongs to another program", file.pid)),
        _ if file.supervisor.is_some() => {
            ServiceStatus::new(ServiceState::Failed).with_detail(format!(
                "pid {} and its supervisor (pid {}) are gone without being stopped",
                file.pid,
                file.supervisor.unwrap_or_default()
            ))
        }
        _ => ServiceStatus::new(ServiceState::Failed)
            .with_detail(format!("pid {} exited without being stopped", file.pid)),
    };
    let mut status = history(status);
    status.pid = Some(file.pid);
    status
}

/// Starts the service of `spec` (`<binary> run`): its output appended to
/// its log, the env file loaded, in the home; `detached` puts it in a
/// session of its own (a supervisor's child stays in the supervisor's).
pub(crate) fn spawn_service(spec: &UnitSpec, detached: bool) -> Result<Child, ManagerError> {
    require_binary(spec)?;
    prepare_home(spec)?;
    let (stdout, stderr) = open_log(spec)?;
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
        .stdout(stdout)
        .stderr(stderr);
    if detached {
        detach(&mut command);
    }
    command
        .spawn()
        .map_err(ManagerError::io("starting", &spec.program))
}

/// The service's log, opened for appending (0600: a log can hold anything
/// a service says), twice: for stdout and stderr.
fn open_log(spec: &UnitSpec) -> Result<(std::fs::File, std::fs::File), ManagerError> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let log = options
        .open(&spec.log_file)
        .map_err(ManagerError::io("opening the log", &spec.log_file))?;
    let log_err = log
        .try_clone()
        .map_err(ManagerError::io("opening the log", &spec.log_file))?;
    Ok((log, log_err))
}

/// Runs `command` in a session of its own, away from our terminal.
fn detach(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe; it detaches the child from
        // our session and terminal so it outlives us and no terminal signal
        // (Ctrl-C, hangup) reaches it.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = command;
}

/// Reaps `child` if it exits while this process still lives, so it never
/// lingers as a zombie of a long-running caller.
fn reap(mut child: Child) {
    std::thread::spawn(move || child.wait());
}

fn now_text() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn log_len(spec: &UnitSpec) -> u64 {
    std::fs::metadata(&spec.log_file).map_or(0, |m| m.len())
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
