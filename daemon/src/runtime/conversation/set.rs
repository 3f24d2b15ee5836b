//! [`Conversations`]: the conversations held in memory, at most a
//! configured number; idle ones are evicted least recently used first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crabtalk_session_index::SessionIndex;
use parking_lot::Mutex;

use super::{Conversation, ConversationKey};
use crate::storage::Storage;

/// The conversations held in memory.
pub(crate) struct Conversations {
    map: Mutex<HashMap<ConversationKey, Arc<Conversation>>>,
    storage: Storage,
    /// Every appended message is indexed here.
    index: SessionIndex,
    max_in_memory: usize,
}

impl Conversations {
    pub(crate) fn new(storage: Storage, max_in_memory: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            storage,
            index: SessionIndex::new(),
            max_in_memory: max_in_memory.max(1),
        }
    }

    pub(crate) fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The session index the conversations feed.
    pub(crate) fn index(&self) -> &SessionIndex {
        &self.index
    }

    /// The conversation `key`, created in memory on first reference (its
    /// files are created by its first turn).
    pub(crate) fn get_or_create(&self, key: &ConversationKey) -> Arc<Conversation> {
        let mut map = self.map.lock();
        if let Some(conversation) = map.get(key) {
            return conversation.clone();
        }
        if map.len() >= self.max_in_memory {
            let excess = map.len() + 1 - self.max_in_memory;
            evict_lru(&mut map, excess);
        }
        let files = self.storage.files(&key.agent, &key.sender);
        let conversation = Arc::new(Conversation::new(key.clone(), files, self.index.clone()));
        map.insert(key.clone(), conversation.clone());
        conversation
    }

    pub(crate) fn get(&self, key: &ConversationKey) -> Option<Arc<Conversation>> {
        self.map.lock().get(key).cloned()
    }

    /// Every conversation in memory, sorted by key.
    pub(crate) fn all(&self) -> Vec<Arc<Conversation>> {
        let mut all: Vec<_> = self.map.lock().values().cloned().collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    pub(crate) fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Evicts idle conversations beyond the cap (least recently used first);
    /// called when a turn lets go of its conversation.
    pub(crate) fn trim(&self) {
        let mut map = self.map.lock();
        if map.len() > self.max_in_memory {
            let excess = map.len() - self.max_in_memory;
            evict_lru(&mut map, excess);
        }
    }

    /// Drops idle conversations unused for longer than `idle`.
    pub(crate) fn evict_idle(&self, idle: Duration) -> usize {
        let mut map = self.map.lock();
        let before = map.len();
        map.retain(|_, conversation| {
            !(conversation.is_idle() && conversation.last_used.lock().elapsed() >= idle)
        });
        before - map.len()
    }

    /// Takes the conversations whose key matches out of memory, unless one
    /// of them is busy (a turn runs or a question waits): then nothing is
    /// taken and the busy keys are returned. Await [`Conversation::settled`]
    /// on what was taken before touching its files.
    pub(crate) fn take_where(
        &self,
        mut matches: impl FnMut(&ConversationKey) -> bool,
    ) -> Result<Vec<Arc<Conversation>>, Vec<ConversationKey>> {
        let mut map = self.map.lock();
        let matching: Vec<ConversationKey> =
            map.keys().filter(|key| matches(key)).cloned().collect();
        let busy: Vec<ConversationKey> = matching
            .iter()
            .filter(|key| map[*key].is_busy())
            .cloned()
            .collect();
        if !busy.is_empty() {
            return Err(busy);
        }
        Ok(matching.iter().filter_map(|key| map.remove(key)).collect())
    }

    /// Cancels every running turn (at shutdown).
    pub(crate) fn kill_all(&self, reason: &str) {
        for conversation in self.all() {
            conversation.kill(reason);
        }
    }
}

/// Evicts up to `count` idle conversations, least recently used first.
fn evict_lru(map: &mut HashMap<ConversationKey, Arc<Conversation>>, count: usize) {
    let mut idle: Vec<(Instant, ConversationKey)> = map
        .iter()
        .filter(|(_, conversation)| conversation.is_idle())
        .map(|(key, conversation)| (*conversation.last_used.lock(), key.clone()))
        .collect();
    idle.sort();
    for (_, key) in idle.into_iter().take(count) {
        map.remove(&key);
    }
}
