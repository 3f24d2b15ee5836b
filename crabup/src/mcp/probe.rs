//! Does the bridge start? `crabtalkd mcp` run as a host runs it: a child
//! with piped stdio, an `initialize` and a `tools/list` written as lines of
//! JSON-RPC, the answers read back within a time limit. What `crabup
//! doctor` reports.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the bridge may take to answer both requests.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// What the bridge said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answered {
    /// `serverInfo.name` and `.version`.
    pub server: String,
    pub version: String,
    pub protocol: String,
    /// The tools it lists now.
    pub tools: Vec<String>,
}

/// Why the bridge did not answer; each says which binary, and what the
/// bridge last wrote on stderr where that helps.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProbeError {
    #[error("cannot run {} mcp: {source}", binary.display())]
    CannotRun {
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error("`{} mcp` did not start: {why}{}", binary.display(), last_words_after(.last_words))]
    NotStarted {
        binary: PathBuf,
        why: StartFailure,
        last_words: Option<String>,
    },
    /// `initialize` answered with this JSON-RPC error.
    #[error("`{} mcp` refused initialize: {error}", binary.display())]
    Refused { binary: PathBuf, error: Value },
    #[error(
        "`{} mcp` answered initialize but not tools/list{}",
        binary.display(),
        last_words_after(.last_words)
    )]
    NoToolList {
        binary: PathBuf,
        last_words: Option<String>,
    },
}

impl ProbeError {
    /// Whether the binary has no `mcp` command at all (a crabtalkd from
    /// before the bridge), as clap says on stderr.
    pub(crate) fn is_no_mcp_command(&self) -> bool {
        match self {
            Self::NotStarted { last_words, .. } | Self::NoToolList { last_words, .. } => last_words
                .as_deref()
                .is_some_and(|line| line.contains("unrecognized subcommand")),
            Self::CannotRun { .. } | Self::Refused { .. } => false,
        }
    }
}

/// Why the bridge never answered `initialize`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartFailure {
    #[error("it closed its input ({0})")]
    InputClosed(std::io::Error),
    #[error("it exited ({0})")]
    Exited(std::process::ExitStatus),
    #[error("no answer to initialize within {} s", PROBE_TIMEOUT.as_secs())]
    NoAnswer,
}

/// `; its last words: <line>`, or nothing.
fn last_words_after(line: &Option<String>) -> String {
    line.as_ref()
        .map(|line| format!("; its last words: {line}"))
        .unwrap_or_default()
}

/// Runs `binary mcp` for `home` and asks it who it is and what tools it
/// has; why not, when it does not answer.
pub(crate) fn probe(binary: &Path, home: &Path) -> Result<Answered, ProbeError> {
    let mut child = Command::new(binary)
        .arg("mcp")
        .env("CRABTALK_HOME", home)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ProbeError::CannotRun {
            binary: binary.to_owned(),
            source,
        })?;
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "crabup-doctor", "version": env!("CARGO_PKG_VERSION")}
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let (errors, stderr_lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text);
        let _ = errors.send(text);
    });
    let mut written = Ok(());
    for request in &requests {
        written = writeln!(stdin, "{request}").and_then(|()| stdin.flush());
        if written.is_err() {
            break;
        }
    }
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let mut init = None;
    let mut listed = None;
    while init.is_none() || listed.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = received.recv_timeout(left) else {
            break;
        };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match message["id"].as_i64() {
            Some(1) => init = Some(message),
            Some(2) => listed = Some(message),
            _ => {}
        }
    }
    // Closing stdin is how a host ends the bridge.
    drop(stdin);
    let ended = wait_or_kill(&mut child, Duration::from_secs(5));
    let last_words = || {
        stderr_lines
            .recv_timeout(Duration::from_secs(1))
            .ok()
            .and_then(|text| {
                text.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })
    };
    let Some(init) = init else {
        let why = match (written, ended) {
            (Err(err), _) => StartFailure::InputClosed(err),
            (_, Some(status)) if !status.success() => StartFailure::Exited(status),
            _ => StartFailure::NoAnswer,
        };
        return Err(ProbeError::NotStarted {
            binary: binary.to_owned(),
            why,
            last_words: last_words(),
        });
    };
    if let Some(error) = init.get("error") {
        return Err(ProbeError::Refused {
            binary: binary.to_owned(),
            error: error.clone(),
        });
    }
    let result = &init["result"];
    let tools = listed
        .as_ref()
        .and_then(|listed| listed["result"]["tools"].as_array())
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| ProbeError::NoToolList {
            binary: binary.to_owned(),
            last_words: last_words(),
        })?;
    Ok(Answered {
        server: result["serverInfo"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        version: result["serverInfo"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        protocol: result["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        tools,
    })
}

/// Waits for `child` to exit for at most `patience`, then kills it.
fn wait_or_kill(
    child: &mut std::process::Child,
    patience: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + patience;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                return child.wait().ok();
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A program that, like a crabtalkd from before the bridge, refuses
    /// `mcp` as clap does.
    fn without_mcp(dir: &Path) -> PathBuf {
        let binary = dir.join("crabtalkd");
        std::fs::write(
            &binary,
            "#!/bin/sh\necho \"error: unrecognized subcommand '$1'\" >&2\nexit 2\n",
        )
        .unwrap();
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
        binary
    }

    #[test]
    fn a_binary_without_the_bridge_is_told_apart_and_its_words_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let binary = without_mcp(dir.path());
        // It exits at once, before or after the requests are written.
        let err = probe(&binary, dir.path()).unwrap_err();
        assert!(err.is_no_mcp_command(), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("mcp` did not start: it ")
                && text.ends_with("; its last words: error: unrecognized subcommand 'mcp'"),
            "{text}"
        );
        let missing = probe(&dir.path().join("nothing"), dir.path()).unwrap_err();
        assert!(!missing.is_no_mcp_command());
        assert!(missing.to_string().starts_with("cannot run "), "{missing}");
    }
}
