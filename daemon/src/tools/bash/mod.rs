//! `bash`: run a command with `bash -c` in the turn's working directory.
//!
//! The timeout is a wall-clock bound on the call, and nothing the call
//! started outlives it: when the command ends, times out, or the turn is
//! cancelled (or the daemon stops), everything it started is killed —
//! its process group, and on Linux also what left the group (`setsid`,
//! `set -m`, double forks), found through a supervisor that is a child
//! subreaper (`supervisor`, `reaper`). Each of stdout and stderr is
//! kept up to a cap and the rest is counted, not stored; the pipes are
//! read as the command writes, so it never blocks on a full pipe. This is
//! a guard against accidents and runaway commands, not a sandbox: the
//! command runs as the daemon's user, with its rights.
//!
//! Limits per agent (`[bash]`): `disabled`, a `deny` list of command names,
//! `timeout_secs`, extra `env`, and `allow_gateway`. Whether a gateway
//! sender's chain may use bash at all is not decided here but at the gate
//! (see [`super::gateway`]), where `allow_gateway` is read.

mod reaper;
#[cfg(unix)]
mod supervisor;
#[cfg(not(unix))]
#[path = "unsupported.rs"]
mod supervisor;

use std::time::Duration;

use serde::Deserialize;

pub(crate) use self::reaper::end_all;
use self::supervisor::{Captured, Ending};
use crate::config::agent::AgentDef;
use crate::hook::{Hook, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments};
use crate::storage::ToolCallRecord;

/// The longest timeout a call may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The `bash` tool.
pub(crate) struct BashHook;

#[derive(Deserialize)]
struct Arguments {
    command: String,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

impl Hook for BashHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "bash".into(),
            description:
                "Run a shell command with `bash -c` in the conversation's working directory \
                and return its exit code, stdout and stderr (each capped at 64 KiB). Anything it \
                starts in the background is stopped when it ends."
                    .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout_secs": {"type": "integer", "minimum": 1, "description": "Give up after this many seconds (default: the agent's bash timeout, at most 600)."}
                },
                "required": ["command"]
            }),
        }]
    }

    fn offers(&self, agent: &AgentDef, _: &str) -> bool {
        !agent.config.bash.disabled
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let arguments: Arguments = match parse_arguments(call) {
            Ok(arguments) => arguments,
            Err(error) => return Some(Box::pin(std::future::ready(error))),
        };
        let settings = &context.agent.config.bash;
        if settings.disabled {
            return Some(ready_error(
                "bash is disabled for this agent ([bash] disabled = true)",
            ));
        }
        if arguments.timeout_secs == Some(0) {
            return Some(ready_error(
                "timeout_secs must be at least 1; leave it out for the agent's default",
            ));
        }
        if let Some(denied) = denied_word(&arguments.command, &settings.deny) {
            return Some(ready_error(format!(
                "the command uses {denied:?}, which this agent may not run ([bash] deny); find another way"
            )));
        }
        let default = Duration::from_secs(settings.timeout_secs.max(1));
        let timeout = arguments
            .timeout_secs
            .map_or(default, Duration::from_secs)
            .min(MAX_TIMEOUT);
        let env: Vec<(String, String)> = settings
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(Box::pin(run(arguments.command, context.cwd, env, timeout)))
    }
}

fn ready_error(message: impl Into<String>) -> ToolFuture {
    Box::pin(std::future::ready(ToolOutput::error(message)))
}

/// The first word of `command` that is on the deny list. Words are split on
/// whitespace and shell punctuation and compared by their last path
/// component, so `/bin/rm` and `x;rm` both match `rm`. A guard against
/// accidents, not a sandbox.
fn denied_word<'a>(command: &str, deny: &'a [String]) -> Option<&'a str> {
    let words = command
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ';' | '|' | '&' | '(' | ')' | '`' | '$' | '<' | '>' | '"' | '\''
                )
        })
        .filter(|word| !word.is_empty())
        .map(|word| word.rsplit('/').next().unwrap_or(word));
    for word in words {
        if let Some(denied) = deny.iter().find(|denied| denied.as_str() == word) {
            return Some(denied);
        }
    }
    None
}

async fn run(
    command: String,
    cwd: std::path::PathBuf,
    env: Vec<(String, String)>,
    timeout: Duration,
) -> ToolOutput {
    if !cwd.is_dir() {
        return ToolOutput::error(format!(
            "the working directory {} does not exist",
            cwd.display()
        ));
    }
    let finished = match supervisor::run(&command, cwd, env, timeout).await {
        Ok(finished) => finished,
        Err(error) => return ToolOutput::error(error.to_string()),
    };
    let mut text = String::new();
    text.push_str(&render(&finished.stdout, "stdout"));
    if finished.stderr.total > 0 {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("--- stderr ---\n");
        text.push_str(&render(&finished.stderr, "stderr"));
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    match finished.ending {
        Ending::TimedOut => {
            text.push_str(&format!(
                "--- timed out after {} s; the command and everything it started were killed ---",
                timeout.as_secs()
            ));
            ToolOutput::error(text)
        }
        Ending::Vanished => {
            text.push_str("--- the command was killed before it could report its exit status ---");
            ToolOutput::error(text)
        }
        Ending::Exited(0) => {
            text.push_str("--- exit code 0 ---");
            ToolOutput::ok(text)
        }
        Ending::Exited(code) => {
            text.push_str(&format!("--- exit code {code} ---"));
            ToolOutput::error(text)
        }
    }
}

/// A captured stream as text, with a note of what was left out.
fn render(captured: &Captured, name: &str) -> String {
    let mut text = String::from_utf8_lossy(&captured.kept).into_owned();
    if captured.total > captured.kept.len() {
        text.push_str(&format!(
            "\n[{name} truncated: {} bytes in all, the first {} shown]",
            captured.total,
            captured.kept.len()
        ));
    }
    if captured.cut_off {
        text.push_str(&format!(
            "\n[{name} was still open when the call ended; what came later is lost]"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_words_are_found_however_they_are_written() {
        let deny = vec!["rm".to_owned(), "curl".to_owned()];
        assert_eq!(denied_word("ls; /bin/rm -rf x", &deny), Some("rm"));
        assert_eq!(denied_word("echo $(curl x)", &deny), Some("curl"));
        assert_eq!(denied_word("echo rmdir", &deny), None);
        assert_eq!(denied_word("git status", &deny), None);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_timeout_holds_whatever_the_children_do_and_none_survives() {
        let dir = tempfile::tempdir().unwrap();
        // Children that leave the process group and keep stdout open.
        let command = "setsid sleep 25 & echo $! > setsid.pid; set -m; sleep 25 & echo $! > jobs.pid; sleep 25";
        let started = std::time::Instant::now();
        let output = run(
            command.into(),
            dir.path().into(),
            vec![],
            Duration::from_secs(1),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            output.is_error && output.text.contains("timed out after 1 s"),
            "{}",
            output.text
        );
        for file in ["setsid.pid", "jobs.pid"] {
            let pid: u32 = std::fs::read_to_string(dir.path().join(file))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(!alive(pid), "{file}: {pid} still runs");
        }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_command_that_returns_at_once_does_not_wait_for_what_it_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let command = "setsid sleep 25 & echo $! > left.pid; echo done";
        let started = std::time::Instant::now();
        let output = run(
            command.into(),
            dir.path().into(),
            vec![],
            Duration::from_secs(60),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            !output.is_error && output.text.contains("done"),
            "{}",
            output.text
        );
        let pid: u32 = std::fs::read_to_string(dir.path().join("left.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid), "{pid} still runs");
    }

    /// Whether a process runs (a zombie does not count).
    #[cfg(target_os = "linux")]
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    #[tokio::test]
    async fn output_is_capped_and_the_rest_counted() {
        let dir = tempfile::tempdir().unwrap();
        let output = run(
            "head -c 200000 /dev/zero | tr '\\0' a".into(),
            dir.path().into(),
            vec![],
            Duration::from_secs(30),
        )
        .await;
        assert!(
            !output.is_error,
            "{}",
            &output.text[output.text.len().saturating_sub(200)..]
        );
        assert!(
            output
                .text
                .contains("[stdout truncated: 200000 bytes in all, the first 65536 shown]")
        );
    }
}
