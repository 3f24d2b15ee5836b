//! `logs/cron-runs.jsonl`: one JSON line per slot — fired, missed, quiet,
//! overlapping or lost to a crash — appended, and pruned to its newest
//! lines when it grows past [`MAX_BYTES`].

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use crabtalk_home::{Home, write_atomic_private};
use crabtalk_kit::FileLock;
use serde::{Deserialize, Serialize};

/// Past this size the log is cut to its newest half.
pub(crate) const MAX_BYTES: u64 = 4 * 1024 * 1024;

/// How much of a reply the log keeps.
#[cfg(feature = "service")]
pub(crate) const PREVIEW_CHARS: usize = 280;

/// What became of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
    Missed,
    Quiet,
    Overlap,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Missed => "missed",
            Self::Quiet => "quiet",
            Self::Overlap => "overlap",
            Self::Unknown => "unknown",
        }
    }
}

/// Where a reply was delivered, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// `delivered`, `error` or `silent` (a `[SILENT]` reply).
    pub status: String,
    /// `telegram:<chat>`.
    pub to: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub message_ids: Vec<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub entry: String,
    pub scheduled: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<DateTime<Utc>>,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// `schedule`, `catch-up` or `manual`.
    #[serde(default = "scheduled_by_default")]
    pub by: String,
}

fn scheduled_by_default() -> String {
    "schedule".into()
}

impl RunRecord {
    /// A slot that did not run, with why.
    pub fn skipped(
        entry: &str,
        scheduled: DateTime<Utc>,
        status: Status,
        error: Option<String>,
    ) -> Self {
        Self {
            entry: entry.to_owned(),
            scheduled,
            started: None,
            finished: None,
            status,
            error,
            reply: None,
            delivery: None,
            by: scheduled_by_default(),
        }
    }
}

/// The first [`PREVIEW_CHARS`] characters of `reply`.
#[cfg(feature = "service")]
pub(crate) fn preview(reply: &str) -> String {
    let reply = reply.trim();
    match reply.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &reply[..cut]),
        None => reply.to_owned(),
    }
}

/// The run log of one home.
#[derive(Debug, Clone)]
pub struct RunLog {
    path: PathBuf,
    lock: PathBuf,
    max_bytes: u64,
}

impl RunLog {
    pub fn of(home: &Home) -> Self {
        Self {
            path: home.logs_dir().join("cron-runs.jsonl"),
            lock: crate::data_dir(home).join("runs.lock"),
            max_bytes: MAX_BYTES,
        }
    }

    /// A log at `path` pruned past `max_bytes` (tests).
    pub fn at(path: impl Into<PathBuf>, max_bytes: u64) -> Self {
        let path = path.into();
        let lock = path.with_extension("lock");
        Self {
            path,
            lock,
            max_bytes,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line, pruning first if the log is too big.
    pub fn append(&self, record: &RunRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        line.push('\n');
        let _lock = FileLock::exclusive(&self.lock)?;
        if std::fs::metadata(&self.path).is_ok_and(|m| m.len() + line.len() as u64 > self.max_bytes)
        {
            self.prune()?;
        }
        if let Some(dir) = self.path.parent() {
            crate::create_private_dir(dir)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&self.path)?;
        file.write_all(line.as_bytes())
    }

    /// Keeps the newest lines that fit in half the limit.
    fn prune(&self) -> std::io::Result<()> {
        let text = std::fs::read(&self.path)?;
        let keep = (self.max_bytes / 2) as usize;
        let mut start = text.len().saturating_sub(keep);
        while start > 0 && start < text.len() && text[start - 1] != b'\n' {
            start += 1;
        }
        write_atomic_private(&self.path, &text[start.min(text.len())..])
    }

    /// The newest `limit` records, oldest first, of `entry` (or all).
    /// Lines that do not parse (a torn last line) are skipped.
    pub fn read(&self, entry: Option<&str>, limit: usize) -> std::io::Result<Vec<RunRecord>> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let mut records = std::collections::VecDeque::new();
        for line in BufReader::new(file).lines() {
            let Ok(record) = serde_json::from_str::<RunRecord>(&line?) else {
                continue;
            };
            if entry.is_some_and(|id| id != record.entry) {
                continue;
            }
            if records.len() == limit {
                records.pop_front();
            }
            if limit > 0 {
                records.push_back(record);
            }
        }
        Ok(records.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(entry: &str, n: i64) -> RunRecord {
        RunRecord::skipped(
            entry,
            DateTime::from_timestamp(n, 0).unwrap(),
            Status::Missed,
            None,
        )
    }

    #[test]
    fn appends_reads_filters_and_prunes_to_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::at(dir.path().join("runs.jsonl"), 4_000);
        for n in 0..200 {
            log.append(&record(if n % 2 == 0 { "a" } else { "b" }, n))
                .unwrap();
        }
        let size = std::fs::metadata(log.path()).unwrap().len();
        assert!(size <= 4_000, "{size}");
        let all = log.read(None, usize::MAX).unwrap();
        assert_eq!(all.last().unwrap().scheduled.timestamp(), 199);
        assert!(all.len() > 10);
        let a = log.read(Some("a"), 3).unwrap();
        let times: Vec<i64> = a.iter().map(|r| r.scheduled.timestamp()).collect();
        assert_eq!(times, [194, 196, 198]);
        // A torn line is skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .unwrap()
            .write_all(b"{\"entry\":\"a\",\"sch")
            .unwrap();
        assert_eq!(
            log.read(Some("a"), 1).unwrap()[0].scheduled.timestamp(),
            198
        );
    }

    #[test]
    #[cfg(feature = "service")]
    fn previews_are_cut_on_characters() {
        let long = "é".repeat(400);
        let cut = preview(&long);
        assert_eq!(cut.chars().count(), PREVIEW_CHARS + 1);
        assert_eq!(preview(" short "), "short");
    }
}
