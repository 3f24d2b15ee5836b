//! One gateway per home: an advisory `flock` on
//! `$CRABTALK_HOME/telegram/gateway.lock`, released by the kernel when the
//! process dies, however it dies. Two gateways polling one bot would take
//! each other's updates (Telegram answers the second with 409).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crabtalk_home::Home;

/// Another gateway holds the home.
#[derive(Debug, thiserror::Error)]
#[error("another crabtalk-telegram{} already runs for {home}; stop it first with `crabup telegram stop`", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
pub struct AlreadyRunning {
    pub home: String,
    pub pid: Option<u32>,
}

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub struct GatewayLock {
    _file: File,
}

impl GatewayLock {
    /// `telegram/gateway.lock` of `home`.
    pub fn path(home: &Home) -> PathBuf {
        crate::data_dir(home).join("gateway.lock")
    }

    /// Takes the lock of `home`, or says who holds it.
    pub fn take(home: &Home) -> anyhow::Result<Self> {
        let path = Self::path(home);
        let mut file =
            open(&path).map_err(|err| anyhow::anyhow!("cannot open {}: {err}", path.display()))?;
        if !try_lock(&file)? {
            return Err(AlreadyRunning {
                home: home.root().display().to_string(),
                pid: holder(&path),
            }
            .into());
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{}", std::process::id())?;
        Ok(Self { _file: file })
    }
}

fn holder(path: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        crate::create_private_dir(dir)?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this process owns.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
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
fn try_lock(_file: &File) -> std::io::Result<bool> {
    // Windows: the service manager runs one instance.
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_gateway_is_refused_and_told_who_holds_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let first = GatewayLock::take(&home).unwrap();
        let err = GatewayLock::take(&home).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        GatewayLock::take(&home).unwrap();
    }
}
