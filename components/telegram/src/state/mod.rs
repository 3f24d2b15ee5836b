//! The gateway's own files under `$CRABTALK_HOME/telegram/`, each small,
//! each rewritten whole and atomically (`write_atomic_private`), each
//! read back forgivingly: a file that does not parse is logged and
//! treated as empty rather than stopping the gateway.
//!
//! - [`offset`]: the next update to ask for, per bot id;
//! - [`chats`]: chats seen (for `telegram_chats`), each chat's agent, and
//!   group migrations;
//! - [`ledger`]: replies already delivered per run, so the relay and
//!   `telegram_send` never send one twice.

pub(crate) mod chats;
pub(crate) mod ledger;
pub(crate) mod offset;

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Reads a JSON file; missing or unreadable is the default (logged).
pub(crate) fn read_json<T: DeserializeOwned + Default>(path: &Path) -> T {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|err| {
            tracing::warn!(
                "{} does not parse ({err}); starting it afresh",
                path.display()
            );
            T::default()
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => T::default(),
        Err(err) => {
            tracing::warn!("cannot read {}: {err}", path.display());
            T::default()
        }
    }
}

/// Writes a JSON file atomically, private to the user.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        crabtalk_home::create_private_dir(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    crabtalk_home::write_atomic_private(path, &bytes)
}
