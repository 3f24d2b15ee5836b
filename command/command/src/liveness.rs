//! Is it really running? Pids and port files checked against the system.
//!
//! A pid file or port file only says what was true when it was written. A
//! pid is alive when the kernel has a process with it that is not a zombie;
//! it is *ours* when that process runs the expected binary (checked through
//! `/proc/<pid>/exe` where there is a `/proc`), so a recycled pid is not
//! mistaken for a service. A port file is live when its pid is alive and
//! something accepts connections on its port; otherwise it is stale.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crabtalk_home::{PortFile, PortFileError};

/// How long a port probe waits for the connection.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Whether a process with `pid` exists and has not exited (zombies count as
/// exited: they are only waiting for their parent to read their status).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    #[cfg(unix)]
    {
        // SAFETY: kill with signal 0 only checks for existence and permission.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists && !is_zombie(pid)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

#[cfg(unix)]
fn is_zombie(pid: i32) -> bool {
    // `/proc/<pid>/stat` is "pid (comm) S ..."; comm may hold spaces and
    // parentheses, so the state is the first field after the last ')'.
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

/// What `pid` runs, when the system says (Linux: `/proc/<pid>/exe`).
pub fn pid_executable(pid: u32) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    // A binary replaced on disk (by `cargo install`) shows as "path (deleted)".
    let text = link.to_str()?;
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// Whether `pid` is alive and, where the system can tell, runs `program`:
/// its executable is `program`, or (for a script, whose executable is the
/// interpreter) `program` is among the first words of its command line.
pub fn pid_runs(pid: u32, program: &Path) -> bool {
    if !pid_alive(pid) {
        return false;
    }
    let Some(exe) = pid_executable(pid) else {
        // No /proc (macOS) or no permission: the pid is the best we have.
        return true;
    };
    if same_file_path(&exe, program) {
        return true;
    }
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        cmdline
            .split(|&b| b == 0)
            .take(2)
            .filter_map(|word| std::str::from_utf8(word).ok())
            .any(|word| same_file_path(Path::new(word), program))
    })
}

fn same_file_path(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    a == b || canonical(a) == canonical(b)
}

/// Whether something accepts TCP connections on `127.0.0.1:port`.
pub fn port_answers(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).is_ok()
}

/// What a port file turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortProbe {
    /// No port file.
    Missing,
    /// Its process is alive and its port answers.
    Live(PortFile),
    /// Left behind: its process is gone or its port does not answer.
    Stale { file: PortFile, reason: String },
    /// Not a port file.
    Invalid(String),
}

impl PortProbe {
    /// Reads and checks the port file at `path`.
    pub fn check(path: &Path) -> Self {
        let file = match PortFile::read(path) {
            Ok(file) => file,
            Err(err) if err.is_missing() => return Self::Missing,
            Err(PortFileError::Invalid { reason, .. }) => return Self::Invalid(reason.to_string()),
            Err(err) => return Self::Invalid(err.to_string()),
        };
        if let Some(pid) = file.pid.filter(|&pid| !pid_alive(pid)) {
            return Self::Stale {
                reason: format!("its process {pid} is gone"),
                file,
            };
        }
        if !port_answers(file.port) {
            return Self::Stale {
                reason: format!("nothing answers on port {}", file.port),
                file,
            };
        }
        Self::Live(file)
    }

    pub fn is_live(&self) -> bool {
        matches!(self, Self::Live(_))
    }

    /// The port file, when there is a readable one.
    pub fn file(&self) -> Option<&PortFile> {
        match self {
            Self::Live(file) | Self::Stale { file, .. } => Some(file),
            Self::Missing | Self::Invalid(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_runs_its_own_binary() {
        let me = std::process::id();
        assert!(pid_alive(me));
        let exe = std::env::current_exe().unwrap();
        assert!(pid_runs(me, &exe));
        if pid_executable(me).is_some() {
            assert!(!pid_runs(me, Path::new("/bin/definitely-not-this")));
        }
    }

    #[test]
    fn an_exited_child_is_not_alive_even_before_it_is_reaped() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped yet: a zombie until wait(). Poll: it exits on its own.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pid_alive(pid) {
            assert!(std::time::Instant::now() < deadline, "child never exited");
            std::thread::yield_now();
        }
        child.wait().unwrap();
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }

    #[test]
    fn port_files_are_live_stale_or_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.port");
        assert_eq!(PortProbe::check(&path), PortProbe::Missing);

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        PortFile::for_this_process(port).write(&path).unwrap();
        assert!(PortProbe::check(&path).is_live());

        drop(listener);
        assert!(matches!(PortProbe::check(&path), PortProbe::Stale { .. }));

        let gone = PortFile {
            port,
            pid: Some(u32::MAX - 1),
            started_at: None,
        };
        gone.write(&path).unwrap();
        match PortProbe::check(&path) {
            PortProbe::Stale { reason, .. } => assert!(reason.contains("gone"), "{reason}"),
            other => panic!("{other:?}"),
        }

        std::fs::write(&path, "junk").unwrap();
        assert!(matches!(PortProbe::check(&path), PortProbe::Invalid(_)));
    }
}
