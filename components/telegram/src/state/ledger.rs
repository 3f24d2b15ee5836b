//! Replies already delivered, per run: what makes a turn's reply reach a
//! chat exactly once when both the relay (which sees the turn end in the
//! daemon's events) and `telegram_send` with that run's id (what cron
//! calls to deliver) want to send it.
//!
//! A delivery is keyed by run id and chat address. [`Ledger::deliver_once`]
//! holds a lock per key while it sends, so the two paths serialise: the
//! first sends and records the message ids (in
//! `telegram/delivered.json`, so a restart of the gateway keeps them), the
//! second finds them and sends nothing. A failed send records nothing; the
//! other path may still try.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use crabtalk_home::Home;
use serde::{Deserialize, Serialize};

use crate::address::ChatAddress;

/// How many deliveries are remembered (the oldest are forgotten first).
pub(crate) const REMEMBERED: usize = 2000;

/// One recorded delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Delivered {
    pub run_id: u64,
    pub chat: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<i32>,
    pub message_ids: Vec<i32>,
    /// RFC 3339.
    pub at: String,
}

/// A delivery's key: the run and the chat.
type Key = (u64, ChatAddress);

/// The ledger of one home.
pub(crate) struct Ledger {
    path: PathBuf,
    entries: parking_lot::Mutex<Vec<Delivered>>,
    locks: parking_lot::Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
}

impl Ledger {
    pub(crate) fn open(home: &Home) -> Self {
        let path = crate::data_dir(home).join("delivered.json");
        let entries: Vec<Delivered> = super::read_json(&path);
        Self {
            path,
            entries: parking_lot::Mutex::new(entries),
            locks: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    /// The message ids run `run_id`'s reply got in `to`, if it was sent.
    pub(crate) fn find(&self, run_id: u64, to: ChatAddress) -> Option<Vec<i32>> {
        self.entries
            .lock()
            .iter()
            .rev()
            .find(|d| d.run_id == run_id && d.chat == to.chat && d.topic == to.topic)
            .map(|d| d.message_ids.clone())
    }

    /// Sends run `run_id`'s reply to `to` with `send` unless it was sent
    /// already; the message ids either way, and whether this call sent.
    pub(crate) async fn deliver_once<F, Fut, E>(
        &self,
        run_id: u64,
        to: ChatAddress,
        send: F,
    ) -> Result<(Vec<i32>, bool), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<i32>, E>>,
    {
        let lock = self.locks.lock().entry((run_id, to)).or_default().clone();
        let _held = lock.lock().await;
        if let Some(ids) = self.find(run_id, to) {
            return Ok((ids, false));
        }
        let result = send().await;
        if let Ok(ids) = &result {
            self.record(run_id, to, ids.clone());
        }
        // The key's lock is only needed while someone holds it.
        drop(_held);
        self.locks
            .lock()
            .retain(|_, lock| Arc::strong_count(lock) > 1);
        result.map(|ids| (ids, true))
    }

    fn record(&self, run_id: u64, to: ChatAddress, message_ids: Vec<i32>) {
        let mut entries = self.entries.lock();
        entries.push(Delivered {
            run_id,
            chat: to.chat,
            topic: to.topic,
            message_ids,
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        let excess = entries.len().saturating_sub(REMEMBERED);
        entries.drain(..excess);
        if let Err(err) = super::write_json(&self.path, &*entries) {
            tracing::warn!("cannot record a delivery in {}: {err}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::outbox::NotDelivered;

    #[tokio::test]
    async fn a_run_is_sent_once_per_chat_even_when_both_paths_race() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let ledger = Arc::new(Ledger::open(&home));
        let sends = Arc::new(AtomicUsize::new(0));
        let to = ChatAddress::chat(42);
        let attempt = |ledger: Arc<Ledger>, sends: Arc<AtomicUsize>| async move {
            ledger
                .deliver_once(7, to, || async move {
                    sends.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    Ok::<_, NotDelivered>(vec![11, 12])
                })
                .await
        };
        let (a, b) = tokio::join!(
            attempt(ledger.clone(), sends.clone()),
            attempt(ledger.clone(), sends.clone())
        );
        assert_eq!(sends.load(Ordering::SeqCst), 1);
        assert_eq!(a.as_ref().unwrap().0, vec![11, 12]);
        assert_eq!(b.as_ref().unwrap().0, vec![11, 12]);
        assert!(a.unwrap().1 ^ b.unwrap().1);
        // Another chat is another delivery; a restart remembers.
        let (ids, sent) = ledger
            .deliver_once(7, ChatAddress::chat(43), || async {
                Ok::<_, NotDelivered>(vec![1])
            })
            .await
            .unwrap();
        assert!(sent && ids == vec![1]);
        let again = Ledger::open(&home);
        assert_eq!(again.find(7, to), Some(vec![11, 12]));
        // A failed send records nothing.
        let failed = again
            .deliver_once(8, to, || async {
                Err::<Vec<i32>, _>(NotDelivered::Failed("boom".into()))
            })
            .await;
        assert!(failed.is_err() && again.find(8, to).is_none());
    }
}
