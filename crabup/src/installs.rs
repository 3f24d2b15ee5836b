//! What crabup itself installed: `$CARGO_HOME/.crabup-installs.json`.
//!
//! Binaries go where `cargo install` puts them, `$CARGO_HOME/bin` (RFC
//! 0016): one folder, on PATH for anyone with Rust, and what every service
//! unit already runs. cargo keeps its own records of what it installed
//! (`.crates2.json`); this file, beside them, keeps crabup's: each binary
//! it put in place from a release archive (`crabup pull`) or from a
//! checkout's one build (`crabup up --path`), with the version, where it
//! came from, and the SHA-256 of the binary as installed. A record is
//! believed only while the file still has that SHA-256: a `cargo install`
//! over it later makes cargo's record the true one again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The records file's name in `$CARGO_HOME`.
pub(crate) const RECORDS_FILE: &str = ".crabup-installs.json";

/// Every binary crabup installed, by binary name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Installs {
    #[serde(default)]
    pub binaries: BTreeMap<String, Record>,
}

/// How one binary came to be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The package it is the binary of (`crabtalkd`).
    pub package: String,
    pub version: String,
    /// The archive's URL, or `path+file://<checkout>` for a local build.
    pub source: String,
    /// The SHA-256 of the archive it came from (release installs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_sha256: Option<String>,
    /// The SHA-256 of the binary as installed.
    pub sha256: String,
    /// The target it was built for.
    pub target: String,
    /// RFC 3339.
    pub installed_at: String,
}

impl Record {
    /// Whether it came from a release archive (not a local build).
    pub(crate) fn is_from_release(&self) -> bool {
        self.archive_sha256.is_some()
    }

    /// The checkout of a local build.
    pub(crate) fn checkout(&self) -> Option<PathBuf> {
        self.source.strip_prefix("path+file://").map(PathBuf::from)
    }

    /// `release` or `path`, for `list`.
    pub(crate) fn kind(&self) -> &'static str {
        if self.is_from_release() {
            "release"
        } else {
            "path"
        }
    }
}

impl Installs {
    /// The records in `cargo_home` (none when the file does not exist).
    pub(crate) fn load(cargo_home: &Path) -> anyhow::Result<Self> {
        let path = cargo_home.join(RECORDS_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "{} is not crabup's records file; move it away and install again",
                    path.display()
                )
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes the records atomically.
    pub(crate) fn save(&self, cargo_home: &Path) -> anyhow::Result<()> {
        let path = cargo_home.join(RECORDS_FILE);
        let mut json = serde_json::to_string_pretty(self).expect("records serialize");
        json.push('\n');
        crabtalk_home::write_atomic(&path, json.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Records `binary` (and saves), replacing what was recorded for it.
    pub(crate) fn record(cargo_home: &Path, binary: &str, record: Record) -> anyhow::Result<()> {
        let mut installs = Self::load(cargo_home)?;
        installs.binaries.insert(binary.to_owned(), record);
        installs.save(cargo_home)
    }

    /// Forgets `binary` (and saves), when it was recorded.
    pub(crate) fn forget(cargo_home: &Path, binary: &str) -> anyhow::Result<bool> {
        let mut installs = Self::load(cargo_home)?;
        if installs.binaries.remove(binary).is_none() {
            return Ok(false);
        }
        installs.save(cargo_home)?;
        Ok(true)
    }

    /// The record of the binary at `path`, if crabup installed the file
    /// that is there now (its SHA-256 is the recorded one).
    pub(crate) fn current(&self, binary: &str, path: &Path) -> Option<&Record> {
        let record = self.binaries.get(binary)?;
        let sha256 = crabtalk_dist::Sha256::of_file(path).ok()?;
        (sha256 == record.sha256).then_some(record)
    }
}

/// Now, as RFC 3339 in UTC.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
