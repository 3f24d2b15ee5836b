//! The event bus (RFC 0004): a table of subscriptions, not a router.
//!
//! A subscription says "when `source` is published, run `target_agent` with
//! the payload". Sources are plain strings matched exactly: the daemon
//! publishes `agent:<name>:done` (with the final text) when any turn of an
//! agent ends; clients publish anything else with `PublishEventMsg`. A fired
//! agent runs with the sender `event:<source>`, so each source gets one
//! continuous conversation per target. `once` subscriptions are removed when
//! they fire.
//!
//! The table lives in `events/subscriptions.toml`, rewritten atomically on
//! every change and read at start. The bus itself starts no turns: it hands
//! the matches to the runtime, which also enforces the hop limit that stops
//! cycles (A done → B, B done → A).

use std::path::PathBuf;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// One subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Subscription {
    pub id: u64,
    pub source: String,
    pub target_agent: String,
    #[serde(default)]
    pub once: bool,
}

/// `events/subscriptions.toml`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Table {
    #[serde(default)]
    next_id: u64,
    #[serde(default, rename = "subscription")]
    subscriptions: Vec<Subscription>,
}

/// The subscription table.
pub(crate) struct EventBus {
    path: PathBuf,
    table: Mutex<Table>,
}

/// Why the table could not be changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BusError {
    #[error("cannot save {path}: {source}")]
    Save {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl EventBus {
    /// Reads the table at `path`. A missing file is an empty table; an
    /// unreadable one is moved aside (so nothing is lost), reported, and
    /// the bus starts empty.
    pub(crate) fn load(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let table = match std::fs::read_to_string(&path) {
            Ok(text) => match toml::from_str::<Table>(&text) {
                Ok(table) => table,
                Err(err) => {
                    let aside = path.with_extension(format!(
                        "toml.unreadable-{}",
                        chrono::Utc::now().timestamp()
                    ));
                    let moved = std::fs::rename(&path, &aside);
                    tracing::error!(
                        "{} is not a valid subscription table ({}); {} and starting with no subscriptions",
                        path.display(),
                        err.message().trim(),
                        match moved {
                            Ok(()) => format!("moved it to {}", aside.display()),
                            Err(err) => format!("could not move it aside ({err})"),
                        }
                    );
                    Table::default()
                }
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Table::default(),
            Err(err) => {
                tracing::error!(
                    "cannot read {}: {err}; starting with no subscriptions",
                    path.display()
                );
                Table::default()
            }
        };
        let mut table = table;
        let highest = table.subscriptions.iter().map(|s| s.id).max().unwrap_or(0);
        table.next_id = table.next_id.max(highest + 1).max(1);
        Self {
            path,
            table: Mutex::new(table),
        }
    }

    /// Adds a subscription.
    pub(crate) fn subscribe(
        &self,
        source: &str,
        target_agent: &str,
        once: bool,
    ) -> Result<Subscription, BusError> {
        let mut table = self.table.lock();
        let subscription = Subscription {
            id: table.next_id,
            source: source.to_owned(),
            target_agent: target_agent.to_owned(),
            once,
        };
        table.next_id += 1;
        table.subscriptions.push(subscription.clone());
        if let Err(err) = self.save(&table) {
            table.subscriptions.pop();
            return Err(err);
        }
        Ok(subscription)
    }

    /// Removes a subscription; `false` if there is none with that id.
    pub(crate) fn unsubscribe(&self, id: u64) -> Result<bool, BusError> {
        let mut table = self.table.lock();
        let Some(position) = table.subscriptions.iter().position(|s| s.id == id) else {
            return Ok(false);
        };
        let removed = table.subscriptions.remove(position);
        if let Err(err) = self.save(&table) {
            table.subscriptions.insert(position, removed);
            return Err(err);
        }
        Ok(true)
    }

    /// Every subscription, by id.
    pub(crate) fn list(&self) -> Vec<Subscription> {
        self.table.lock().subscriptions.clone()
    }

    /// The subscriptions that `source` fires; `once` ones are removed.
    pub(crate) fn fire(&self, source: &str) -> Vec<Subscription> {
        let mut table = self.table.lock();
        let matches: Vec<Subscription> = table
            .subscriptions
            .iter()
            .filter(|s| s.source == source)
            .cloned()
            .collect();
        if matches.iter().any(|s| s.once) {
            table
                .subscriptions
                .retain(|s| !(s.source == source && s.once));
            if let Err(err) = self.save(&table) {
                tracing::warn!(
                    "{err}; once-subscriptions of {source} may fire again after a restart"
                );
            }
        }
        matches
    }

    fn save(&self, table: &Table) -> Result<(), BusError> {
        let text = toml::to_string_pretty(table).map_err(|err| BusError::Save {
            path: self.path.clone(),
            source: std::io::Error::other(err),
        })?;
        crabtalk_home::write_atomic_private(&self.path, text.as_bytes()).map_err(|source| {
            BusError::Save {
                path: self.path.clone(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_persist_and_once_ones_fire_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events/subscriptions.toml");
        let bus = EventBus::load(&path);
        let a = bus.subscribe("agent:scout:done", "crab", false).unwrap();
        let b = bus.subscribe("agent:scout:done", "owl", true).unwrap();
        bus.subscribe("rss:fetch", "scout", false).unwrap();
        assert_eq!((a.id, b.id), (1, 2));

        let reloaded = EventBus::load(&path);
        assert_eq!(reloaded.list().len(), 3);
        let fired: Vec<String> = reloaded
            .fire("agent:scout:done")
            .into_iter()
            .map(|s| s.target_agent)
            .collect();
        assert_eq!(fired, ["crab", "owl"]);
        let fired: Vec<String> = reloaded
            .fire("agent:scout:done")
            .into_iter()
            .map(|s| s.target_agent)
            .collect();
        assert_eq!(fired, ["crab"], "the once subscription is gone");
        assert!(reloaded.fire("agent:nobody:done").is_empty());

        assert!(reloaded.unsubscribe(1).unwrap());
        assert!(!reloaded.unsubscribe(1).unwrap());
        let again = EventBus::load(&path);
        let sources: Vec<String> = again.list().into_iter().map(|s| s.source).collect();
        assert_eq!(sources, ["rss:fetch"]);
        assert_eq!(
            again.subscribe("x", "y", false).unwrap().id,
            4,
            "ids are never reused"
        );
    }

    #[test]
    fn an_unreadable_table_is_moved_aside_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subscriptions.toml");
        std::fs::write(&path, "[[subscription]]\nid = \"one\"\n").unwrap();
        let bus = EventBus::load(&path);
        assert!(bus.list().is_empty());
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.contains("unreadable"))
            .collect();
        assert_eq!(aside.len(), 1);
    }
}
