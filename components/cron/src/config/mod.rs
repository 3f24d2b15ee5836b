//! `$CRABTALK_HOME/config/crons.toml`: the entries, read and edited.
//!
//! ```toml
//! # Weekday stand-up reminder.
//! [[cron]]
//! id = "standup"
//! cron = "0 9 * * 1-5"
//! tz = "Europe/Berlin"
//! message = "Time for stand-up: what is on today?"
//! deliver = "telegram:123456"
//! ```
//!
//! People edit the file by hand; the CLI and the MCP tools edit it with
//! `toml_edit`, so comments, order and layout stay as they were. Every
//! edit takes `cron/edit.lock`, re-reads the file, refuses to touch a file
//! that does not parse, checks the result as a whole, and replaces the
//! file atomically (mode 0600).

mod edit;
mod entry;
mod load;
#[cfg(feature = "service")]
mod watch;

use std::fs::File;
use std::path::{Path, PathBuf};

use crabtalk_home::{Home, write_atomic_private};
use crabtalk_kit::FileLock;
use toml_edit::DocumentMut;

#[cfg(feature = "service")]
pub(crate) use edit::FieldValue;
pub use edit::{Change, EditError};
pub(crate) use entry::Entry;
pub use entry::KEYS;
#[cfg(feature = "service")]
pub(crate) use entry::{Deliver, Missed, slug_of, valid_id};
pub use load::{LoadError, parse_entries};
#[cfg(feature = "service")]
pub(crate) use watch::FileWatch;
#[cfg(feature = "service")]
pub use watch::WatchMode;

use crate::schedule::Zone;

/// How many times an edit is made again on a file that changed under it
/// before it is refused.
const EDIT_ATTEMPTS: u32 = 5;

/// The entries file of one home.
#[derive(Debug, Clone)]
pub struct CronsFile {
    path: PathBuf,
    lock: PathBuf,
}

impl CronsFile {
    pub fn of(home: &Home) -> Self {
        Self {
            path: home.component_config_dir().join("crons.toml"),
            lock: crate::data_dir(home).join("edit.lock"),
        }
    }

    /// A file somewhere else (tests, benchmarks).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let lock = path.with_extension("toml.lock");
        Self { path, lock }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's text; a missing file is an empty one.
    pub fn read_text(&self) -> Result<String, LoadError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => crabtalk_home::utf8_text(bytes).map_err(|err| LoadError::Invalid {
                path: self.path.clone(),
                line: err.line,
                column: err.column,
                message: err.to_string(),
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(source) => Err(LoadError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// The entries; entries without `tz` use `machine_zone`.
    pub fn load(&self, machine_zone: Zone) -> Result<Vec<Entry>, LoadError> {
        parse_entries(&self.path, &self.read_text()?, machine_zone)
    }

    /// Applies `change` under the edit lock and writes the file if the
    /// result is valid. Returns the entries after the change.
    pub fn edit(&self, machine_zone: Zone, change: &Change) -> Result<Vec<Entry>, EditError> {
        let _lock = FileLock::exclusive(&self.lock).map_err(|source| EditError::Io {
            path: self.lock.clone(),
            source,
        })?;
        let mut text = self.read_text().map_err(EditError::Unreadable)?;
        // Another program (an editor) does not take the lock: if the file
        // changed while the edit was made, the edit is made again on what
        // is there now rather than writing over it.
        for _ in 0..EDIT_ATTEMPTS {
            let (new_text, after) = self.edited(&text, machine_zone, change)?;
            let now = self.read_text().map_err(EditError::Unreadable)?;
            if now != text {
                text = now;
                continue;
            }
            write_atomic_private(&self.path, new_text.as_bytes()).map_err(|source| {
                EditError::Io {
                    path: self.path.clone(),
                    source,
                }
            })?;
            return Ok(after);
        }
        Err(EditError::Refused(format!(
            "{} kept changing while it was being edited; nothing was written, try again",
            self.path.display()
        )))
    }

    /// `text` with `change` made, and the entries it then holds.
    fn edited(
        &self,
        text: &str,
        machine_zone: Zone,
        change: &Change,
    ) -> Result<(String, Vec<Entry>), EditError> {
        let before =
            parse_entries(&self.path, text, machine_zone).map_err(EditError::Unparsable)?;
        let mut document: DocumentMut = text.parse().map_err(|_| {
            EditError::Unparsable(LoadError::Invalid {
                path: self.path.clone(),
                line: 1,
                column: 1,
                message: "not valid TOML".into(),
            })
        })?;
        change.apply(&mut document, &before)?;
        let new_text = document.to_string();
        let after =
            parse_entries(&self.path, &new_text, machine_zone).map_err(|err| match err {
                LoadError::Invalid { message, .. } => EditError::Refused(message),
                other => EditError::Unreadable(other),
            })?;
        Ok((new_text, after))
    }

    /// The file's modification time and length, to notice changes.
    pub fn stamp(&self) -> Option<(std::time::SystemTime, u64)> {
        let meta = File::open(&self.path).and_then(|f| f.metadata()).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    }
}
