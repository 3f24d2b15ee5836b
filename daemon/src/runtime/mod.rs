//! The runtime: agents, conversations and turns.
//!
//! It owns the long-lived state — conversations in memory, the event hub —
//! and a swappable [`Snapshot`] of everything that configuration decides.
//! It opens no sockets; the server calls it.
//!
//! This file starts and stops it; what it does is in one file per job:
//! `turns.rs`, `agents.rs`, `mcp_servers.rs`, `reload.rs`, and
//! `snapshot.rs` for what a snapshot is made of.

mod agents;
mod client_outlet;
mod compaction;
pub(crate) mod conversation;
mod error;
pub(crate) mod event_hub;
pub(crate) mod events;
mod eviction;
pub(crate) mod instructions;
mod mcp_servers;
pub(crate) mod release;
mod reload;
pub(crate) mod request;
pub(crate) mod snapshot;
pub(crate) mod threads;
mod tool_host;
pub(crate) mod turn;
mod turns;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crabtalk_home::Home;
use parking_lot::RwLock;
use tokio_util::task::TaskTracker;

use self::conversation::Conversations;
pub(crate) use self::error::Error;
use self::events::{EventHub, SUBSCRIBER_BUFFER};
pub(crate) use self::snapshot::Snapshot;
use self::snapshot::{load_agents, load_config, mcp_settings, refusal, tool_settings};
pub(crate) use self::turn::{TurnOutcome, TurnRequest};
use crate::bus::EventBus;
use crate::config::Refusal;
use crate::config::agent::AgentStore;
use crate::hook::Chain;
use crate::mcp::McpHub;
use crate::memories::Memories;
use crate::provider::{Environment, ModelRegistry};
use crate::sessions::SessionSearch;
use crate::storage::Storage;
use crate::tools::Tools;

/// The sender used when a client names none.
pub(crate) const DEFAULT_SENDER: &str = "user";

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Config(#[from] Refusal),
    #[error("cannot create the default agent in {dir}: {source}")]
    DefaultAgent {
        dir: PathBuf,
        source: std::io::Error,
    },
}

pub(crate) struct Runtime {
    pub home: Home,
    agent_store: AgentStore,
    snapshot: RwLock<Arc<Snapshot>>,
    pub conversations: Conversations,
    pub hub: Arc<EventHub>,
    environment: Environment,
    next_run: AtomicU64,
    started: Instant,
    turns: TaskTracker,
    /// The serving threads, where turns run (RFC 0049).
    threads: Arc<threads::Threads>,
    closing: AtomicBool,
    bus: EventBus,
    /// Every agent's memory; kept across reloads, each opened once.
    memories: Arc<Memories>,
    /// The session index (fed by the conversations) and its logs; kept
    /// across reloads, rebuilt once at start.
    sessions: SessionSearch,
    /// Every MCP connection.
    pub mcp: Arc<McpHub>,
    /// Marked after every reload, for tasks that follow the configuration.
    reloads: tokio::sync::watch::Sender<()>,
}

impl Runtime {
    /// Loads the configuration and agents of `home` (creating the default
    /// agent if it is missing). Model discovery starts in the background.
    /// Turns run on `threads`.
    pub(crate) fn start(
        home: Home,
        environment: Environment,
        threads: Arc<threads::Threads>,
    ) -> Result<Arc<Self>, StartError> {
        let config = load_config(&home)?;
        let agent_store = AgentStore::new(home.agents_dir());
        agent_store
            .ensure(&config.default_agent)
            .map_err(|source| StartError::DefaultAgent {
                dir: home.agents_dir(),
                source,
            })?;
        let (agents, refused) = load_agents(&agent_store, &config, None);
        for refused in &refused {
            tracing::error!("{}", refusal(refused, None));
        }
        let registry = Arc::new(ModelRegistry::new(&config, &environment));
        tokio::spawn(registry.clone().discover());
        let max_in_memory = config.conversations.max_in_memory;
        let bus = EventBus::load(home.subscriptions_file());
        let mcp = McpHub::new(mcp_settings(&config));
        // Run ids grow across restarts: they start from the clock.
        let first_run = chrono::Utc::now().timestamp_millis().max(1) as u64 * 1000;
        let conversations = Conversations::new(Storage::new(home.sessions_dir()), max_in_memory);
        let sessions = SessionSearch::new(
            conversations.storage().clone(),
            conversations.index().clone(),
        );
        // Before any turn can append: appends from here on survive the swap.
        sessions.start_rebuild();
        let memories = Arc::new(Memories::new(home.memory_dir()));
        let settings = tool_settings(&home, &config, &mcp, &memories, &sessions);
        let snapshot = Snapshot {
            generation: snapshot::next_generation(),
            config: Arc::new(config),
            agents,
            registry,
            tools: Tools::standard(&settings),
            skills: settings.skill_dirs,
        };
        let runtime = Arc::new(Self {
            conversations,
            home,
            agent_store,
            snapshot: RwLock::new(Arc::new(snapshot)),
            hub: Arc::new(EventHub::new(SUBSCRIBER_BUFFER)),
            bus,
            environment,
            next_run: AtomicU64::new(first_run),
            started: Instant::now(),
            turns: TaskTracker::new(),
            threads,
            closing: AtomicBool::new(false),
            memories,
            sessions,
            mcp,
            reloads: tokio::sync::watch::Sender::new(()),
        });
        runtime.reconcile_mcp();
        runtime.check_skills();
        Ok(runtime)
    }

    /// Walks the skill folders once, so that what is wrong with them
    /// (duplicate names, unreadable files) is in the log from the start.
    fn check_skills(&self) {
        self.snapshot().skills.discover();
    }

    /// Connects what the agents declare, and closes what they no longer do.
    fn reconcile_mcp(&self) {
        let snapshot = self.snapshot();
        self.mcp.reconcile(
            &snapshot.agents,
            &snapshot.config.env,
            mcp_settings(&snapshot.config),
        );
    }

    /// A fresh id, unique across restarts (run ids, delegate senders).
    pub(crate) fn next_id(&self) -> u64 {
        self.next_run.fetch_add(1, Ordering::Relaxed)
    }

    /// Publishes an event: every subscription to `source` runs its agent
    /// with `payload`, as sender `event:<source>`. `cause` is the chain of
    /// the turn (or the client) that published it; the fired turns continue
    /// it one hop further. Past the hop limit the chain stops, with a
    /// warning.
    pub(crate) fn publish(self: &Arc<Self>, source: &str, payload: &str, cause: &Chain) {
        let max_hops = self.snapshot().config.events.max_hops;
        let subscribed = self
            .bus
            .list()
            .iter()
            .any(|subscription| subscription.source == source);
        if !subscribed {
            return;
        }
        let hops = cause.hops;
        if hops >= max_hops {
            tracing::warn!(
                "event {source:?} was not delivered: {hops} events already led to it, the limit is \
                 {max_hops} ([events] max_hops); is there a subscription cycle?"
            );
            return;
        }
        for subscription in self.bus.fire(source) {
            let payload = if payload.trim().is_empty() {
                "(no text)"
            } else {
                payload
            };
            let started = self.start_turn(TurnRequest {
                agent: subscription.target_agent.clone(),
                sender: format!("event:{source}"),
                content: payload.to_owned(),
                cwd: None,
                guest: None,
                tool_choice: None,
                created_by: format!("event {source}"),
                client: None,
                chain: Some(cause.fired()),
                trigger: None,
                origin: None,
            });
            if let Err(error) = started {
                tracing::warn!(
                    "subscription {} could not run {}: {}",
                    subscription.id,
                    subscription.target_agent,
                    error
                );
            }
        }
    }

    /// Every agent's memory.
    pub(crate) fn memories(&self) -> &Arc<Memories> {
        &self.memories
    }

    /// Session search over every stored conversation.
    pub(crate) fn sessions(&self) -> &SessionSearch {
        &self.sessions
    }

    /// The event bus's subscription table.
    pub(crate) fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// The snapshot new work runs against.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().clone()
    }

    pub(crate) fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Cancels every running turn and waits (bounded) for them to persist.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.closing.store(true, Ordering::Release);
        self.hub.close();
        self.conversations.kill_all("the daemon is shutting down");
        self.turns.close();
        if tokio::time::timeout(grace, self.turns.wait())
            .await
            .is_err()
        {
            tracing::warn!("some turns did not finish within {grace:?} of shutdown");
        }
        // The turns are over: no call needs a server any more.
        self.mcp.shutdown().await;
        for conversation in self.conversations.all() {
            conversation.flush_meta();
        }
    }
}
