//! A conversation in memory, and the set of them.
//!
//! A [`Conversation`] is identified by `(agent, sender)`. Its history lives
//! behind an async mutex that a turn holds from start to end, so turns on
//! one conversation run one after another in arrival order (tokio's mutex is
//! fair), while turns on different conversations run concurrently. The
//! history is loaded from disk the first time a turn needs it.
//!
//! Beside the history, and usable without waiting for the turn: the running
//! turn's control (kill, steer), the questions waiting for an answer, and the
//! latest metadata for listings.
//!
//! The files: `history.rs` (the history a turn holds, appended to the log
//! first), `tickets.rs` (turn order, the running turn's guard, questions
//! waiting), `meta_writer.rs` (the metadata file, written in the
//! background), `set.rs` ([`Conversations`]).
//!
//! [`Conversations`] keeps at most a configured number of them in RAM; idle
//! ones (no turn, no question, nobody holding them) are evicted, least
//! recently used first, and reloaded on demand.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{MutexGuard, oneshot};
use tokio_util::sync::CancellationToken;

use crate::sessions::SessionFeed;
use crate::storage::{ConversationFiles, LoadedHistory, Meta, SessionLog, now_rfc3339};
use crabtalk_session_index::SessionIndex;

mod history;
mod meta_writer;
mod set;
mod tickets;

pub(crate) use self::history::History;
use self::meta_writer::MetaWriter;
pub(crate) use self::set::Conversations;
use self::tickets::TurnOrder;
pub(crate) use self::tickets::{AskTicket, RunGuard, TurnTicket};

/// `(agent, sender)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ConversationKey {
    pub agent: String,
    pub sender: String,
}

/// The running turn of a conversation.
struct RunControl {
    run_id: u64,
    cancel: CancellationToken,
    reason: Option<String>,
    steers: Vec<String>,
}

/// A question waiting for the user.
struct PendingAsk {
    call_id: String,
    reply: oneshot::Sender<String>,
}

/// One conversation.
pub(crate) struct Conversation {
    pub key: ConversationKey,
    pub files: ConversationFiles,
    history: tokio::sync::Mutex<History>,
    run: Mutex<Option<RunControl>>,
    asks: Mutex<VecDeque<PendingAsk>>,
    created: Instant,
    last_used: Mutex<Instant>,
    /// The latest metadata, for listings (the file may lag behind).
    latest_meta: Mutex<Option<Meta>>,
    /// Turns in the order they were started (see [`TurnTicket`]).
    order: Mutex<TurnOrder>,
    order_changed: tokio::sync::Notify,
    /// Files read in this conversation, and what they held then (for edit).
    reads: Mutex<HashMap<std::path::PathBuf, crate::hook::FileStamp>>,
    meta_writer: Arc<MetaWriter>,
}

/// How many conversations are read from disk at once.
static LOADS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(16);

/// What loading a conversation reads from disk, off the runtime's workers.
struct OnDisk {
    log: SessionLog,
    meta_path: std::path::PathBuf,
    key: ConversationKey,
    created_by: String,
}

/// What [`OnDisk::read`] found.
struct Read {
    log: SessionLog,
    loaded: LoadedHistory,
    meta: Meta,
}

impl OnDisk {
    /// Reads the log and the metadata, creating both for a new
    /// conversation (the log opened for appending, so that its first
    /// message does not create it on a worker).
    fn read(mut self) -> io::Result<Read> {
        let loaded = self.log.load()?;
        let meta = match Meta::load(&self.meta_path) {
            Ok(Some(meta)) => meta,
            Ok(None) => {
                let now = now_rfc3339();
                let meta = Meta {
                    agent: self.key.agent.clone(),
                    sender: self.key.sender.clone(),
                    created_by: self.created_by,
                    created_at: now.clone(),
                    updated_at: now,
                    ..Meta::default()
                };
                meta.save(&self.meta_path)?;
                meta
            }
            Err(err) => {
                tracing::warn!("{err}; rebuilding the conversation's metadata");
                Meta {
                    agent: self.key.agent.clone(),
                    sender: self.key.sender.clone(),
                    ..Meta::default()
                }
            }
        };
        self.log.open()?;
        Ok(Read {
            log: self.log,
            loaded,
            meta,
        })
    }
}

/// Why `ReplyToAsk` found nothing to answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    #[error("no question is waiting on this conversation")]
    NothingPending,
    #[error("no question with call id {0:?} is waiting on this conversation")]
    UnknownCall(String),
}

impl Conversation {
    fn new(key: ConversationKey, files: ConversationFiles, index: SessionIndex) -> Self {
        let log = SessionLog::new(files.log.clone());
        let meta_path = files.meta.clone();
        let feed = SessionFeed::new(index, &key.agent, &key.sender, files.handle.as_str());
        Self {
            key,
            files,
            history: tokio::sync::Mutex::new(History {
                loaded: false,
                messages: Vec::new(),
                wire: Default::default(),
                tools: Default::default(),
                marker: None,
                meta: Meta::default(),
                log,
                next_number: 0,
                feed,
            }),
            run: Mutex::new(None),
            asks: Mutex::new(VecDeque::new()),
            created: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            latest_meta: Mutex::new(None),
            reads: Mutex::new(HashMap::new()),
            order: Mutex::new(TurnOrder::default()),
            order_changed: tokio::sync::Notify::new(),
            meta_writer: Arc::new(MetaWriter::new(meta_path)),
        }
    }

    /// Waits for the turn lock and returns the loaded history. The first
    /// lock loads it from disk (creating the conversation's files if new).
    pub(crate) async fn lock_history(
        &self,
        created_by: &str,
    ) -> io::Result<MutexGuard<'_, History>> {
        let mut history = self.history.lock().await;
        self.touch();
        if !history.loaded {
            self.load(&mut history, created_by).await?;
        }
        Ok(history)
    }

    /// Reads the log and the metadata on the blocking pool: a long log takes
    /// a while to read, and a new conversation's files are created with an
    /// fsync, neither of which may hold up a worker that every other
    /// conversation's turns share. A turn dropped meanwhile leaves the
    /// history unloaded; the next lock reads it again.
    async fn load(&self, history: &mut History, created_by: &str) -> io::Result<()> {
        // A burst of new conversations would otherwise start a thread per
        // load, all contending for the same folder.
        let _permit = LOADS.acquire().await.map_err(io::Error::other)?;
        let log = std::mem::replace(&mut history.log, SessionLog::new(self.files.log.clone()));
        let disk = OnDisk {
            log,
            meta_path: self.files.meta.clone(),
            key: self.key.clone(),
            created_by: created_by.to_owned(),
        };
        let read = tokio::task::spawn_blocking(move || disk.read())
            .await
            .map_err(io::Error::other)??;
        for problem in &read.loaded.problems {
            tracing::warn!("{problem}");
        }
        let Read { log, loaded, meta } = read;
        history.log = log;
        history.messages = loaded.messages;
        history.meta = meta;
        // The log is the truth; the sidecar is written a second late and
        // lags after a crash.
        history.next_number = loaded.next_number;
        history.meta.message_count = loaded.next_number;
        if let Some(marker) = &loaded.marker {
            history.meta.summary =
                Some(marker.compact.clone()).filter(|summary| !summary.trim().is_empty());
            history.meta.compactions = history.meta.compactions.max(1);
        }
        history.marker = loaded.marker;
        history.loaded = true;
        *self.latest_meta.lock() = Some(history.meta.clone());
        Ok(())
    }

    fn touch(&self) {
        *self.last_used.lock() = Instant::now();
    }

    /// The latest metadata, without waiting for a running turn; `None`
    /// until the conversation was loaded.
    pub(crate) fn latest_meta(&self) -> Option<Meta> {
        self.latest_meta.lock().clone()
    }

    /// How long this conversation has been in memory.
    pub(crate) fn alive(&self) -> Duration {
        self.created.elapsed()
    }

    /// Records a turn's end: the listing metadata now, the metadata file in
    /// the background (debounced, so a burst of turns writes it once, and
    /// never on the turn's own time).
    pub(crate) fn save_meta(&self, meta: &Meta) {
        *self.latest_meta.lock() = Some(meta.clone());
        self.meta_writer.schedule(meta.clone());
    }

    /// Marks a turn as running; the guard clears it.
    pub(crate) fn begin_run(self: &Arc<Self>, run_id: u64) -> RunGuard {
        let cancel = CancellationToken::new();
        *self.run.lock() = Some(RunControl {
            run_id,
            cancel: cancel.clone(),
            reason: None,
            steers: Vec::new(),
        });
        RunGuard {
            conversation: self.clone(),
            run_id,
            cancel,
        }
    }

    /// Cancels the running turn, if any; returns whether there was one.
    pub(crate) fn kill(&self, reason: &str) -> bool {
        let mut run = self.run.lock();
        match run.as_mut() {
            Some(control) => {
                control.reason.get_or_insert_with(|| reason.to_owned());
                control.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Queues a user message for the running turn's next model call.
    pub(crate) fn steer(&self, content: &str) -> bool {
        match self.run.lock().as_mut() {
            Some(control) => {
                control.steers.push(content.to_owned());
                true
            }
            None => false,
        }
    }

    /// Takes the queued steering messages.
    pub(crate) fn take_steers(&self) -> Vec<String> {
        self.run
            .lock()
            .as_mut()
            .map(|control| std::mem::take(&mut control.steers))
            .unwrap_or_default()
    }

    /// The running turn's id, if a turn is running.
    #[cfg(test)]
    pub(crate) fn running(&self) -> Option<u64> {
        self.run.lock().as_ref().map(|control| control.run_id)
    }

    /// Records that `path` was read, as it was then.
    pub(crate) fn record_read(&self, path: std::path::PathBuf, stamp: crate::hook::FileStamp) {
        self.reads.lock().insert(path, stamp);
    }

    /// What `path` held when it was last read here, if it was.
    pub(crate) fn read_stamp(&self, path: &std::path::Path) -> Option<crate::hook::FileStamp> {
        self.reads.lock().get(path).copied()
    }

    /// Registers a question; the ticket waits for its answer and withdraws
    /// the question when dropped.
    pub(crate) fn register_ask(self: &Arc<Self>, call_id: &str) -> AskTicket {
        let (reply, answer) = oneshot::channel();
        self.asks.lock().push_back(PendingAsk {
            call_id: call_id.to_owned(),
            reply,
        });
        AskTicket {
            conversation: self.clone(),
            call_id: call_id.to_owned(),
            answer: Some(answer),
        }
    }

    /// Answers the question `call_id`, or the oldest one.
    pub(crate) fn answer(&self, call_id: Option<&str>, content: &str) -> Result<(), AnswerError> {
        let mut asks = self.asks.lock();
        let position = match call_id.filter(|id| !id.is_empty()) {
            Some(id) => asks
                .iter()
                .position(|ask| ask.call_id == id)
                .ok_or_else(|| AnswerError::UnknownCall(id.to_owned()))?,
            None if asks.is_empty() => return Err(AnswerError::NothingPending),
            None => 0,
        };
        let ask = asks.remove(position).expect("position is in range");
        let _ = ask.reply.send(content.to_owned());
        Ok(())
    }

    /// Whether nothing but the registry holds or uses this conversation.
    fn is_idle(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) == 1 && !self.is_busy()
    }

    /// Whether a turn runs or waits, a question waits, or the history is
    /// locked.
    fn is_busy(&self) -> bool {
        let waiting = {
            let order = self.order.lock();
            order.serving < order.next
        };
        waiting
            || self.run.lock().is_some()
            || !self.asks.lock().is_empty()
            || self.history.try_lock().is_err()
    }

    /// Takes this conversation's next turn number. Called when a turn is
    /// started, so numbers follow the order requests arrived in.
    pub(crate) fn take_ticket(self: &Arc<Self>) -> TurnTicket {
        let mut order = self.order.lock();
        let number = order.next;
        order.next += 1;
        TurnTicket {
            conversation: self.clone(),
            number,
        }
    }

    /// Waits (briefly) until nothing else holds this conversation: a turn
    /// that just ended and a metadata write finish within moments.
    pub(crate) async fn settled(self: Arc<Self>) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&self) > 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let writer = self.meta_writer.clone();
        let _ = tokio::task::spawn_blocking(move || writer.flush()).await;
    }

    /// Writes pending metadata now (at shutdown).
    pub(crate) fn flush_meta(&self) {
        self.meta_writer.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{CompactMarker, Message, Storage};

    fn key(sender: &str) -> ConversationKey {
        ConversationKey {
            agent: "crab".into(),
            sender: sender.into(),
        }
    }

    #[tokio::test]
    async fn history_survives_a_reload_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 8);
        let conversation = conversations.get_or_create(&key("user"));
        {
            let mut history = conversation.lock_history("user").await.unwrap();
            history.append(Message::user("hello")).unwrap();
            history.append(Message::assistant("hi")).unwrap();
        }
        let fresh = Arc::new(Conversation::new(
            key("user"),
            Storage::new(dir.path()).files("crab", "user"),
            SessionIndex::new(),
        ));
        let history = fresh.lock_history("user").await.unwrap();
        assert_eq!(history.messages.len(), 2);
        assert_eq!(history.meta.sender, "user");
        assert_eq!(history.meta.message_count, 2);
    }

    #[tokio::test]
    async fn a_load_dropped_halfway_leaves_the_history_to_load_again() {
        use futures::FutureExt;
        let dir = tempfile::tempdir().unwrap();
        let files = || Storage::new(dir.path()).files("crab", "user");
        let conversation = Conversation::new(key("user"), files(), SessionIndex::new());
        {
            let mut history = conversation.lock_history("user").await.unwrap();
            // A new conversation's files are made by the load, on the
            // blocking pool, not by its first message on a worker.
            assert!(files().log.exists(), "the log is created by the load");
            assert!(files().meta.exists());
            history.append(Message::user("hello")).unwrap();
            history.append(Message::assistant("hi")).unwrap();
        }
        let fresh = Conversation::new(key("user"), files(), SessionIndex::new());
        // Polled once and dropped, most often while the blocking read runs.
        drop(fresh.lock_history("user").now_or_never());
        let mut history = fresh.lock_history("user").await.unwrap();
        assert_eq!(history.messages.len(), 2);
        assert_eq!(history.message_count(), 2);
        history.append(Message::user("again")).unwrap();
        drop(history);
        let lines = std::fs::read_to_string(files().log).unwrap();
        assert_eq!(lines.lines().count(), 3, "{lines}");
    }

    #[tokio::test]
    async fn message_numbers_continue_from_the_log_not_the_lagging_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 8);
        let conversation = conversations.get_or_create(&key("user"));
        {
            let mut history = conversation.lock_history("user").await.unwrap();
            history.append(Message::user("zero")).unwrap();
            history.append(Message::assistant("one")).unwrap();
            history
                .append_marker(CompactMarker {
                    compact: "summary".into(),
                    archive_name: "a".into(),
                    archived_at: "t".into(),
                    title: "t".into(),
                    messages_before: None,
                })
                .unwrap();
            history.append(Message::user("two")).unwrap();
            assert_eq!(history.message_count(), 3);
            // The metadata is never saved: as after a kill -9 within the
            // debounce, the sidecar still says 0 messages.
        }
        let restarted = Conversations::new(Storage::new(dir.path()), 8);
        let conversation = restarted.get_or_create(&key("user"));
        let mut history = conversation.lock_history("user").await.unwrap();
        assert_eq!(history.message_count(), 3);
        assert_eq!(history.meta.message_count, 3);
        assert_eq!(history.meta.summary.as_deref(), Some("summary"));
        history.append(Message::assistant("three")).unwrap();
        drop(history);
        let sessions = crate::sessions::SessionSearch::new(
            restarted.storage().clone(),
            restarted.index().clone(),
        );
        let hits = sessions
            .search(&crabtalk_session_index::SearchQuery {
                agent: "crab",
                sender: None,
                query: "three",
                context_before: 1,
                context_after: 0,
                limit: 1,
            })
            .unwrap();
        assert_eq!(hits[0].msg_idx, Some(3));
        let window: Vec<&str> = hits[0].window.iter().map(|w| w.snippet.as_str()).collect();
        assert_eq!(window, ["two", "three"]);
    }

    #[tokio::test]
    async fn asks_are_answered_by_id_or_oldest_first_and_withdrawn_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 8);
        let conversation = conversations.get_or_create(&key("user"));
        assert!(matches!(
            conversation.answer(None, "x"),
            Err(AnswerError::NothingPending)
        ));
        let first = conversation.register_ask("c1");
        let second = conversation.register_ask("c2");
        conversation.answer(Some("c2"), "two").unwrap();
        conversation.answer(None, "one").unwrap();
        assert_eq!(first.answer().await.as_deref(), Some("one"));
        assert_eq!(second.answer().await.as_deref(), Some("two"));
        let withdrawn = conversation.register_ask("c3");
        drop(withdrawn);
        assert!(matches!(
            conversation.answer(Some("c3"), "x"),
            Err(AnswerError::UnknownCall(_))
        ));
    }

    #[tokio::test]
    async fn idle_conversations_are_evicted_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 2);
        let busy = conversations.get_or_create(&key("busy"));
        let _run = busy.begin_run(1);
        conversations.get_or_create(&key("a"));
        conversations.get_or_create(&key("b"));
        // "busy" is held and running, so "a" (the older idle one) went.
        let senders: Vec<String> = conversations
            .all()
            .into_iter()
            .map(|c| c.key.sender.clone())
            .collect();
        assert_eq!(senders, ["b", "busy"]);
        assert_eq!(conversations.evict_idle(Duration::ZERO), 1);
        assert_eq!(conversations.len(), 1);
    }

    #[tokio::test]
    async fn kill_cancels_the_run_and_records_why() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 2);
        let conversation = conversations.get_or_create(&key("user"));
        assert!(!conversation.kill("nobody"));
        let run = conversation.begin_run(5);
        assert!(conversation.steer("faster"));
        assert_eq!(conversation.take_steers(), ["faster"]);
        assert!(conversation.kill("stopped by the user"));
        run.cancelled().await;
        assert_eq!(run.reason(), "stopped by the user");
        drop(run);
        assert_eq!(conversation.running(), None);
        assert!(!conversation.steer("late"));
    }

    #[tokio::test]
    async fn turns_run_in_ticket_order_whatever_order_they_wait_in() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 8);
        let conversation = conversations.get_or_create(&key("user"));
        let tickets: Vec<TurnTicket> = (0..4).map(|_| conversation.take_ticket()).collect();
        let (done, mut order) = tokio::sync::mpsc::unbounded_channel();
        let mut waiting = Vec::new();
        // Ticket 2 gives up its place; the others wait, last first.
        let mut tickets: Vec<Option<TurnTicket>> = tickets.into_iter().map(Some).collect();
        drop(tickets[2].take());
        for number in [3usize, 1, 0] {
            let ticket = tickets[number].take().unwrap();
            let done = done.clone();
            waiting.push(tokio::spawn(async move {
                ticket.wait().await;
                done.send(number).unwrap();
                drop(ticket);
            }));
        }
        for task in waiting {
            task.await.unwrap();
        }
        drop(done);
        let mut served = Vec::new();
        while let Some(number) = order.recv().await {
            served.push(number);
        }
        assert_eq!(served, [0, 1, 3]);
        assert!(!conversation.is_busy());
    }

    #[tokio::test]
    async fn dangling_tool_calls_get_results() {
        let dir = tempfile::tempdir().unwrap();
        let conversations = Conversations::new(Storage::new(dir.path()), 2);
        let conversation = conversations.get_or_create(&key("user"));
        let mut history = conversation.lock_history("user").await.unwrap();
        let mut assistant = Message::assistant("");
        for id in ["a", "b"] {
            assistant.tool_calls.push(crate::storage::ToolCallRecord {
                id: id.into(),
                name: "ask_user".into(),
                arguments: "{}".into(),
            });
        }
        let answered = assistant.tool_calls[0].clone();
        history.append(assistant).unwrap();
        history
            .append(Message::tool_result(&answered, "done", false))
            .unwrap();
        history.close_dangling_calls("cancelled").unwrap();
        let last = history.messages.last().unwrap();
        assert_eq!(last.tool_call_id.as_deref(), Some("b"));
        assert!(last.is_error);
        history.close_dangling_calls("cancelled").unwrap();
        assert_eq!(history.messages.len(), 3, "nothing more to close");
    }
}
