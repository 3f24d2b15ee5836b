//! Messages handled beside the poll loop, so one slow download stalls no
//! other chat.
//!
//! A message with a file to download is not handled in the poll loop: it
//! joins its chat's queue, and a task of that chat's own works the queue
//! in order. Later messages of the same chat join the queue too while it
//! has anything in it (so a chat's messages reach the agent in the order
//! they were sent); every other chat's messages go on at once.
//!
//! Bounds: at most [`MAX_WAITING`] messages wait in all queues together
//! (beyond that the poll loop waits for room: back-pressure, not memory),
//! and at most [`MAX_DOWNLOADS`](super::media::MAX_DOWNLOADS) downloads run
//! at once, each bounded in size and time.
//!
//! Nothing is lost to a crash: the poll loop records an update as handled
//! once it is written to `telegram/inbound/<update id>.json` (atomically);
//! the file is removed once the message was handled. At start the files
//! left are queued again, before the first poll, and an update Telegram
//! hands over again while its file is there is not queued twice.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

use super::Gateway;
use super::content::attachment;
use crate::api::update::{Update, UpdateKind};

/// Messages waiting in all chats' queues together.
pub(crate) const MAX_WAITING: usize = 64;

/// One message waiting.
struct Waiting {
    id: i64,
    update: Update,
    _room: OwnedSemaphorePermit,
}

/// The chats' queues.
pub(crate) struct Inbox {
    queues: parking_lot::Mutex<HashMap<i64, VecDeque<Waiting>>>,
    room: Arc<Semaphore>,
    downloads: Semaphore,
    journal: PathBuf,
}

impl Inbox {
    pub(crate) fn new(home: &crabtalk_home::Home) -> Self {
        Self {
            queues: Default::default(),
            room: Arc::new(Semaphore::new(MAX_WAITING)),
            downloads: Semaphore::new(super::media::MAX_DOWNLOADS),
            journal: crate::data_dir(home).join("inbound"),
        }
    }

    /// A turn to download (waits while [`MAX_DOWNLOADS`](super::media::MAX_DOWNLOADS)
    /// run).
    pub(crate) async fn download_slot(&self) -> SemaphorePermit<'_> {
        self.downloads
            .acquire()
            .await
            .expect("the download semaphore is never closed")
    }

    /// Takes `update` into its chat's queue when it must wait there (it
    /// has a file to download, or its chat's queue is not empty); gives it
    /// back when the poll loop should handle it now.
    pub(crate) async fn admit(
        &self,
        gateway: &Arc<Gateway>,
        raw: &Value,
        update: Update,
    ) -> Option<Update> {
        let (chat, has_file) = match &update.kind {
            UpdateKind::Message(message) => (message.chat.id, attachment(message).is_some()),
            UpdateKind::Edited(message) => (message.chat.id, false),
            _ => return Some(update),
        };
        if !has_file && !self.queues.lock().contains_key(&chat) {
            return Some(update);
        }
        let path = self.file(update.id);
        if path.exists() {
            tracing::debug!(update = update.id, "already waiting in its chat's queue");
            return None;
        }
        let room = self.room().await;
        if let Err(err) = crate::state::write_json(&path, raw) {
            // Handled here then, as before there were queues.
            tracing::warn!(
                "cannot write {}: {err}; handling the message in the poll loop",
                path.display()
            );
            return Some(update);
        }
        self.push(gateway, chat, update, room);
        None
    }

    /// Queues again what a previous run left waiting (before the first
    /// poll).
    pub(crate) async fn replay(&self, gateway: &Arc<Gateway>) {
        let Ok(entries) = std::fs::read_dir(&self.journal) else {
            return;
        };
        let mut waiting: Vec<(i64, Value)> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".json")?.parse::<i64>().ok()?;
                Some((id, crate::state::read_json::<Value>(&entry.path())))
            })
            .collect();
        waiting.sort_by_key(|(id, _)| *id);
        for (id, raw) in waiting {
            match Update::read(&raw) {
                Ok(update) => {
                    let chat = match &update.kind {
                        UpdateKind::Message(m) | UpdateKind::Edited(m) => m.chat.id,
                        _ => 0,
                    };
                    tracing::info!(
                        update = id,
                        chat,
                        "handling a message a previous run left waiting"
                    );
                    let room = self.room().await;
                    self.push(gateway, chat, update, room);
                }
                Err(err) => {
                    tracing::warn!(
                        update = id,
                        "a waiting message cannot be read ({err}); dropped"
                    );
                    let _ = std::fs::remove_file(self.file(id));
                }
            }
        }
    }

    fn file(&self, id: i64) -> PathBuf {
        self.journal.join(format!("{id}.json"))
    }

    async fn room(&self) -> OwnedSemaphorePermit {
        self.room
            .clone()
            .acquire_owned()
            .await
            .expect("the queue semaphore is never closed")
    }

    fn push(&self, gateway: &Arc<Gateway>, chat: i64, update: Update, room: OwnedSemaphorePermit) {
        let waiting = Waiting {
            id: update.id,
            update,
            _room: room,
        };
        let mut queues = self.queues.lock();
        match queues.get_mut(&chat) {
            Some(queue) => queue.push_back(waiting),
            None => {
                queues.insert(chat, VecDeque::from([waiting]));
                tokio::spawn(work(gateway.clone(), chat));
            }
        }
    }
}

/// Works `chat`'s queue until it is empty.
async fn work(gateway: Arc<Gateway>, chat: i64) {
    loop {
        let next = {
            let mut queues = gateway.inbox.queues.lock();
            let queue = queues.get_mut(&chat).expect("a worked queue exists");
            match queue.front_mut() {
                // Handled while it stays in the queue, so the chat's next
                // message waits behind it.
                Some(waiting) => Some((waiting.id, waiting.update.clone())),
                None => {
                    queues.remove(&chat);
                    None
                }
            }
        };
        let Some((id, update)) = next else {
            return;
        };
        super::inbound::handle(&gateway, update).await;
        let _ = std::fs::remove_file(gateway.inbox.file(id));
        let mut queues = gateway.inbox.queues.lock();
        if let Some(queue) = queues.get_mut(&chat) {
            queue.pop_front();
        }
    }
}
