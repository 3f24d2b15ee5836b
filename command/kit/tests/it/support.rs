//! Running the kit's example components as real processes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crabtalk_home::{Home, Service};

pub(crate) use crabtalk_testkit::PATIENCE as TIMEOUT;

/// The `echo_component` example.
pub(crate) fn echo_binary() -> PathBuf {
    crabtalk_testkit::example_binary("echo_component")
}

/// The `kit_probe` example.
pub(crate) fn probe_binary() -> PathBuf {
    crabtalk_testkit::example_binary("kit_probe")
}

/// Starts the echo component in `home`, its stderr shown with the test's.
pub(crate) fn spawn_echo(home: &Home) -> Child {
    Command::new(echo_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

pub(crate) fn echo_service() -> Service {
    Service::new("echo", "crabtalk-echo", "echo").unwrap()
}

pub(crate) fn probe_service() -> Service {
    Service::new("probe", "kit-probe", "probe").unwrap()
}

/// Polls `condition` from this thread until it returns `Some`.
pub(crate) use crabtalk_testkit::wait_for;

/// Sends `signal` to a child of this test.
#[cfg(unix)]
pub(crate) fn signal(child: &Child, signal: i32) {
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

/// Waits for `child` to exit, failing after [`TIMEOUT`].
pub(crate) fn wait_exit(child: &mut Child) -> ExitStatus {
    wait_for("the component to exit", TIMEOUT, || {
        child.try_wait().unwrap()
    })
}

/// A component process whose stdout is read line by line.
pub(crate) struct Running {
    pub child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    /// Starts `binary run -v` in `home`, stdout piped, stderr to `log`.
    pub(crate) fn start(binary: &Path, home: &Home, log: &Path) -> Self {
        let log = std::fs::File::create(log).unwrap();
        let mut child = Command::new(binary)
            .args(["run", "-v"])
            .env("CRABTALK_HOME", home.root())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    /// The next line it prints that `matches`, skipping others, failing
    /// after [`TIMEOUT`].
    pub(crate) fn line_matching(&self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if matches(&line) => return line,
                Ok(_) => {}
                Err(err) => panic!("no {what} from the component: {err}"),
            }
        }
    }

    /// The next line it prints that `matches`, if one comes within `wait`.
    pub(crate) fn try_line_matching(
        &self,
        wait: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> Option<String> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if matches(&line) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
