//! `run/<name>.pid`: what the process backend knows of a service.
//!
//! The first line is the service's pid (what older readers expect); then
//! `key=value` lines. Without a supervisor only `exe` and `started_at` are
//! written; a supervisor adds itself and what happened so far:
//!
//! ```text
//! 4242
//! exe=/home/me/.cargo/bin/crabtalk-search
//! started_at=2026-11-22T10:00:00Z
//! supervisor=4240
//! supervisor_exe=/home/me/.cargo/bin/crabup
//! phase=running
//! restarts=1
//! last_exit=killed by signal 9 (SIGKILL)
//! last_exit_at=2026-11-22T09:59:58Z
//! ```
//!
//! Unknown keys are ignored, so a newer writer's file still reads.

use std::path::{Path, PathBuf};

/// Where a supervised service is in its life, as its supervisor last wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The first start, still inside its watch window.
    Starting,
    Running,
    /// It failed; the supervisor starts it again at `retry_at`.
    Waiting,
    /// It ended on its own in a way that is not a failure (exit 0, or
    /// SIGTERM/SIGINT/SIGHUP/SIGPIPE from someone else): not restarted.
    Exited,
    /// It failed in a way a restart cannot help (exit 78 or 69, or right
    /// after its first start): not restarted.
    Failed,
    /// It failed too often in a row (the start limit): not restarted.
    GaveUp,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Exited => "exited",
            Self::Failed => "failed",
            Self::GaveUp => "gave_up",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            Self::Starting,
            Self::Running,
            Self::Waiting,
            Self::Exited,
            Self::Failed,
            Self::GaveUp,
        ]
        .into_iter()
        .find(|phase| phase.name() == text)
    }

    /// Whether the supervisor has finished (it exits after writing it).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Exited | Self::Failed | Self::GaveUp)
    }
}

/// The contents of `run/<name>.pid`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PidFile {
    /// The service's process (the last one started, under a supervisor).
    pub pid: u32,
    pub exe: Option<PathBuf>,
    pub started_at: Option<String>,
    /// The supervising process, when there is one.
    pub supervisor: Option<u32>,
    pub supervisor_exe: Option<PathBuf>,
    pub phase: Option<Phase>,
    /// How many times the supervisor started it again after a failure.
    pub restarts: u32,
    /// How the last process ended (`killed by signal 9 (SIGKILL)`).
    pub last_exit: Option<String>,
    pub last_exit_at: Option<String>,
    /// When a waiting supervisor starts it again.
    pub retry_at: Option<String>,
}

impl PidFile {
    /// A record of `pid` running `exe` since `started_at`.
    pub fn new(pid: u32, exe: PathBuf, started_at: String) -> Self {
        Self {
            pid,
            exe: Some(exe),
            started_at: Some(started_at),
            ..Self::default()
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let pid = lines.next()?.parse().ok().filter(|&pid| pid > 0)?;
        let mut file = Self {
            pid,
            ..Self::default()
        };
        for line in lines {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            match key {
                "exe" => file.exe = Some(PathBuf::from(value)),
                "started_at" => file.started_at = Some(value.to_owned()),
                "supervisor" => file.supervisor = value.parse().ok().filter(|&pid| pid > 0),
                "supervisor_exe" => file.supervisor_exe = Some(PathBuf::from(value)),
                "phase" => file.phase = Phase::parse(value),
                "restarts" => file.restarts = value.parse().unwrap_or(0),
                "last_exit" => file.last_exit = Some(value.to_owned()),
                "last_exit_at" => file.last_exit_at = Some(value.to_owned()),
                "retry_at" => file.retry_at = Some(value.to_owned()),
                _ => {}
            }
        }
        Some(file)
    }

    pub fn render(&self) -> String {
        let mut text = format!("{}\n", self.pid);
        let mut line = |key: &str, value: &str| {
            // A value is one line: a newline would start another key.
            let value: String = value.chars().filter(|c| *c != '\n' && *c != '\r').collect();
            text.push_str(&format!("{key}={value}\n"));
        };
        if let Some(exe) = &self.exe {
            line("exe", &exe.display().to_string());
        }
        if let Some(at) = &self.started_at {
            line("started_at", at);
        }
        if let Some(pid) = self.supervisor {
            line("supervisor", &pid.to_string());
        }
        if let Some(exe) = &self.supervisor_exe {
            line("supervisor_exe", &exe.display().to_string());
        }
        if let Some(phase) = self.phase {
            line("phase", phase.name());
        }
        if self.restarts > 0 {
            line("restarts", &self.restarts.to_string());
        }
        if let Some(exit) = &self.last_exit {
            line("last_exit", exit);
        }
        if let Some(at) = &self.last_exit_at {
            line("last_exit_at", at);
        }
        if let Some(at) = &self.retry_at {
            line("retry_at", at);
        }
        text
    }

    /// Reads a pid file; a missing or unreadable one is `None`.
    pub fn read(path: &Path) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(path).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_files_round_trip_and_refuse_junk() {
        let file = PidFile::new(42, "/bin/x y".into(), "2026-01-01T00:00:00Z".into());
        assert_eq!(PidFile::parse(&file.render()), Some(file));
        let supervised = PidFile {
            supervisor: Some(40),
            supervisor_exe: Some("/bin/crabup".into()),
            phase: Some(Phase::Waiting),
            restarts: 3,
            last_exit: Some("killed by signal 9 (SIGKILL)".into()),
            last_exit_at: Some("2026-01-01T00:00:01Z".into()),
            retry_at: Some("2026-01-01T00:00:05Z".into()),
            ..PidFile::new(42, "/bin/x".into(), "2026-01-01T00:00:00Z".into())
        };
        assert_eq!(PidFile::parse(&supervised.render()), Some(supervised));
        assert_eq!(PidFile::parse("0"), None);
        assert_eq!(PidFile::parse("abc"), None);
        assert_eq!(PidFile::parse(""), None);
        // What an older crabup wrote still reads; unknown keys are skipped.
        let old = PidFile::parse("7\nexe=/bin/y\nlater=1\n").unwrap();
        assert_eq!((old.pid, old.supervisor, old.restarts), (7, None, 0));
    }

    #[test]
    fn a_value_cannot_start_another_key() {
        let file = PidFile {
            last_exit: Some("bad\nsupervisor=1".into()),
            ..PidFile::new(9, "/bin/z".into(), "t".into())
        };
        let read = PidFile::parse(&file.render()).unwrap();
        assert_eq!(read.supervisor, None);
        assert_eq!(read.last_exit.as_deref(), Some("badsupervisor=1"));
    }
}
