//! Session search wired to the conversations (RFC 0021; the index itself is
//! [`crabtalk_session_index`], RFC 0020).
//!
//! - **Feeding.** Every message a conversation appends is indexed at once
//!   through its [`SessionFeed`], under its message number (see
//!   [`crate::storage::numbering`]); compaction feeds the summary.
//! - **Rebuilding.** At start the index is rebuilt from every log in
//!   `sessions/` on a thread of its own ([`SessionSearch::start_rebuild`]);
//!   live appends go on meanwhile and are replayed onto the rebuilt index
//!   before it is swapped in, so none is lost.
//! - **Windows.** [`SessionSearch`] is the index's [`MessageSource`]: it
//!   reads a hit's window from the log by message number. It remembers where
//!   every 64th numbered line starts (8 bytes per 64 messages, filled by the
//!   rebuild and by earlier reads), so a window near the end of a long log
//!   is read without reading the file from its start.
//!
//! A conversation is identified in the index by its storage handle
//! (`<agent>/<sender>`, encoded), which is also what clients pass to
//! `GetConversationHistory`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::ops::{ControlFlow, Range};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Deserialize;

use crate::storage::numbering::{self, Position};
use crate::storage::{CompactMarker, ConversationFiles, Message, Meta, Role, Storage, names};
use crabtalk_session_index::{
    ConversationRef, MessageSource, Rebuild, Role as SearchRole, SearchError, SearchQuery,
    SessionHit, SessionIndex, SourceMessage,
};

/// A position is remembered for every this many numbered lines.
const STRIDE: u64 = 64;

/// Logs read ahead of the indexing during a rebuild.
const READ_AHEAD: usize = 16;

/// Set in tests only: the rebuild waits, after reading every log and before
/// swapping in, until this file exists. It makes "an append during the
/// rebuild" something a test can arrange instead of a race it hopes for.
pub const REBUILD_GATE_ENV: &str = "CRABTALKD_TEST_REBUILD_GATE";

/// The session index, the logs it is built from, and where lines start in
/// them. Clones share everything.
#[derive(Clone)]
pub struct SessionSearch {
    index: SessionIndex,
    storage: Storage,
    positions: Arc<Mutex<HashMap<String, Positions>>>,
    /// How many messages each log held when the rebuild read it: the truth
    /// at start, where a sidecar written late (and lost to a crash) lags.
    logged: Arc<Mutex<HashMap<String, u64>>>,
}

/// Where every [`STRIDE`]th numbered line of one log starts.
#[derive(Debug, Default)]
struct Positions {
    file: FileId,
    /// `offsets[i]` is where line number `i * STRIDE` starts.
    offsets: Vec<u64>,
}

/// Which file the positions belong to, so a log deleted and created anew
/// is not read with the old one's positions.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct FileId {
    device: u64,
    inode: u64,
}

impl FileId {
    fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Self {
                device: metadata.dev(),
                inode: metadata.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Self::default()
        }
    }
}

/// Feeds one conversation's changes to the index.
#[derive(Clone, Default)]
pub struct SessionFeed {
    index: SessionIndex,
    agent: String,
    sender: String,
    conversation: String,
}

impl SessionFeed {
    pub fn new(index: SessionIndex, agent: &str, sender: &str, conversation: &str) -> Self {
        Self {
            index,
            agent: agent.to_owned(),
            sender: sender.to_owned(),
            conversation: conversation.to_owned(),
        }
    }

    fn conv(&self) -> ConversationRef<'_> {
        ConversationRef {
            agent: &self.agent,
            sender: &self.sender,
            conversation: &self.conversation,
        }
    }

    /// Indexes message `number` of the conversation.
    pub fn message(&self, number: u64, message: &Message) {
        let Ok(number) = u32::try_from(number) else {
            return;
        };
        let calls = message
            .tool_calls
            .iter()
            .map(|call| (call.name.as_str(), call.arguments.as_str()));
        if let Some(document) = Document::of(
            message.role,
            &message.content,
            calls,
            message.tool_name.as_deref(),
        ) {
            self.index.add_message(
                self.conv(),
                number,
                document.role,
                &document.text,
                document.tool_name.as_deref(),
            );
        }
    }

    /// Sets the conversation's summary (compaction); `None` after a fresh
    /// start.
    pub fn summary(&self, summary: Option<&str>) {
        self.index.set_summary(self.conv(), summary);
    }
}

/// What the index holds for one message.
struct Document<'a> {
    role: SearchRole,
    text: Cow<'a, str>,
    tool_name: Option<Cow<'a, str>>,
}

impl<'a> Document<'a> {
    /// The document for a message: user and assistant text as it is; an
    /// assistant message that calls tools with the calls' arguments after
    /// its text and their names as the tool name; a tool result with its
    /// tool's name. System messages are not indexed.
    fn of(
        role: Role,
        content: &'a str,
        calls: impl ExactSizeIterator<Item = (&'a str, &'a str)> + Clone,
        tool_name: Option<&'a str>,
    ) -> Option<Self> {
        let document = match role {
            Role::System => return None,
            Role::User => Self {
                role: SearchRole::User,
                text: Cow::Borrowed(content),
                tool_name: None,
            },
            Role::Assistant if calls.len() == 0 => Self {
                role: SearchRole::Assistant,
                text: Cow::Borrowed(content),
                tool_name: None,
            },
            Role::Assistant => {
                let mut text = content.to_owned();
                let mut names = String::new();
                for (name, arguments) in calls {
                    if !names.is_empty() {
                        names.push_str(", ");
                    }
                    names.push_str(name);
                    text.push('\n');
                    text.push_str(arguments);
                }
                Self {
                    role: SearchRole::ToolCall,
                    text: Cow::Owned(text),
                    tool_name: Some(Cow::Owned(names)),
                }
            }
            Role::Tool => Self {
                role: SearchRole::ToolResult,
                text: Cow::Borrowed(content),
                tool_name: tool_name.map(Cow::Borrowed),
            },
        };
        Some(document)
    }
}

/// A log line, parsed only as far as indexing needs (borrowing its text
/// where it has no escapes: the rebuild parses every message on disk).
#[derive(Deserialize)]
struct IndexedLine<'a> {
    role: Role,
    #[serde(borrow, default)]
    content: Cow<'a, str>,
    #[serde(borrow, default)]
    tool_calls: Vec<IndexedCall<'a>>,
    #[serde(borrow, default)]
    tool_name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct IndexedCall<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Cow<'a, str>,
}

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

/// A search, owned, to run off the async workers.
#[derive(Debug, Clone, Default)]
pub struct SessionQuery {
    pub agent: String,
    /// Only conversations with this sender.
    pub sender: Option<String>,
    pub query: String,
    /// At most this many hits (capped at 20; 0 means 20).
    pub limit: usize,
    /// Messages before and after each match (the window is capped at 16).
    pub context: usize,
}

impl SessionSearch {
    pub fn new(storage: Storage, index: SessionIndex) -> Self {
        Self {
            index,
            storage,
            positions: Arc::default(),
            logged: Arc::default(),
        }
    }

    /// How many messages `handle`'s log held when it was last read whole
    /// (at start, or when its agent was renamed); `None` before that.
    /// Logs only grow, so a count that is lower is out of date.
    pub fn logged_messages(&self, handle: &str) -> Option<u64> {
        self.logged.lock().get(handle).copied()
    }

    pub fn index(&self) -> &SessionIndex {
        &self.index
    }

    /// Searches one agent's conversations; reads windows from the logs
    /// (blocking file I/O: call it off the async workers).
    pub fn search(&self, query: &SearchQuery<'_>) -> Result<Vec<SessionHit>, SearchError> {
        self.index.search(query, self)
    }

    /// [`search`](SessionSearch::search) on a blocking thread.
    pub async fn run(&self, query: SessionQuery) -> Result<Vec<SessionHit>, SearchError> {
        let this = self.clone();
        let agent = query.agent.clone();
        tokio::task::spawn_blocking(move || {
            this.search(&SearchQuery {
                agent: &query.agent,
                sender: query.sender.as_deref(),
                query: &query.query,
                context_before: query.context,
                context_after: query.context,
                limit: query.limit,
            })
        })
        .await
        .unwrap_or_else(|join| {
            Err(SearchError::Source {
                agent,
                conversation: String::new(),
                source: io::Error::other(join.to_string()),
            })
        })
    }

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

    /// Forgets a conversation (deleted, or moved away).
    pub fn forget(&self, agent: &str, handle: &str) {
        self.index.remove_conversation(agent, handle);
        self.positions.lock().remove(handle);
        self.logged.lock().remove(handle);
    }

    /// Where to start reading `handle`'s log for line `number`: the nearest
    /// remembered position at or before it.
    fn start_for(&self, handle: &str, file: FileId, number: u64) -> Position {
        let known = self.positions.lock();
        let Some(positions) = known
            .get(handle)
            .filter(|p| p.file == file && !p.offsets.is_empty())
        else {
            return Position::default();
        };
        let slot = (number / STRIDE).min(positions.offsets.len() as u64 - 1);
        Position {
            offset: positions.offsets[slot as usize],
            number: slot * STRIDE,
        }
    }

    /// Remembers positions learnt by a read: `found[i]` is where line
    /// `(first + i) * STRIDE` starts.
    fn learn(&self, handle: &str, file: FileId, first: u64, found: Vec<u64>) {
        if found.is_empty() {
            return;
        }
        let mut known = self.positions.lock();
        let positions = known.entry(handle.to_owned()).or_default();
        if positions.file != file {
            *positions = Positions {
                file,
                offsets: Vec::new(),
            };
        }
        let have = positions.offsets.len() as u64;
        if first <= have {
            let skip = (have - first) as usize;
            positions.offsets.extend(found.into_iter().skip(skip));
        }
    }

    fn read_window(&self, handle: &str, range: Range<u32>) -> io::Result<Vec<SourceMessage>> {
        let files = match self.storage.resolve(handle) {
            Ok(files) => files,
            Err(crate::storage::HandleError::NotFound(_)) => return Ok(Vec::new()),
            Err(err) => return Err(io::Error::new(io::ErrorKind::InvalidInput, err.to_string())),
        };
        let mut file = match File::open(&files.log) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let file_id = FileId::of(&file.metadata()?);
        let mut start = self.start_for(handle, file_id, u64::from(range.start));
        if start.offset > 0 && !starts_a_line(&mut file, start.offset)? {
            // The positions do not fit this file (replaced under us).
            self.positions.lock().remove(handle);
            start = Position::default();
        }
        file.seek(SeekFrom::Start(start.offset))?;
        let reader = BufReader::with_capacity(64 * 1024, file);
        let wanted = u64::from(range.start)..u64::from(range.end);
        let first_new = start.number.div_ceil(STRIDE);
        let mut found = Vec::new();
        let mut messages = Vec::with_capacity(range.len());
        numbering::for_each_line(reader, start, |line| {
            let Some(number) = line.number else {
                return ControlFlow::Continue(());
            };
            if number % STRIDE == 0 && number / STRIDE >= first_new {
                found.push(line.offset);
            }
            if number >= wanted.end {
                return ControlFlow::Break(());
            }
            if number < wanted.start {
                return ControlFlow::Continue(());
            }
            if let Some(message) = source_message(number as u32, line.bytes) {
                messages.push(message);
            }
            ControlFlow::Continue(())
        })?;
        self.learn(handle, file_id, first_new, found);
        Ok(messages)
    }
}

impl MessageSource for SessionSearch {
    fn read(
        &self,
        _agent: &str,
        conversation: &str,
        range: Range<u32>,
    ) -> io::Result<Vec<SourceMessage>> {
        self.read_window(conversation, range)
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

/// Whether `offset` is the start of a line of `file` (the byte before it is
/// a newline).
fn starts_a_line(file: &mut File, offset: u64) -> io::Result<bool> {
    let mut before = [0u8; 1];
    file.seek(SeekFrom::Start(offset - 1))?;
    match file.read_exact(&mut before) {
        Ok(()) => Ok(before[0] == b'\n'),
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(err) => Err(err),
    }
}

/// A window item's message, from its log line.
fn source_message(number: u32, line: &[u8]) -> Option<SourceMessage> {
    let parsed: IndexedLine<'_> = serde_json::from_slice(line).ok()?;
    let calls = parsed
        .tool_calls
        .iter()
        .map(|call| (call.name.as_ref(), call.arguments.as_ref()));
    let document = Document::of(
        parsed.role,
        &parsed.content,
        calls,
        parsed.tool_name.as_deref(),
    )?;
    Some(SourceMessage {
        msg_idx: number,
        role: document.role,
        text: document.text.into_owned(),
        tool_name: document.tool_name.map(Cow::into_owned),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Entry, SessionLog, ToolCallRecord};

    fn search(sessions: &SessionSearch, query: &str, before: usize) -> Vec<SessionHit> {
        sessions
            .search(&SearchQuery {
                agent: "crab",
                sender: None,
                query,
                context_before: before,
                context_after: 1,
                limit: 5,
            })
            .unwrap()
    }

    #[test]
    fn windows_are_read_by_number_from_remembered_positions() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path());
        let files = storage.files("crab", "user");
        Meta {
            agent: "crab".into(),
            sender: "user".into(),
            ..Meta::default()
        }
        .save(&files.meta)
        .unwrap();
        let mut log = SessionLog::new(&files.log);
        for i in 0..300 {
            if i == 100 {
                log.append(&Entry::Compact(CompactMarker {
                    compact: "the summary mentions zebras".into(),
                    archive_name: "a".into(),
                    archived_at: "t".into(),
                    title: "t".into(),
                    messages_before: Some(100),
                }))
                .unwrap();
            }
            let text = if i == 250 {
                "the needle is here".to_owned()
            } else {
                format!("message {i}")
            };
            log.append(&Entry::Message(Message::user(text))).unwrap();
        }
        let sessions = SessionSearch::new(storage, SessionIndex::new());
        let report = sessions.rebuild(sessions.index.start_rebuild()).unwrap();
        assert_eq!((report.conversations, report.messages), (1, 300));
        assert_eq!(sessions.positions.lock()["crab/user"].offsets.len(), 5);

        let hits = search(&sessions, "needle", 2);
        assert_eq!(hits[0].msg_idx, Some(250));
        let window: Vec<_> = hits[0].window.iter().map(|w| w.snippet.as_str()).collect();
        assert_eq!(
            window,
            [
                "message 248",
                "message 249",
                "the needle is here",
                "message 251"
            ]
        );
        let hits = search(&sessions, "zebras", 0);
        assert_eq!(hits[0].field, crabtalk_session_index::Field::Summary);

        // Positions that do not fit the file are dropped, not trusted.
        sessions
            .positions
            .lock()
            .get_mut("crab/user")
            .unwrap()
            .offsets[3] += 1;
        let hits = search(&sessions, "needle", 1);
        let window: Vec<_> = hits[0].window.iter().map(|w| w.snippet.as_str()).collect();
        assert_eq!(window, ["message 249", "the needle is here", "message 251"]);
    }

    #[test]
    fn tool_calls_and_results_are_indexed_with_their_tool() {
        let call = ToolCallRecord {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{\"command\":\"cargo flamegraph\"}".into(),
        };
        let mut assistant = Message::assistant("profiling");
        assistant.tool_calls.push(call.clone());
        let index = SessionIndex::new();
        let feed = SessionFeed::new(index.clone(), "crab", "user", "crab/user");
        feed.message(0, &assistant);
        feed.message(1, &Message::tool_result(&call, "done", false));
        feed.message(2, &Message::system("never indexed"));
        assert_eq!(index.stats().messages, 2);
        let line = serde_json::to_vec(&Entry::Message(assistant)).unwrap();
        let source = source_message(0, &line).unwrap();
        assert_eq!(source.role, SearchRole::ToolCall);
        assert_eq!(source.tool_name.as_deref(), Some("bash"));
        assert!(source.text.contains("flamegraph"), "{}", source.text);
    }
}
