//! `$CRABTALK_HOME/search/health.json`: the health table on disk.
//!
//! Written atomically by whichever process searched (the service, or a
//! CLI `search`); read at start, when it changed since the last read (its
//! modification time), and by `crabtalk-search engines`. A file that does
//! not parse is reported and treated as empty: it is only a cache of what
//! engines said, and the next change rewrites it.

use std::path::PathBuf;
use std::time::SystemTime;

use crabtalk_home::Home;

use super::HealthTable;

/// The health file of a home.
#[derive(Debug, Clone)]
pub(crate) struct HealthFile {
    path: PathBuf,
}

impl HealthFile {
    pub(crate) fn of(home: &Home) -> Self {
        Self {
            path: crate::data_dir(home).join("health.json"),
        }
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The table, or an empty one when there is none or it is unreadable
    /// (said in the log).
    pub(crate) fn load(&self) -> HealthTable {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|err| {
                tracing::warn!(
                    "{}: {err}; starting with no engine health",
                    self.path.display()
                );
                HealthTable::default()
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => HealthTable::default(),
            Err(err) => {
                tracing::warn!("cannot read {}: {err}", self.path.display());
                HealthTable::default()
            }
        }
    }

    /// When it was last written, if it exists.
    pub(crate) fn modified(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
    }

    /// Replaces the file with `table`.
    pub(crate) fn save(&self, table: &HealthTable) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            crabtalk_home::create_private_dir(dir)?;
        }
        let mut text = serde_json::to_vec_pretty(table).map_err(std::io::Error::other)?;
        text.push(b'\n');
        crabtalk_home::write_atomic(&self.path, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EngineId, HealthConfig};
    use crate::health::Status;

    #[test]
    fn a_saved_table_reads_back_and_a_broken_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = HealthFile::of(&Home::new(dir.path()));
        assert_eq!(file.load(), HealthTable::default());
        let mut table = HealthTable::default();
        table.record(
            EngineId::Bing,
            Status::Blocked,
            Some("CAPTCHA page".into()),
            chrono::Utc::now(),
            &HealthConfig::default(),
        );
        file.save(&table).unwrap();
        assert_eq!(file.load(), table);
        std::fs::write(file.path(), "{not json").unwrap();
        assert_eq!(file.load(), HealthTable::default());
    }
}
