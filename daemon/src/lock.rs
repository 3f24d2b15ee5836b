//! One daemon per home: an exclusive `flock` on `run/crabtalk.lock`, held for
//! the life of the process and released by the kernel when it exits, however
//! it exits.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    #[error(
        "another crabtalkd{} already runs with this home (it holds {path}); stop it first with `crabup daemon stop`",
        pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Held { path: PathBuf, pid: Option<u32> },
    #[error("cannot open the lock file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The held lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct InstanceLock {
    _file: File,
}

impl InstanceLock {
    /// Takes the lock without waiting and records this process's pid in it.
    pub(crate) fn acquire(path: &Path) -> Result<Self, LockError> {
        let io_error = |source| LockError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            crate::private::create_dir(dir).map_err(io_error)?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(io_error)?;
        if !try_lock(&file).map_err(io_error)? {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let pid = text.trim().parse().ok();
            return Err(LockError::Held {
                path: path.to_owned(),
                pid,
            });
        }
        file.set_len(0).map_err(io_error)?;
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        writeln!(file, "{}", std::process::id()).map_err(io_error)?;
        Ok(Self { _file: file })
    }
}

#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(err)
    }
}

#[cfg(not(unix))]
fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(err)) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join("crabtalk.lock");
        let first = InstanceLock::acquire(&path).unwrap();
        let err = InstanceLock::acquire(&path).unwrap_err();
        match &err {
            LockError::Held { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("crabup daemon stop"));
        drop(first);
        // Other tests of this process start commands: a child forked while
        // the lock was open holds a copy of its descriptor until it execs
        // (the descriptor is close-on-exec), and the lock goes with the
        // last copy. So the lock may come free a moment later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match InstanceLock::acquire(&path) {
                Ok(_) => break,
                Err(LockError::Held { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(err) => panic!("the lock did not come free: {err}"),
            }
        }
    }
}
