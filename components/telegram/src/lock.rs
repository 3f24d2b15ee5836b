//! One gateway per home: an advisory `flock` on
//! `$CRABTALK_HOME/telegram/gateway.lock`, released by the kernel when the
//! process dies, however it dies. Two gateways polling one bot would take
//! each other's updates (Telegram answers the second with 409).

use std::path::PathBuf;

use crabtalk_home::Home;
use crabtalk_kit::FileLock;

/// Another gateway holds the home.
#[derive(Debug, thiserror::Error)]
#[error("another crabtalk-telegram{} already runs for {home}; stop it first with `crabup telegram stop`", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
pub(crate) struct AlreadyRunning {
    pub home: String,
    pub pid: Option<u32>,
}

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub(crate) struct GatewayLock {
    _lock: FileLock,
}

impl GatewayLock {
    /// `telegram/gateway.lock` of `home`.
    pub(crate) fn path(home: &Home) -> PathBuf {
        crate::data_dir(home).join("gateway.lock")
    }

    /// Takes the lock of `home`, or says who holds it.
    pub(crate) fn take(home: &Home) -> anyhow::Result<Self> {
        let path = Self::path(home);
        match FileLock::try_exclusive(&path)
            .map_err(|err| anyhow::anyhow!("cannot open {}: {err}", path.display()))?
        {
            Some(lock) => Ok(Self { _lock: lock }),
            None => Err(AlreadyRunning {
                home: home.root().display().to_string(),
                pid: FileLock::holder(&path),
            }
            .into()),
        }
    }
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
