//! Running one `bash` call: the command under a supervisor, a wall-clock
//! deadline, and nothing left behind.
//!
//! The process the daemon starts is a small `bash` script, the
//! *supervisor*, in a process group of its own and (on Linux) a child
//! subreaper (see [`super::reaper`]). It runs the command as its child,
//! `bash -c COMMAND`, and writes the command's exit status to a socket the
//! daemon holds (fd 3, closed for the command itself). The daemon waits for
//! that status — not for the end of the output pipes, which anything the
//! command left running in the background may hold open for ever — until
//! the deadline. Then, whichever came first, it ends the supervisor's whole
//! tree, and only then reads what is left in the pipes, briefly. So the
//! timeout bounds the call in wall-clock time whatever the command's
//! children do, and nothing the call started outlives it.
//!
//! If the daemon itself disappears, its end of the socket closes and the
//! supervisor ends what it can reach (its group and, where `pkill` exists,
//! everything handed to it) before exiting.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use super::reaper;

/// Bytes kept of each of stdout and stderr.
pub(crate) const OUTPUT_CAP: usize = 64 * 1024;

/// How long the pipes may still take to end once everything that held them
/// is killed.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// The supervisor: runs `$1`, reports its status on fd 3, then waits for
/// the daemon; if the daemon goes away first, ends what it can reach.
const SUPERVISOR: &str = r#"bash -c "$1" 3>&-
printf '%d\n' "$?" >&3
read -r _ <&3
command -v pkill >/dev/null 2>&1 && while pkill -KILL -P $$ 2>/dev/null; do :; done
kill -KILL 0"#;

/// How a call ended.
pub(super) enum Ending {
    /// The command exited with this status (128 + n: killed by signal n).
    Exited(i32),
    /// The deadline came first.
    TimedOut,
    /// The supervisor vanished without a status (it was killed).
    Vanished,
}

/// What a call produced.
pub(super) struct Finished {
    pub ending: Ending,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// The start of a stream, and how long it really was.
#[derive(Default)]
pub(super) struct Captured {
    pub kept: Vec<u8>,
    pub total: usize,
    /// The stream was still open when the call ended.
    pub cut_off: bool,
}

/// Ends the supervisor's tree when dropped: when the call finishes, and
/// when it is cancelled (the turn was killed, the daemon is stopping).
struct TreeGuard {
    supervisor: Option<u32>,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if let Some(supervisor) = self.supervisor.take() {
            reaper::end_tree(supervisor);
        }
    }
}

/// Why a command did not run to an ending; the text is what the model
/// reads.
#[derive(Debug, thiserror::Error)]
pub(super) enum RunError {
    #[error("cannot set up the command's status channel: {0}")]
    StatusChannel(std::io::Error),
    #[error("cannot start bash: {0}")]
    Start(std::io::Error),
    /// The task that ends the command's process tree was lost.
    #[error("ending the command failed: {0}")]
    Ending(tokio::task::JoinError),
}

/// Runs `command` in `cwd` with `env` added, for at most `timeout`.
pub(super) async fn run(
    command: &str,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    timeout: Duration,
) -> Result<Finished, RunError> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(RunError::StatusChannel)?;
    let theirs = OwnedFd::from(theirs);
    let status_fd = theirs.as_raw_fd();
    let umask = crate::private::inherited_umask() as libc::mode_t;
    let mut process = tokio::process::Command::new("bash");
    process
        .arg("-c")
        .arg(SUPERVISOR)
        .arg("crabtalk-bash")
        .arg(command)
        .current_dir(&cwd)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    // SAFETY: only async-signal-safe calls (dup2, umask, prctl), between
    // fork and exec, on the child's own state.
    unsafe {
        process.pre_exec(move || {
            if libc::dup2(status_fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::umask(umask);
            #[cfg(target_os = "linux")]
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let mut child = process.spawn().map_err(RunError::Start)?;
    drop(theirs);
    let mut guard = TreeGuard {
        supervisor: child.id(),
    };
    if let Some(pid) = guard.supervisor {
        reaper::register(pid);
    }
    let stdout = Arc::new(Mutex::new(Captured::default()));
    let stderr = Arc::new(Mutex::new(Captured::default()));
    let stdout_reader = tokio::spawn(read_capped(child.stdout.take(), stdout.clone()));
    let stderr_reader = tokio::spawn(read_capped(child.stderr.take(), stderr.clone()));

    // The socket stays open until the tree is ended: the supervisor takes
    // its closing as "the daemon is gone" and starts ending things itself,
    // which would race the sweep below.
    let mut status = status_reader(ours);
    let ending = match status.as_mut() {
        Some(status) => tokio::time::timeout_at(deadline, read_status(status))
            .await
            .unwrap_or(Ending::TimedOut),
        None => Ending::Vanished,
    };
    // Whatever happened, nothing the command started outlives the call.
    if let Some(supervisor) = guard.supervisor.take() {
        tokio::task::spawn_blocking(move || reaper::end_tree(supervisor))
            .await
            .map_err(RunError::Ending)?;
    }
    let _ = child.wait().await;
    drop(status);
    drop(guard);
    Ok(Finished {
        ending,
        stdout: drained(stdout_reader, &stdout).await,
        stderr: drained(stderr_reader, &stderr).await,
    })
}

/// The daemon's end of the status socket, for tokio.
fn status_reader(
    socket: std::os::unix::net::UnixStream,
) -> Option<BufReader<tokio::net::UnixStream>> {
    socket.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(socket)
        .ok()
        .map(BufReader::new)
}

/// The status line the supervisor writes on fd 3.
async fn read_status(socket: &mut BufReader<tokio::net::UnixStream>) -> Ending {
    let mut line = String::new();
    match socket.take(64).read_line(&mut line).await {
        Ok(_) => line.trim().parse().map_or(Ending::Vanished, Ending::Exited),
        Err(_) => Ending::Vanished,
    }
}

/// What a pipe's reader got, waiting only briefly for the pipe to end.
async fn drained(reader: tokio::task::JoinHandle<()>, captured: &Mutex<Captured>) -> Captured {
    let abort = reader.abort_handle();
    let ended = tokio::time::timeout(PIPE_GRACE, reader).await.is_ok();
    if !ended {
        abort.abort();
    }
    let mut captured = std::mem::take(&mut *captured.lock());
    captured.cut_off = !ended;
    captured
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_CAP`] bytes in
/// `captured` as they come and counting the rest.
async fn read_capped(stream: Option<impl AsyncRead + Unpin>, captured: Arc<Mutex<Captured>>) {
    let Some(mut stream) = stream else {
        return;
    };
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut captured = captured.lock();
                captured.total += n;
                let room = OUTPUT_CAP.saturating_sub(captured.kept.len());
                captured.kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
}
