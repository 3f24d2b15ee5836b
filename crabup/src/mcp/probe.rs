//! Does the bridge start? `crabtalkd mcp` run as a host runs it: a child
//! with piped stdio, an `initialize` and a `tools/list` written as lines of
//! JSON-RPC, the answers read back within a time limit. What `crabup
//! doctor` reports.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
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

/// Runs `binary mcp` for `home` and asks it who it is and what tools it
/// has; why not, in words, when it does not answer.
pub(crate) fn probe(binary: &Path, home: &Path) -> Result<Answered, String> {
    let mut child = Command::new(binary)
        .arg("mcp")
        .env("CRABTALK_HOME", home)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run {} mcp: {err}", binary.display()))?;
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
    let last_stderr = || {
        stderr_lines
            .recv_timeout(Duration::from_secs(1))
            .ok()
            .and_then(|text| {
                text.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })
            .map(|line| format!("; its last words: {line}"))
            .unwrap_or_default()
    };
    let Some(init) = init else {
        let why = match (&written, ended) {
            (Err(err), _) => format!("it closed its input ({err})"),
            (_, Some(status)) if !status.success() => format!("it exited ({status})"),
            _ => format!(
                "no answer to initialize within {} s",
                PROBE_TIMEOUT.as_secs()
            ),
        };
        return Err(format!(
            "`{} mcp` did not start: {why}{}",
            binary.display(),
            last_stderr()
        ));
    };
    if let Some(error) = init.get("error") {
        return Err(format!(
            "`{} mcp` refused initialize: {error}",
            binary.display()
        ));
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
        .ok_or_else(|| {
            format!(
                "`{} mcp` answered initialize but not tools/list{}",
                binary.display(),
                last_stderr()
            )
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
