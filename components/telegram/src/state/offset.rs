//! The update offset: the id of the next update to ask Telegram for,
//! persisted after each update is handled, one file per bot id
//! (`telegram/offset-<bot id>`) so a new token starts its own count.
//!
//! `getUpdates(offset)` confirms every update below `offset`; a restart
//! asks from the persisted offset, so an update handled before the crash
//! is not handed over again and one not yet handled is.

use std::path::PathBuf;

use crabtalk_home::Home;

/// The offset file of one bot.
#[derive(Debug, Clone)]
pub(crate) struct OffsetStore {
    path: PathBuf,
    next: i64,
}

impl OffsetStore {
    /// The store of bot `bot_id` in `home`, with what it holds.
    pub(crate) fn open(home: &Home, bot_id: u64) -> Self {
        let path = crate::data_dir(home).join(format!("offset-{bot_id}"));
        let next = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok())
            .unwrap_or(0);
        Self { path, next }
    }

    /// The next update id to ask for (0: whatever Telegram has).
    pub(crate) fn next(&self) -> i64 {
        self.next
    }

    /// Whether update `id` was handled already.
    pub(crate) fn is_handled(&self, id: i64) -> bool {
        id < self.next
    }

    /// Records that update `id` is handled.
    pub(crate) fn handled(&mut self, id: i64) -> std::io::Result<()> {
        if id < self.next {
            return Ok(());
        }
        self.next = id + 1;
        if let Some(dir) = self.path.parent() {
            crabtalk_home::create_private_dir(dir)?;
        }
        crabtalk_home::write_atomic_private(&self.path, format!("{}\n", self.next).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_survives_a_restart_and_is_kept_per_bot() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let mut store = OffsetStore::open(&home, 7);
        assert_eq!(store.next(), 0);
        store.handled(100).unwrap();
        store.handled(99).unwrap();
        assert!(store.is_handled(100) && !store.is_handled(101));
        assert_eq!(OffsetStore::open(&home, 7).next(), 101);
        assert_eq!(OffsetStore::open(&home, 8).next(), 0);
    }
}
