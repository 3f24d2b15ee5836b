//! [`Problems`]: what is wrong with a component right now — the one place
//! its parts record a problem when they meet it and clear it when it is
//! gone, and what its `GET /health` lists (`crabup ps` shows the service
//! degraded with them).
//!
//! A part that meets and gets over a problem at moments it knows (a token
//! refused, then accepted) records it under its own area with
//! [`Problems::set`] and [`Problems::clear`]. A problem that is a view of
//! state the component keeps anyway (an engine suspended until a time
//! passes, a file the scheduler keeps its last good schedule through) is
//! read from that state whenever the list is asked for: [`Problems::watch`].
//!
//! ```
//! let problems = crabtalk_kit::Problems::default();
//! problems.set("token", "Telegram refused the bot token");
//! problems.watch(|| vec!["bing suspended".to_owned()]);
//! assert_eq!(problems.list(), ["Telegram refused the bot token", "bing suspended"]);
//! problems.clear("token");
//! assert_eq!(problems.list(), ["bing suspended"]);
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Reads problems from state the component keeps.
type Source = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// The problems of one component, shared by its parts: clones are the same
/// registry. The component kit gives every [`Component`](crate::Component)
/// one ([`Component::problems`](crate::Component::problems)), and its
/// `GET /health` lists it.
#[derive(Clone, Default)]
pub struct Problems {
    inner: Arc<Mutex<Registry>>,
}

#[derive(Default)]
struct Registry {
    /// What is wrong now, by area.
    recorded: BTreeMap<&'static str, String>,
    /// Asked at every [`Problems::list`], in the order they were added.
    sources: Vec<Source>,
}

impl Problems {
    /// Records `problem` in `area`, replacing what was there.
    pub fn set(&self, area: &'static str, problem: impl Into<String>) {
        self.registry().recorded.insert(area, problem.into());
    }

    /// `area` is well again.
    pub fn clear(&self, area: &'static str) {
        self.registry().recorded.remove(area);
    }

    /// Adds `source`, asked at every [`Problems::list`] for problems read
    /// from state the component keeps anyway.
    pub fn watch(&self, source: impl Fn() -> Vec<String> + Send + Sync + 'static) {
        self.registry().sources.push(Arc::new(source));
    }

    /// Every problem now: those recorded, by area, then those of the
    /// sources, in the order they were added. Empty when all is well.
    pub fn list(&self) -> Vec<String> {
        let (mut listed, sources) = {
            let registry = self.registry();
            let recorded: Vec<String> = registry.recorded.values().cloned().collect();
            (recorded, registry.sources.clone())
        };
        // Sources are asked without the lock: one may take locks of its own.
        for source in sources {
            listed.extend(source());
        }
        listed
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        // The registry is whole after any panic: each change is one insert
        // or remove.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Problems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let registry = self.registry();
        f.debug_struct("Problems")
            .field("recorded", &registry.recorded)
            .field("sources", &registry.sources.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_problems_are_listed_by_area_until_cleared() {
        let problems = Problems::default();
        assert!(problems.list().is_empty());
        problems.set("poll", "getUpdates failed");
        problems.set("delivery", "a reply could not be delivered");
        problems.set("poll", "getUpdates failed again");
        assert_eq!(
            problems.list(),
            ["a reply could not be delivered", "getUpdates failed again"]
        );
        problems.clear("delivery");
        problems.clear("never set");
        assert_eq!(problems.list(), ["getUpdates failed again"]);
    }

    #[test]
    fn clones_share_the_registry_and_sources_are_asked_at_every_list() {
        let problems = Problems::default();
        let suspended = Arc::new(Mutex::new(vec!["bing suspended".to_owned()]));
        {
            let suspended = suspended.clone();
            problems.watch(move || suspended.lock().unwrap().clone());
        }
        let part = problems.clone();
        part.set("token", "refused");
        assert_eq!(problems.list(), ["refused", "bing suspended"]);
        suspended.lock().unwrap().clear();
        part.clear("token");
        assert!(problems.list().is_empty());
    }

    #[test]
    fn a_source_may_read_the_registry_it_is_in() {
        let problems = Problems::default();
        let inner = problems.clone();
        problems.watch(move || vec![format!("{:?}", inner.inner.lock().is_ok())]);
        assert_eq!(problems.list(), ["true"]);
    }
}
