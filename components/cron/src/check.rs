//! `crabtalk-cron check`: `crons.toml` read as `run` reads it (the kit's
//! `check`, which `crabup cron start|restart` runs first).
//!
//! The service refuses to start on a file it cannot read — a scheduler
//! that started with every schedule silently gone is worse than one that
//! says why it did not start — and a running service keeps its last good
//! schedule when the file turns bad (see the engine), so neither a restart
//! nor an edit loses the entries that were running.

use crabtalk_kit::Component;
use crabtalk_kit::config::ConfigError;

use crate::config::{CronsFile, Entry, LoadError};
use crate::schedule::Zone;

impl From<LoadError> for ConfigError {
    fn from(err: LoadError) -> Self {
        match err {
            LoadError::Io { path, source } => ConfigError::Read { path, source },
            LoadError::Invalid {
                path,
                line,
                column,
                message,
            } => ConfigError::At {
                path,
                line,
                column,
                message,
            },
        }
    }
}

/// The entries of `crons.toml` as the service would read them (entries
/// without `tz` in `zone`) and the text they came from, or the problem
/// that stops it, as a [`ConfigError`] (exit 78).
pub(crate) fn entries(file: &CronsFile, zone: Zone) -> Result<(Vec<Entry>, String), ConfigError> {
    let text = file.read_text()?;
    let entries = crate::config::parse_entries(file.path(), &text, zone)?;
    Ok((entries, text))
}

/// The summary of a `crons.toml` the service would take.
pub(crate) fn check(component: &Component) -> anyhow::Result<String> {
    let file = CronsFile::of(component.home());
    let zone = Zone::of_this_machine().unwrap_or(Zone::UTC);
    let (entries, _) = entries(&file, zone)?;
    if !file.path().exists() {
        return Ok(format!("no {}: no entries yet", file.path().display()));
    }
    let enabled = entries.iter().filter(|entry| entry.enabled).count();
    Ok(format!(
        "{}: the service would take it ({} entr{}, {enabled} enabled)",
        file.path().display(),
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" }
    ))
}
