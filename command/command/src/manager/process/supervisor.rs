//! The supervisor: a small process per service that starts it, waits for
//! it, and starts it again after a failure (the rules are in
//! [`policy`](super::policy)).
//!
//! `ProcessManager::start` runs the supervisor — a host program (crabup
//! itself, in a hidden `supervise` mode) that calls [`main`] with the
//! arguments [`arguments`] made — detached in its own session, its output
//! appended to the service's log. The supervisor runs the service as its
//! child, so it learns exactly how the service ended (a status or a
//! signal), and records everything in `run/<name>.pid` (see
//! [`record`](super::record)): its own pid, the service's, the phase, the
//! restarts and the last exit. Each restart is a line in the log.
//!
//! How `stop` differs from a crash: `stop` signals the *supervisor*
//! (SIGTERM). The supervisor then stops the service itself — SIGTERM, up
//! to [`STOP_TIMEOUT`], then SIGKILL — removes the
//! pid file and exits; nothing is restarted. A service that dies on its
//! own is the supervisor's child exiting without that signal.
//!
//! Waiting never spins: SIGCHLD and the stop signals write a byte to a
//! pipe the loop `poll`s (the self-pipe), with a deadline only while a
//! restart is due or a stop is under way.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crabtalk_home::{Home, HomeError, Service, write_atomic};

use super::policy::{Decision, Exit, RestartPolicy, Restarts, human};
use super::record::{Phase, PidFile};
use super::{START_WATCH, STOP_TIMEOUT, spawn_service};
use crate::unit::UnitSpec;

/// Between the service's name, binary, program and PATH, and its own
/// arguments.
const ARGS_END: &str = "--";

/// The arguments a supervisor host passes on to [`main`] for `spec` (the
/// home travels as `CRABTALK_HOME`).
pub fn arguments(spec: &UnitSpec) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        spec.service.name().into(),
        spec.service.binary().into(),
        spec.program.clone().into_os_string(),
        spec.path_env.clone().into(),
        ARGS_END.into(),
    ];
    args.extend(spec.service.args().iter().map(OsString::from));
    args
}

/// Why a supervisor's arguments describe no service.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentsError {
    /// Too few arguments, one that is not UTF-8, or no `--` where it
    /// belongs: not what [`arguments`] makes.
    #[error("expected: <name> <binary> <program> <PATH> -- <arguments>")]
    Usage,
    /// The name is no service name.
    #[error(transparent)]
    Service(#[from] HomeError),
}

/// The service `args` (from [`arguments`]) describe, in `home`.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    home: &Home,
) -> Result<UnitSpec, ArgumentsError> {
    let text = |arg: Option<OsString>| {
        arg.ok_or(ArgumentsError::Usage)?
            .into_string()
            .map_err(|_| ArgumentsError::Usage)
    };
    let mut args = args.into_iter();
    let name = text(args.next())?;
    let binary = text(args.next())?;
    let program = PathBuf::from(args.next().ok_or(ArgumentsError::Usage)?);
    let path_env = text(args.next())?;
    if args.next().is_none_or(|end| end != ARGS_END) {
        return Err(ArgumentsError::Usage);
    }
    let run_args: Vec<String> = args.map(|arg| text(Some(arg))).collect::<Result<_, _>>()?;
    let run_args: Vec<&str> = run_args.iter().map(String::as_str).collect();
    let service = if name == "daemon" {
        Service::daemon()
    } else {
        Service::new(&name, &binary, "")?
    };
    Ok(UnitSpec::new(
        service.with_args(&run_args),
        home,
        program,
        path_env,
    ))
}

/// The whole supervisor of one service: what a host program's `main`
/// calls with the arguments after its own (see the module doc). Returns
/// when the service is stopped or will not be started again.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let spec = match Home::from_env() {
        Ok(home) => parse(args, &home).map_err(|err| err.to_string()),
        Err(err) => Err(err.to_string()),
    };
    let spec = match spec {
        Ok(spec) => spec,
        Err(err) => {
            eprintln!("supervise: {err}");
            return ExitCode::from(2);
        }
    };
    match Supervisor::new(spec, RestartPolicy::default()).run() {
        Ok(code) => code,
        Err(err) => {
            say("ERROR", &format!("the supervisor stopped: {err}"));
            ExitCode::FAILURE
        }
    }
}

/// A line in the service's log (the supervisor's stderr), shaped like the
/// services' own tracing lines.
fn say(level: &str, message: &str) {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    eprintln!("{now} {level:>5} supervisor: {message}");
}

fn now_text() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What woke the loop.
enum Event {
    Stop,
    Exited(ExitStatus),
    Deadline,
}

struct Supervisor {
    spec: UnitSpec,
    policy: RestartPolicy,
    wake: Wake,
    record: PidFile,
    pid_path: PathBuf,
}

impl Supervisor {
    fn new(spec: UnitSpec, policy: RestartPolicy) -> Self {
        let home = Home::new(&spec.home);
        let pid_path = spec.service.pid_file(&home);
        Self {
            spec,
            policy,
            wake: Wake::default(),
            record: PidFile::default(),
            pid_path,
        }
    }

    fn run(mut self) -> std::io::Result<ExitCode> {
        self.wake = Wake::install()?;
        self.record = PidFile {
            supervisor: Some(std::process::id()),
            supervisor_exe: std::env::current_exe().ok(),
            ..PidFile::default()
        };
        let mut restarts = Restarts::new(self.policy);
        let mut first = true;
        loop {
            let mut child = match spawn_service(&self.spec, false) {
                Ok(child) => child,
                Err(err) => {
                    self.finish(Phase::Failed, format!("could not be started: {err}"));
                    return Ok(ExitCode::FAILURE);
                }
            };
            let started = Instant::now();
            self.record.pid = child.id();
            self.record.exe = Some(self.spec.program.clone());
            self.record.started_at = Some(now_text());
            self.record.retry_at = None;
            self.record.phase = Some(if first {
                Phase::Starting
            } else {
                Phase::Running
            });
            self.save();
            if !first {
                say(
                    "INFO",
                    &format!(
                        "{} started again (pid {}, restart {})",
                        self.spec.service.binary(),
                        child.id(),
                        restarts.total()
                    ),
                );
            }
            let mut watching = first;
            let status = loop {
                let deadline = watching.then(|| started + START_WATCH);
                match self.wake.wait(&mut child, deadline)? {
                    Event::Stop => return self.stop(child),
                    Event::Exited(status) => break status,
                    Event::Deadline => {
                        watching = false;
                        self.record.phase = Some(Phase::Running);
                        self.save();
                    }
                }
            };
            let exit = Exit::of(status);
            let ended_in_window = first && watching;
            first = false;
            self.record.last_exit = Some(exit.describe());
            self.record.last_exit_at = Some(now_text());
            let what = format!("{} (pid {})", self.spec.service.binary(), self.record.pid);
            match restarts.after(exit, started.elapsed(), ended_in_window, Instant::now()) {
                Decision::Restart { delay, restart } => {
                    self.record.restarts = restart;
                    self.record.phase = Some(Phase::Waiting);
                    self.record.retry_at = Some(
                        (chrono::Utc::now() + delay)
                            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    );
                    self.save();
                    say(
                        "WARN",
                        &format!(
                            "{what} {}; starting it again in {} (restart {restart}; at most {} within {})",
                            exit.describe(),
                            human(delay),
                            self.policy.burst,
                            human(self.policy.interval)
                        ),
                    );
                    let until = Instant::now() + delay;
                    loop {
                        match self.wake.wait_idle(until)? {
                            Event::Stop => {
                                self.remove_record();
                                say("INFO", "stopped while waiting to start it again");
                                return Ok(ExitCode::SUCCESS);
                            }
                            Event::Deadline => break,
                            Event::Exited(_) => {}
                        }
                    }
                }
                Decision::Exited => {
                    say(
                        "INFO",
                        &format!("{what} {}: a clean end, not restarted", exit.describe()),
                    );
                    self.finish(Phase::Exited, exit.describe());
                    return Ok(ExitCode::SUCCESS);
                }
                Decision::Failed { why } => {
                    say("ERROR", &format!("{what} {why}"));
                    self.finish(Phase::Failed, why);
                    return Ok(ExitCode::FAILURE);
                }
                Decision::GaveUp { why } => {
                    say("ERROR", &format!("{what} {why}"));
                    self.finish(Phase::GaveUp, why);
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
    }

    /// `stop`: the service is ended (SIGTERM, then SIGKILL), its files
    /// removed; the supervisor exits.
    fn stop(&mut self, mut child: Child) -> std::io::Result<ExitCode> {
        let pid = child.id();
        signal(pid, libc::SIGTERM);
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut ended = false;
        while !ended {
            match self.wake.wait_child(&mut child, deadline)? {
                Some(_) => ended = true,
                None => {
                    signal(pid, libc::SIGKILL);
                    let _ = child.wait();
                    ended = true;
                }
            }
        }
        self.remove_record();
        let port_file = self.spec.service.port_file(&Home::new(&self.spec.home));
        if crabtalk_home::PortFile::read(&port_file).is_ok_and(|f| f.pid == Some(pid)) {
            let _ = std::fs::remove_file(port_file);
        }
        Ok(ExitCode::SUCCESS)
    }

    fn finish(&mut self, phase: Phase, why: String) {
        self.record.phase = Some(phase);
        self.record.last_exit = Some(why);
        self.record.last_exit_at = Some(now_text());
        self.record.retry_at = None;
        self.save();
    }

    fn save(&self) {
        if self.record.pid == 0 {
            return;
        }
        if let Err(err) = write_atomic(&self.pid_path, self.record.render().as_bytes()) {
            say(
                "WARN",
                &format!("cannot write {}: {err}", self.pid_path.display()),
            );
        }
    }

    fn remove_record(&self) {
        // Only our own record: a `start` after a lost supervisor may have
        // written another.
        if PidFile::read(&self.pid_path).is_some_and(|f| f.supervisor == self.record.supervisor) {
            let _ = std::fs::remove_file(&self.pid_path);
        }
    }
}

fn signal(pid: u32, signal: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) on our own child, which has not been reaped.
        unsafe { libc::kill(pid, signal) };
    }
}

/// The stop signals received so far (SIGTERM, SIGINT, SIGHUP).
static STOP: AtomicBool = AtomicBool::new(false);
/// The write end of the self-pipe, for the signal handler.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    if signal != libc::SIGCHLD {
        STOP.store(true, Ordering::SeqCst);
    }
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; the pipe is non-blocking,
        // so a full pipe (already a wake-up pending) just drops the byte.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

/// The self-pipe the loop sleeps on.
#[derive(Default)]
struct Wake {
    read: Option<OwnedFd>,
    _write: Option<OwnedFd>,
}

impl Wake {
    fn install() -> std::io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) into a two-element array.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both were just created and are owned here alone.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        for fd in [read.as_raw_fd(), write.as_raw_fd()] {
            // SAFETY: fcntl on descriptors we own.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        WAKE_FD.store(write.as_raw_fd(), Ordering::SeqCst);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD] {
            // SAFETY: a handler that only stores an atomic and writes to
            // a pipe; SA_RESTART so other calls are not cut short.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(Self {
            read: Some(read),
            _write: Some(write),
        })
    }

    /// Until the child exits, a stop is asked for, or `deadline`.
    fn wait(&self, child: &mut Child, deadline: Option<Instant>) -> std::io::Result<Event> {
        loop {
            if STOP.load(Ordering::SeqCst) {
                return Ok(Event::Stop);
            }
            if let Some(status) = child.try_wait()? {
                return Ok(Event::Exited(status));
            }
            if deadline.is_some_and(|at| Instant::now() >= at) {
                return Ok(Event::Deadline);
            }
            self.sleep(deadline);
        }
    }

    /// Until a stop is asked for or `deadline` (no child running).
    fn wait_idle(&self, deadline: Instant) -> std::io::Result<Event> {
        loop {
            if STOP.load(Ordering::SeqCst) {
                return Ok(Event::Stop);
            }
            if Instant::now() >= deadline {
                return Ok(Event::Deadline);
            }
            self.sleep(Some(deadline));
        }
    }

    /// Until the child exits (its status) or `deadline` (`None`).
    fn wait_child(
        &self,
        child: &mut Child,
        deadline: Instant,
    ) -> std::io::Result<Option<ExitStatus>> {
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            self.sleep(Some(deadline));
        }
    }

    /// Sleeps until a signal arrives or `deadline`, then empties the pipe.
    fn sleep(&self, deadline: Option<Instant>) {
        let Some(read) = &self.read else {
            std::thread::sleep(Duration::from_millis(50));
            return;
        };
        let timeout = deadline.map_or(-1, |at| {
            let left = at.saturating_duration_since(Instant::now());
            i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX)
        });
        let mut poll = libc::pollfd {
            fd: read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one descriptor we own; EINTR just loops.
        unsafe { libc::poll(&mut poll, 1, timeout) };
        let mut buffer = [0u8; 64];
        // SAFETY: read(2) into a local buffer from a non-blocking pipe.
        while unsafe { libc::read(read.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) } > 0
        {
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_carry_the_service_to_the_supervisor() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let spec = UnitSpec::new(
            Service::new("search", "crabtalk-search", "search").unwrap(),
            &home,
            "/opt/bin/crabtalk-search".into(),
            "/opt/bin:/usr/bin".into(),
        );
        let back = parse(arguments(&spec), &home).unwrap();
        assert_eq!(back.service.name(), "search");
        assert_eq!(back.service.binary(), "crabtalk-search");
        assert_eq!(back.service.args(), ["run"]);
        assert_eq!(back.program, spec.program);
        assert_eq!(back.path_env, spec.path_env);
        assert_eq!(back.log_file, spec.log_file);
        let daemon = UnitSpec::new(Service::daemon(), &home, "/b/crabtalkd".into(), "/b".into());
        assert!(
            parse(arguments(&daemon), &home)
                .unwrap()
                .service
                .is_daemon()
        );
        assert!(matches!(
            parse(["search".into()], &home),
            Err(ArgumentsError::Usage)
        ));
        let bad_name = ["Search!", "b", "/p", "/bin", "--"].map(OsString::from);
        assert!(matches!(
            parse(bad_name, &home),
            Err(ArgumentsError::Service(
                HomeError::InvalidServiceName { .. }
            ))
        ));
    }
}
