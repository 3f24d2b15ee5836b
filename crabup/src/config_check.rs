//! A service's configuration, checked before the service is touched.
//!
//! `crabup` does not read a service's files itself (it must not know their
//! insides): it asks the installed binary's own `check` — `crabtalkd
//! check`, and for every component the `check` the component kit gives it
//! — which runs the very loader a start would. A restart with a broken
//! file would stop a working service and start one that refuses to run;
//! asking first leaves the running service as it is and puts the
//! problems, with their file, line and column, in front of the person.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_command::Service;
use crabtalk_home::Home;

/// What `<binary> check` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConfigVerdict {
    /// The service would take every file; its one-line summary (the first
    /// line: the daemon lists the providers by name after it, RFC 0023).
    Fine(String),
    /// The service would refuse a file: every problem, one per line.
    Refused(String),
    /// The check could not be run (an older binary without `check`, or
    /// it failed for another reason); why.
    Unavailable(String),
}

/// The exit status of `check` for refused files (EX_CONFIG).
const REFUSED: i32 = 78;

/// How long `check` may take; it only reads files, so a binary that takes
/// longer is not answering (and is stopped).
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs the `check` of `service` with its installed `binary`: `crabtalkd
/// --home HOME check`, `<component> check` with `CRABTALK_HOME=HOME`.
pub(crate) fn check(service: &Service, binary: &Path, home: &Home) -> ConfigVerdict {
    let output = match run_bounded(service, binary, home) {
        Ok(output) => output,
        Err(why) => return ConfigVerdict::Unavailable(why.to_string()),
    };
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    // What a binary puts before its error: `crabtalkd: `, `<binary>:
    // error: ` (the kit's).
    let name = binary
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stderr = stderr
        .lines()
        .map(|line| {
            line.strip_prefix(&format!("{name}: error: "))
                .or_else(|| line.strip_prefix(&format!("{name}: ")))
                .unwrap_or(line)
        })
        .collect::<Vec<_>>()
        .join("\n");
    match output.status.code() {
        Some(0) => ConfigVerdict::Fine(stdout.lines().next().unwrap_or_default().to_owned()),
        Some(REFUSED) => ConfigVerdict::Refused(stderr),
        _ if stderr.contains("unrecognized subcommand") => ConfigVerdict::Unavailable(format!(
            "{} has no `check` command (an older version; `crabup pull {}` updates it)",
            binary.display(),
            service.name()
        )),
        _ => ConfigVerdict::Unavailable(format!(
            "`{} check` failed ({}): {stderr}",
            binary.display(),
            output.status
        )),
    }
}

/// Why `<binary> check` gave no answer.
#[derive(Debug, thiserror::Error)]
enum CheckNotRun {
    #[error("cannot run {}: {source}", binary.display())]
    Start {
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error("`{} check` did not finish within {} s", binary.display(), CHECK_TIMEOUT.as_secs())]
    TimedOut { binary: PathBuf },
    #[error("waiting for `{} check`: {source}", binary.display())]
    Wait {
        binary: PathBuf,
        source: std::io::Error,
    },
}

/// Runs `binary [--home HOME] check`, stopping it after [`CHECK_TIMEOUT`].
fn run_bounded(
    service: &Service,
    binary: &Path,
    home: &Home,
) -> Result<std::process::Output, CheckNotRun> {
    let mut command = Command::new(binary);
    if service.is_daemon() {
        command.arg("--home").arg(home.root());
    }
    let mut child = command
        .arg("check")
        .env("CRABTALK_HOME", home.root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| CheckNotRun::Start {
            binary: binary.to_owned(),
            source,
        })?;
    // Both pipes are read on their own threads, so a chatty binary cannot
    // block on a full pipe while it is waited for.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + CHECK_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CheckNotRun::TimedOut {
                    binary: binary.to_owned(),
                });
            }
            Err(source) => {
                return Err(CheckNotRun::Wait {
                    binary: binary.to_owned(),
                    source,
                });
            }
        }
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Everything `pipe` gives, read on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn what_the_check_says_is_read_from_its_exit_status() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let daemon = Service::daemon();
        let fine = script(dir.path(), "fine", "echo all fine\n");
        assert_eq!(
            check(&daemon, &fine, &home),
            ConfigVerdict::Fine("all fine".into())
        );
        let refused = script(
            dir.path(),
            "crabtalkd",
            "echo 'crabtalkd: a.toml:1:1: bad' >&2\nexit 78\n",
        );
        assert_eq!(
            check(&daemon, &refused, &home),
            ConfigVerdict::Refused("a.toml:1:1: bad".into())
        );
        // A component: no --home, and the kit's `<binary>: error: ` prefix.
        let search = Service::new("search", "crabtalk-search", "search").unwrap();
        let component = script(
            dir.path(),
            "crabtalk-search",
            "[ \"$1\" = check ] || exit 9\necho \"crabtalk-search: error: s.toml:2:1: unknown key\" >&2\nexit 78\n",
        );
        assert_eq!(
            check(&search, &component, &home),
            ConfigVerdict::Refused("s.toml:2:1: unknown key".into())
        );
        let old = script(
            dir.path(),
            "old",
            "echo \"error: unrecognized subcommand 'check'\" >&2\nexit 2\n",
        );
        assert!(
            matches!(check(&search, &old, &home), ConfigVerdict::Unavailable(why) if why.contains("older version; `crabup pull search`"))
        );
    }
}
