//! Advisory file locks (`flock`): one instance of a service per home, one
//! edit of a shared file at a time across a service and its CLI. The kernel
//! releases a lock when its process dies, however it dies.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Waits for the lock on `path` (created, mode 0600).
    pub fn exclusive(path: &Path) -> std::io::Result<Self> {
        let file = open(path)?;
        lock(&file, Blocking::Wait)?;
        Ok(Self { file })
    }

    /// Takes the lock on `path` if nobody holds it; `Ok(None)` if someone
    /// does. The holder's pid is written into the file.
    pub fn try_exclusive(path: &Path) -> std::io::Result<Option<Self>> {
        let mut file = open(path)?;
        if !lock(&file, Blocking::DontWait)? {
            return Ok(None);
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{}", std::process::id())?;
        Ok(Some(Self { file }))
    }

    /// The pid written in a lock file, if any.
    pub fn holder(path: &Path) -> Option<u32> {
        let mut text = String::new();
        File::open(path).ok()?.read_to_string(&mut text).ok()?;
        text.trim().parse().ok()
    }

    /// The locked file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        crabtalk_home::create_private_dir(dir)?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Blocking {
    Wait,
    DontWait,
}

#[cfg(unix)]
fn lock(file: &File, blocking: Blocking) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut operation = libc::LOCK_EX;
    if blocking == Blocking::DontWait {
        operation |= libc::LOCK_NB;
    }
    loop {
        // SAFETY: flock on a descriptor this process owns.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.kind() {
            std::io::ErrorKind::WouldBlock => return Ok(false),
            std::io::ErrorKind::Interrupted => continue,
            _ => return Err(err),
        }
    }
}

#[cfg(not(unix))]
fn lock(_file: &File, _blocking: Blocking) -> std::io::Result<bool> {
    // Windows: the service manager runs one instance; edits are not
    // serialised across processes there.
    Ok(true)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_and_told_who_holds_it_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks/service.lock");
        let first = FileLock::try_exclusive(&path).unwrap().expect("free");
        assert!(FileLock::try_exclusive(&path).unwrap().is_none());
        assert_eq!(FileLock::holder(&path), Some(std::process::id()));
        drop(first);
        let again = FileLock::try_exclusive(&path).unwrap();
        assert!(again.is_some());
    }
}
