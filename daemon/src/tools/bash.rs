//! `bash`: run a command with `bash -c` in the turn's working directory.
//!
//! The command runs in a process group of its own. When it ends, times out,
//! or the turn is cancelled, the whole group is killed, so a `sleep` it
//! started in the background (or its children) cannot outlive it. Each of
//! stdout and stderr is kept up to a cap and the rest is counted, not
//! stored; the pipes are drained to the end so the command never blocks on
//! a full pipe.
//!
//! Limits per agent (`[bash]`): `disabled`, a `deny` list of command names,
//! `timeout_secs`, extra `env`, and `allow_gateway`. Whether a gateway
//! sender's chain may use bash at all is not decided here but at the gate
//! (see [`super::gateway`]), where `allow_gateway` is read.

use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Hook, ToolCallRecord, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments};
use crate::config::agent::AgentDef;

/// Bytes kept of each of stdout and stderr.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// The longest timeout a call may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The `bash` tool.
pub struct BashHook;

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

/// Kills a process group when dropped (cancellation), unless disarmed.
struct GroupKiller {
    pgid: Option<u32>,
}

impl GroupKiller {
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: signalling a process group this tool created.
            unsafe {
                libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
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
    let mut process = tokio::process::Command::new("bash");
    process
        .arg("-c")
        .arg(&command)
        .current_dir(&cwd)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    process.process_group(0);
    let mut child = match process.spawn() {
        Ok(child) => child,
        Err(err) => return ToolOutput::error(format!("cannot start bash: {err}")),
    };
    let mut killer = GroupKiller { pgid: child.id() };
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));
    let status = tokio::time::timeout(timeout, child.wait()).await;
    // Whatever happened, nothing the command started outlives it.
    killer.kill();
    let _ = child.wait().await;
    let (stdout, stderr) = (
        stdout.await.unwrap_or_default(),
        stderr.await.unwrap_or_default(),
    );

    let mut text = String::new();
    text.push_str(&stdout.render("stdout"));
    if stderr.total > 0 {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("--- stderr ---\n");
        text.push_str(&stderr.render("stderr"));
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    match status {
        Err(_) => {
            text.push_str(&format!(
                "--- timed out after {} s; the command and everything it started were killed ---",
                timeout.as_secs()
            ));
            ToolOutput::error(text)
        }
        Ok(Err(err)) => ToolOutput::error(format!(
            "{text}--- could not wait for the command: {err} ---"
        )),
        Ok(Ok(status)) => match status.code() {
            Some(0) => {
                text.push_str("--- exit code 0 ---");
                ToolOutput::ok(text)
            }
            Some(code) => {
                text.push_str(&format!("--- exit code {code} ---"));
                ToolOutput::error(text)
            }
            None => {
                text.push_str("--- killed by a signal ---");
                ToolOutput::error(text)
            }
        },
    }
}

/// The start of a stream, and how long it really was.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: usize,
}

impl Captured {
    fn render(&self, name: &str) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.total > self.kept.len() {
            text.push_str(&format!(
                "\n[{name} truncated: {} bytes in all, the first {} shown]",
                self.total,
                self.kept.len()
            ));
        }
        text
    }
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> Captured {
    let mut captured = Captured::default();
    let Some(mut stream) = stream else {
        return captured;
    };
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return captured,
            Ok(n) => {
                captured.total += n;
                let room = OUTPUT_CAP.saturating_sub(captured.kept.len());
                captured.kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
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
