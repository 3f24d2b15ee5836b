//! Rebuilding the index from every log at start, on a thread of its own,
//! while live appends go on; and re-indexing an agent's conversations
//! after a rename.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crabtalk_session_index::{ConversationRef, Rebuild, Role as SearchRole, SessionIndex};

use super::SessionSearch;
use super::document::{Document, IndexedLine};
use super::windows::{FileId, Positions, STRIDE};
use crate::storage::numbering::{self, Position};
use crate::storage::{CompactMarker, ConversationFiles, Meta, names};

/// Logs read ahead of the indexing during a rebuild.
const READ_AHEAD: usize = 16;

/// Set in tests only: the rebuild waits, after reading every log and before
/// swapping in, until this file exists. It makes "an append during the
/// rebuild" something a test can arrange instead of a race it hopes for.
pub const REBUILD_GATE_ENV: &str = "CRABTALKD_TEST_REBUILD_GATE";

/// What one rebuild read, for the log line.
#[derive(Debug, Default, Clone, Copy)]
pub struct RebuildReport {
    pub conversations: usize,
    pub messages: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// Where indexed documents go: the live index, or a rebuild's.
trait Target {
    fn message(
        &mut self,
        conv: ConversationRef<'_>,
        number: u32,
        role: SearchRole,
        text: &str,
        tool: Option<&str>,
    );
    fn title(&mut self, conv: ConversationRef<'_>, title: &str);
    fn summary(&mut self, conv: ConversationRef<'_>, summary: Option<&str>);
}

impl Target for Rebuild {
    fn message(
        &mut self,
        conv: ConversationRef<'_>,
        number: u32,
        role: SearchRole,
        text: &str,
        tool: Option<&str>,
    ) {
        self.add_message(conv, number, role, text, tool);
    }

    fn title(&mut self, conv: ConversationRef<'_>, title: &str) {
        self.set_title(conv, title);
    }

    fn summary(&mut self, conv: ConversationRef<'_>, summary: Option<&str>) {
        self.set_summary(conv, summary);
    }
}

impl Target for &SessionIndex {
    fn message(
        &mut self,
        conv: ConversationRef<'_>,
        number: u32,
        role: SearchRole,
        text: &str,
        tool: Option<&str>,
    ) {
        self.add_message(conv, number, role, text, tool);
    }

    fn title(&mut self, conv: ConversationRef<'_>, title: &str) {
        self.set_title(conv, title);
    }

    fn summary(&mut self, conv: ConversationRef<'_>, summary: Option<&str>) {
        self.set_summary(conv, summary);
    }
}

impl SessionSearch {
    /// Starts rebuilding the index from every log, on a thread of its own
    /// that ends with the rebuild (with no logs at all, at once, without
    /// one). The rebuild is registered before this returns, so every
    /// message appended from now on is kept even if the rebuild read the
    /// file before it was written. Call it at start, before any turn.
    pub fn start_rebuild(&self) {
        let rebuild = self.index.start_rebuild();
        let nothing_stored = std::fs::read_dir(self.storage.dir())
            .map_or(true, |mut entries| entries.next().is_none());
        if nothing_stored {
            log_rebuild(self.rebuild(rebuild));
            return;
        }
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("session-index".into())
            .spawn(move || log_rebuild(this.rebuild(rebuild)));
        if let Err(err) = spawned {
            tracing::warn!(
                "the session index was not rebuilt: cannot start a thread: {err}; only messages from now on are searchable"
            );
        }
    }

    /// Fills `rebuild` from every log and swaps it in.
    ///
    /// One thread reads the files a few ahead of the one that indexes them,
    /// so waiting for the disk and indexing overlap.
    pub fn rebuild(&self, mut rebuild: Rebuild) -> io::Result<RebuildReport> {
        let started = Instant::now();
        let mut report = RebuildReport::default();
        let mut positions = HashMap::new();
        let logs = self.storage.logs()?;
        if logs.is_empty() {
            rebuild
                .finish()
                .map_err(|err| io::Error::other(err.to_string()))?;
            report.elapsed = started.elapsed();
            return Ok(report);
        }
        std::thread::scope(|scope| {
            let (ahead, read) = std::sync::mpsc::sync_channel(READ_AHEAD);
            scope.spawn(move || {
                for files in logs {
                    let log = StoredLog::read(&files);
                    if ahead.send((files, log)).is_err() {
                        return;
                    }
                }
            });
            for (files, log) in read {
                let indexed = log.and_then(|log| {
                    report.bytes += log.bytes.len() as u64;
                    index_log(&mut rebuild, &files, &log)
                });
                match indexed {
                    Ok((messages, found)) => {
                        report.conversations += 1;
                        report.messages += messages;
                        positions.insert(files.handle.as_str().to_owned(), found);
                        self.logged
                            .lock()
                            .insert(files.handle.as_str().to_owned(), messages);
                    }
                    Err(err) => {
                        tracing::warn!("session index: skipped {}: {err}", files.log.display())
                    }
                }
            }
        });
        if let Some(gate) = std::env::var_os(REBUILD_GATE_ENV) {
            let gate = PathBuf::from(gate);
            while !gate.exists() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        rebuild
            .finish()
            .map_err(|err| io::Error::other(err.to_string()))?;
        // Positions learnt by window reads meanwhile are as good; keep ours
        // only where there are none.
        let mut known = self.positions.lock();
        for (handle, found) in positions {
            known.entry(handle).or_insert(found);
        }
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// Re-indexes the conversations of an agent that was renamed from
    /// `old` to `new` (their handles changed). Blocking.
    pub fn move_agent(&self, old: &str, new: &str) -> io::Result<()> {
        for files in self.storage.logs_of(new)? {
            let (_, sender) = files.handle.halves();
            let old_handle = format!("{}/{sender}", names::encode(old));
            self.forget(old, &old_handle);
            let mut live = &self.index;
            let indexed =
                StoredLog::read(&files).and_then(|log| index_log(&mut live, &files, &log));
            match indexed {
                Ok((messages, found)) => {
                    self.positions
                        .lock()
                        .insert(files.handle.as_str().to_owned(), found);
                    self.logged
                        .lock()
                        .insert(files.handle.as_str().to_owned(), messages);
                }
                Err(err) => tracing::warn!(
                    "session index: cannot re-index {} after the rename: {err}",
                    files.log.display()
                ),
            }
        }
        Ok(())
    }
}

fn log_rebuild(report: io::Result<RebuildReport>) {
    match report {
        Ok(report) => tracing::info!(
            "session index rebuilt: {} conversations, {} messages ({:.1} MiB) in {} ms",
            report.conversations,
            report.messages,
            report.bytes as f64 / (1024.0 * 1024.0),
            report.elapsed.as_millis()
        ),
        Err(err) => tracing::warn!(
            "the session index was not rebuilt: {err}; only messages from now on are searchable"
        ),
    }
}

/// A log as read from disk, with its metadata, for indexing.
struct StoredLog {
    meta: Option<Meta>,
    file: FileId,
    bytes: Vec<u8>,
}

impl StoredLog {
    fn read(files: &ConversationFiles) -> io::Result<Self> {
        let meta = Meta::load(&files.meta).ok().flatten();
        let mut file = File::open(&files.log)?;
        let id = FileId::of(&file.metadata()?);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(Self {
            meta,
            file: id,
            bytes,
        })
    }
}

/// Indexes one log into `target`; returns how many messages it has and
/// where its lines start.
fn index_log(
    target: &mut impl Target,
    files: &ConversationFiles,
    log: &StoredLog,
) -> io::Result<(u64, Positions)> {
    let meta = log.meta.as_ref();
    let (agent, sender) = conversation_names(files, meta).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "no readable metadata and a shortened file name: whose conversation it is is unknown",
        )
    })?;
    let conv = ConversationRef {
        agent: &agent,
        sender: &sender,
        conversation: files.handle.as_str(),
    };
    let mut positions = Positions {
        file: log.file,
        offsets: Vec::new(),
    };
    let mut last_summary: Option<String> = None;
    let end = numbering::for_each_line_in(&log.bytes, Position::default(), |line| {
        let Some(number) = line.number else {
            if numbering::is_marker(line.bytes)
                && let Ok(marker) = serde_json::from_slice::<CompactMarker>(line.bytes)
            {
                last_summary = Some(marker.compact).filter(|summary| !summary.trim().is_empty());
            }
            return ControlFlow::Continue(());
        };
        if number % STRIDE == 0 {
            positions.offsets.push(line.offset);
        }
        let Ok(number) = u32::try_from(number) else {
            return ControlFlow::Break(());
        };
        let Ok(parsed) = serde_json::from_slice::<IndexedLine<'_>>(line.bytes) else {
            return ControlFlow::Continue(());
        };
        let calls = parsed
            .tool_calls
            .iter()
            .map(|call| (call.name.as_ref(), call.arguments.as_ref()));
        if let Some(document) = Document::of(
            parsed.role,
            &parsed.content,
            calls,
            parsed.tool_name.as_deref(),
        ) {
            target.message(
                conv,
                number,
                document.role,
                &document.text,
                document.tool_name.as_deref(),
            );
        }
        ControlFlow::Continue(())
    });
    // A title taken from the first message is not indexed: the message is.
    let title = meta
        .filter(|meta| !meta.auto_title)
        .map_or("", |meta| meta.title.as_str());
    if !title.is_empty() {
        target.title(conv, title);
    }
    // The log is the truth; the sidecar may lag behind it.
    let summary = last_summary.or_else(|| meta.and_then(|meta| meta.summary.clone()));
    if summary.is_some() {
        target.summary(conv, summary.as_deref());
    }
    Ok((end.number, positions))
}

/// The agent and sender of a stored conversation: from its metadata, or
/// decoded from its file names.
fn conversation_names(files: &ConversationFiles, meta: Option<&Meta>) -> Option<(String, String)> {
    if let Some(meta) = meta.filter(|meta| !meta.agent.is_empty()) {
        return Some((meta.agent.clone(), meta.sender.clone()));
    }
    let (agent, sender) = files.handle.halves();
    Some((names::decode(agent)?, names::decode(sender)?))
}
