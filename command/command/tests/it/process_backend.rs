//! The `process` backend end to end with a real component: start, status,
//! readiness, logs, restart, stop, a crash and recovery — all idempotent;
//! and under a supervisor (this crate's `supervisor` example): a killed
//! service back within its backoff, a stop or a clean end not restarted.

use std::path::{Path, PathBuf};

use crate::support::{TIMEOUT, echo_binary, supervisor_binary, wait_for};
use crabtalk_command::liveness::{PortProbe, pid_alive};
use crabtalk_command::manager::process::{PidFile, ProcessManager, SupervisorCommand};
use crabtalk_command::manager::{
    ManagerError, Readiness, Restarted, Started, Stopped, wait_until_ready,
};
use crabtalk_command::{Service, ServiceManager, ServiceState, UnitSpec};
use crabtalk_home::Home;

fn echo_spec(home: &Home, program: PathBuf) -> UnitSpec {
    UnitSpec::new(
        Service::new("echo", "crabtalk-echo", "echo").unwrap(),
        home,
        program,
        std::env::var("PATH").unwrap_or_default(),
    )
}

fn ready_port(manager: &ProcessManager, spec: &UnitSpec, home: &Home) -> u16 {
    match wait_until_ready(manager, spec, home, TIMEOUT).unwrap() {
        Readiness::Ready { port: Some(port) } => port,
        other => panic!("not ready: {other:?}"),
    }
}

#[cfg(target_os = "linux")]
fn session_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[3].parse().unwrap() // state ppid pgrp session
}

#[test]
fn start_status_restart_stop_are_real_and_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::write(home.env_file(), "ECHO_PROVIDER_KEY=from-env-file\n").unwrap();
    let manager = ProcessManager::new(&home);
    let spec = echo_spec(&home, echo_binary());

    assert_eq!(manager.status(&spec).unwrap().state, ServiceState::Stopped);
    assert_eq!(manager.stop(&spec).unwrap(), Stopped::NotRunning);

    let Started::Started { pid: Some(pid) } = manager.start(&spec).unwrap() else {
        panic!("not started")
    };
    let port = ready_port(&manager, &spec, &home);
    let status = manager.status(&spec).unwrap();
    assert_eq!(
        (status.state, status.pid),
        (ServiceState::Running, Some(pid))
    );
    assert_eq!(
        manager.start(&spec).unwrap(),
        Started::AlreadyRunning { pid: Some(pid) }
    );

    #[cfg(target_os = "linux")]
    {
        assert_eq!(session_of(pid), pid, "the service leads its own session");
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let environ = String::from_utf8_lossy(&environ);
        assert!(environ.contains("ECHO_PROVIDER_KEY=from-env-file"));
        assert!(environ.contains(&format!("CRABTALK_HOME={}", home.root().display())));
        assert_eq!(
            std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
            home.root().canonicalize().unwrap()
        );
    }

    // stderr (tracing) lands in logs/echo.log.
    let log = home.log_file("echo").unwrap();
    wait_for("the log line", TIMEOUT, || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.contains(&format!("127.0.0.1:{port}/mcp"))
            .then_some(())
    });
    // A log can hold anything the service says: only its user reads it.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the log is {mode:o}");
    }

    let Restarted { old_pid, new_pid } = manager.restart(&spec).unwrap();
    assert_eq!(old_pid, Some(pid));
    let new_pid = new_pid.unwrap();
    assert_ne!(new_pid, pid);
    assert!(!pid_alive(pid));
    ready_port(&manager, &spec, &home);

    assert_eq!(
        manager.stop(&spec).unwrap(),
        Stopped::Stopped { pid: Some(new_pid) }
    );
    assert!(!pid_alive(new_pid));
    assert_eq!(manager.stop(&spec).unwrap(), Stopped::NotRunning);
    assert_eq!(manager.status(&spec).unwrap().state, ServiceState::Stopped);
    assert_no_run_files(&home);
}

#[test]
fn a_killed_service_shows_failed_and_start_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let manager = ProcessManager::new(&home);
    let spec = echo_spec(&home, echo_binary());
    let Started::Started { pid: Some(pid) } = manager.start(&spec).unwrap() else {
        panic!("not started")
    };
    ready_port(&manager, &spec, &home);

    // SAFETY: kill(2) on the service we started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    wait_for("the kill", TIMEOUT, || (!pid_alive(pid)).then_some(()));
    let status = manager.status(&spec).unwrap();
    assert_eq!(status.state, ServiceState::Failed);
    assert!(status.detail.unwrap().contains("exited"));
    assert!(matches!(
        PortProbe::check(&spec.service.port_file(&home)),
        PortProbe::Stale { .. }
    ));

    let Started::Started { pid: Some(again) } = manager.start(&spec).unwrap() else {
        panic!("start did not recover")
    };
    assert_ne!(again, pid);
    ready_port(&manager, &spec, &home);
    manager.stop(&spec).unwrap();
    assert_no_run_files(&home);
}

#[test]
fn a_service_that_exits_at_once_is_an_error_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let manager = ProcessManager::new(&home);
    let script = dir.path().join("crabtalk-broken");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"broken: no config for $1\" >&2\nexit 78\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let spec = echo_spec(&home, script);
    match manager.start(&spec) {
        Err(ManagerError::ExitedAtStart { tail, status, .. }) => {
            assert!(tail.contains("broken: no config for run"), "{tail}");
            assert!(status.contains("78"), "{status}");
        }
        other => panic!("expected ExitedAtStart, got {other:?}"),
    }
    assert_eq!(manager.status(&spec).unwrap().state, ServiceState::Stopped);
    assert_no_run_files(&home);
}

#[test]
fn a_missing_binary_says_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let spec = echo_spec(&home, dir.path().join("bin/crabtalk-echo"));
    let err = ProcessManager::new(&home).start(&spec).unwrap_err();
    assert!(matches!(err, ManagerError::MissingBinary { .. }));
    assert!(err.to_string().contains("crabup pull"), "{err}");
}

fn assert_no_run_files(home: &Home) {
    // The owner's token stays: it is the home's, not the service's.
    let left: Vec<_> = std::fs::read_dir(home.run_dir())
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name())
                .filter(|name| name != "token")
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in run/: {left:?}");
    let _ = Path::new("");
}

fn supervised(home: &Home) -> ProcessManager {
    ProcessManager::new(home).supervised_by(SupervisorCommand {
        program: supervisor_binary(),
        args: Vec::new(),
    })
}

/// Stops the service of a test when the test ends, passed or failed, so
/// no supervisor outlives it.
struct StopOnDrop<'a>(&'a ProcessManager, UnitSpec);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.stop(&self.1);
    }
}

fn kill(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid as i32, signal) };
}

/// The pid file's supervisor, which must be alive.
fn supervisor_of(home: &Home) -> u32 {
    let file = PidFile::read(&home.pid_file("echo").unwrap()).expect("a pid file");
    let supervisor = file.supervisor.expect("a supervisor in the pid file");
    assert!(pid_alive(supervisor));
    supervisor
}

#[cfg(unix)]
#[test]
fn a_supervised_service_killed_comes_back_within_its_backoff_and_stop_ends_both() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let manager = supervised(&home);
    let spec = echo_spec(&home, echo_binary());
    let _stop = StopOnDrop(&manager, spec.clone());
    let Started::Started { pid: Some(pid) } = manager.start(&spec).unwrap() else {
        panic!("not started")
    };
    ready_port(&manager, &spec, &home);
    let supervisor = supervisor_of(&home);
    assert_ne!(supervisor, pid);
    assert_eq!(manager.status(&spec).unwrap().restarts, Some(0));

    kill(pid, libc::SIGKILL);
    // Back on its own: a new pid, running, counted, with how it ended.
    let again = wait_for("the service started again", TIMEOUT, || {
        let status = manager.status(&spec).unwrap();
        (status.is_running() && status.pid != Some(pid)).then_some(status)
    });
    assert_eq!(again.restarts, Some(1), "{again:?}");
    assert_eq!(
        again.last_exit.as_deref(),
        Some("killed by signal 9 (SIGKILL)")
    );
    assert_eq!(supervisor_of(&home), supervisor, "the same supervisor");
    ready_port(&manager, &spec, &home);
    let log = std::fs::read_to_string(&spec.log_file).unwrap();
    assert!(
        log.contains(&format!(
            "WARN supervisor: crabtalk-echo (pid {pid}) killed by signal 9 (SIGKILL); starting it again in 1 s (restart 1"
        )),
        "{log}"
    );
    assert!(log.contains("started again (pid"), "{log}");

    // A stop goes through the supervisor: both end, nothing restarts.
    let new_pid = again.pid.unwrap();
    assert_eq!(
        manager.stop(&spec).unwrap(),
        Stopped::Stopped { pid: Some(new_pid) }
    );
    assert!(!pid_alive(new_pid) && !pid_alive(supervisor));
    assert_eq!(manager.status(&spec).unwrap().state, ServiceState::Stopped);
    assert_no_run_files(&home);
}

#[cfg(unix)]
#[test]
fn a_supervised_service_that_ends_cleanly_or_refuses_its_config_is_not_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let manager = supervised(&home);
    let spec = echo_spec(&home, echo_binary());
    let _stop = StopOnDrop(&manager, spec.clone());
    let Started::Started { pid: Some(pid) } = manager.start(&spec).unwrap() else {
        panic!("not started")
    };
    ready_port(&manager, &spec, &home);
    let supervisor = supervisor_of(&home);
    // SIGTERM from someone else: a clean end (systemd's on-failure).
    kill(pid, libc::SIGTERM);
    wait_for("the supervisor to finish", TIMEOUT, || {
        (!pid_alive(supervisor)).then_some(())
    });
    let status = manager.status(&spec).unwrap();
    assert_eq!(status.state, ServiceState::Stopped, "{status:?}");
    assert!(
        status.detail.as_deref().unwrap().contains("on its own"),
        "{status:?}"
    );
    assert!(!pid_alive(pid));
    // `start` clears what it left and starts again.
    let Started::Started { pid: Some(_) } = manager.start(&spec).unwrap() else {
        panic!("not started")
    };
    manager.stop(&spec).unwrap();

    // A binary that refuses its configuration at once: told at start,
    // not restarted.
    let script = dir.path().join("crabtalk-broken");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"broken.toml:1:1: unknown key\" >&2\nexit 78\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let broken = echo_spec(&home, script);
    match manager.start(&broken) {
        Err(ManagerError::ExitedAtStart { tail, status, .. }) => {
            assert!(tail.contains("broken.toml:1:1: unknown key"), "{tail}");
            assert!(status.contains("status 78"), "{status}");
        }
        other => panic!("expected ExitedAtStart, got {other:?}"),
    }
    assert_no_run_files(&home);
}
