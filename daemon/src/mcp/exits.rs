//! Noticing at once that a component's process is gone.
//!
//! A component killed without removing its port file leaves nothing for the
//! `run/` watcher to see: its file stays, and its tools would stay offered
//! until the next slow rescan. So discovery also holds, for each component
//! whose port file names its pid, a Linux pidfd (`pidfd_open`, 5.3+): the
//! descriptor becomes readable when that process exits, which wakes
//! discovery through tokio's reactor. Waiting costs no wake-ups at all
//! while the process lives. Where pidfds are not available, the rescan is
//! what notices.

use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// One exit watch per live pid; each sends on `changed` when its process
/// ends.
pub(crate) struct ExitWatches {
    watches: HashMap<u32, JoinHandle<()>>,
    changed: mpsc::Sender<()>,
}

impl ExitWatches {
    pub(crate) fn new(changed: mpsc::Sender<()>) -> Self {
        Self {
            watches: HashMap::new(),
            changed,
        }
    }

    /// Watches exactly `pids`: new ones are added, the rest dropped.
    pub(crate) fn follow(&mut self, pids: &[u32]) {
        self.watches.retain(|pid, watch| {
            let keep = pids.contains(pid) && !watch.is_finished();
            if !keep {
                watch.abort();
            }
            keep
        });
        for &pid in pids {
            if self.watches.contains_key(&pid) {
                continue;
            }
            if let Some(watch) = watch_exit(pid, self.changed.clone()) {
                self.watches.insert(pid, watch);
            }
        }
    }
}

impl Drop for ExitWatches {
    fn drop(&mut self) {
        for watch in self.watches.values() {
            watch.abort();
        }
    }
}

#[cfg(target_os = "linux")]
fn watch_exit(pid: u32, changed: mpsc::Sender<()>) -> Option<JoinHandle<()>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    use tokio::io::unix::AsyncFd;

    let raw_pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; nothing else is touched.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw_pid, 0) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            // Gone between the scan and now: look again.
            let _ = changed.try_send(());
        } else {
            tracing::debug!(
                "no pidfd for component pid {pid} ({err}); the rescan will notice its exit"
            );
        }
        return None;
    }
    // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody
    // else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the `OwnedFd` moves into the `AsyncFd`, which owns it for its
    // whole life: it stays open and is the same descriptor throughout.
    let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()?;
    Some(tokio::spawn(async move {
        if fd.readable().await.is_ok() {
            tracing::info!("component process {pid} exited");
            let _ = changed.try_send(());
        }
    }))
}

#[cfg(not(target_os = "linux"))]
fn watch_exit(_pid: u32, _changed: mpsc::Sender<()>) -> Option<JoinHandle<()>> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_exit_of_a_followed_process_is_reported_at_once() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let (changed, mut changes) = mpsc::channel(1);
        let mut watches = ExitWatches::new(changed);
        watches.follow(&[child.id()]);
        // Nothing while it lives.
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(200), changes.recv())
                .await
                .is_err()
        );
        child.kill().unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), changes.recv())
            .await
            .expect("the exit is reported")
            .unwrap();
        let _ = child.wait();
    }

    #[tokio::test]
    async fn a_pid_no_longer_followed_is_not_reported() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let (changed, mut changes) = mpsc::channel(1);
        let mut watches = ExitWatches::new(changed);
        watches.follow(&[child.id()]);
        watches.follow(&[]);
        child.kill().unwrap();
        let _ = child.wait();
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(300), changes.recv())
                .await
                .is_err()
        );
    }
}
