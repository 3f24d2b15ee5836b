//! Stdio servers: the process, its process group and its pipes.
//!
//! A server command is started in a process group of its own, so that
//! whatever it starts (a shell wrapper, `npx` and the node process under it)
//! can be ended with it. Its stderr is followed into a [`StderrTail`]; its
//! stdout goes through [`guard_replies`] before rmcp reads it.
//!
//! Ending a server: the connection is closed first (its stdin reaches EOF,
//! which is how MCP asks a stdio server to exit); then it gets
//! [`EXIT_GRACE`] to go, then `SIGTERM` to the group and another
//! [`EXIT_GRACE`], then `SIGKILL` to the group. Dropping a process that was
//! not ended that way kills the group at once, so no path leaves one behind.

use std::collections::BTreeMap;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::DuplexStream;
use tokio::process::{Child, ChildStdin};

use super::oversize::{MAX_REPLY, guard_replies};
use super::stderr::StderrTail;

/// How long a server gets to exit after each step of being ended.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(1);

/// A running stdio server.
pub(super) struct StdioProcess {
    child: Child,
    /// Follows stderr until the pipe closes; waited for once the process
    /// has exited, so that its last words are in the tail.
    stderr: Option<tokio::task::JoinHandle<()>>,
    /// The process group to signal (the server's pid); `None` once the
    /// group has been killed, so it is never signalled again.
    #[cfg(unix)]
    group: Option<libc::pid_t>,
}

/// A started server and the two ends rmcp talks through.
pub(super) struct Spawned {
    pub process: StdioProcess,
    /// The server's stdout, after [`guard_replies`].
    pub stdout: DuplexStream,
    pub stdin: ChildStdin,
}

/// Why a stdio server did not start.
#[derive(Debug, thiserror::Error)]
pub(super) enum SpawnError {
    #[error("cannot start {command}: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot connect to the pipes of {command}")]
    Pipes { command: String },
}

/// What to start.
pub(super) struct Launch<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    /// Applied in order: the daemon's `[env]`, then the server's own.
    pub env: [&'a BTreeMap<String, String>; 2],
}

impl StdioProcess {
    /// Starts `launch` for the server `name`, its stderr kept in `tail`.
    pub(super) fn spawn(
        launch: &Launch<'_>,
        name: &str,
        tail: Arc<StderrTail>,
    ) -> Result<Spawned, SpawnError> {
        let mut command = tokio::process::Command::new(launch.command);
        command
            .args(launch.args)
            .envs(launch.env[0])
            .envs(launch.env[1])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        {
            command.process_group(0);
            let umask = crate::private::inherited_umask() as libc::mode_t;
            // SAFETY: umask is async-signal-safe and only touches the
            // child, between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    libc::umask(umask);
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().map_err(|source| SpawnError::Start {
            command: launch.command.to_owned(),
            source,
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SpawnError::Pipes {
                command: launch.command.to_owned(),
            });
        };
        #[cfg(unix)]
        let group = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok());
        let server = name.to_owned();
        let stderr = tokio::spawn(async move { tail.follow(stderr, &server).await });
        let (guarded, rmcp_side) = tokio::io::duplex(64 * 1024);
        let server = name.to_owned();
        tokio::spawn(async move { guard_replies(stdout, guarded, MAX_REPLY, &server).await });
        Ok(Spawned {
            process: Self {
                child,
                stderr: Some(stderr),
                #[cfg(unix)]
                group,
            },
            stdout: rmcp_side,
            stdin,
        })
    }

    /// After the connection ended by itself: kills what is left of the
    /// group and says how the server exited.
    pub(super) async fn reap(&mut self) -> Option<ExitStatus> {
        self.kill_group();
        let status = self.exit_within(EXIT_GRACE).await;
        self.drain_stderr().await;
        status
    }

    /// Ends the server as the module says, and says how it exited. The
    /// caller has closed the connection (and so the server's stdin)
    /// already.
    pub(super) async fn stop(&mut self) -> Option<ExitStatus> {
        let status = self.end().await;
        self.drain_stderr().await;
        status
    }

    async fn end(&mut self) -> Option<ExitStatus> {
        if let Some(status) = self.exit_within(EXIT_GRACE).await {
            self.kill_group();
            return Some(status);
        }
        #[cfg(unix)]
        {
            self.signal_group(libc::SIGTERM);
            if let Some(status) = self.exit_within(EXIT_GRACE).await {
                self.kill_group();
                return Some(status);
            }
        }
        self.kill_group();
        let _ = self.child.start_kill();
        self.exit_within(EXIT_GRACE).await
    }

    /// Waits (bounded) for the last of stderr: the group is dead, so the
    /// pipe closes as soon as what is in it has been read.
    async fn drain_stderr(&mut self) {
        if let Some(follower) = self.stderr.take() {
            let _ = tokio::time::timeout(EXIT_GRACE, follower).await;
        }
    }

    async fn exit_within(&mut self, grace: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(grace, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// `SIGKILL` to the whole group, once.
    fn kill_group(&mut self) {
        #[cfg(unix)]
        {
            self.signal_group(libc::SIGKILL);
            self.group = None;
        }
        #[cfg(not(unix))]
        let _ = self.child.start_kill();
    }

    #[cfg(unix)]
    fn signal_group(&self, signal: libc::c_int) {
        if let Some(group) = self.group {
            // SAFETY: signals the process group this process created for the
            // server; `group` is cleared once it has been killed.
            unsafe {
                libc::killpg(group, signal);
            }
        }
    }
}

impl Drop for StdioProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}
