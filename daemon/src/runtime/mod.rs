//! The runtime: agents, conversations and turns.
//!
//! It owns the long-lived state — conversations in memory, the event hub —
//! and a swappable [`Snapshot`] of everything that configuration decides.
//! It opens no sockets; the server calls it.

mod client_outlet;
mod compaction;
pub mod conversation;
mod error;
pub mod event_hub;
pub mod events;
mod eviction;
pub mod instructions;
pub mod release;
pub mod request;
pub mod snapshot;
mod tool_host;
pub mod turn;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crabtalk_home::Home;
use parking_lot::RwLock;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

use self::conversation::{ConversationKey, Conversations};
pub use self::error::Error;
use self::events::{EventHub, SUBSCRIBER_BUFFER};
pub use self::snapshot::Snapshot;
use self::turn::TurnPlan;
pub use self::turn::{TurnOutcome, TurnRequest};
use crate::bus::EventBus;
use crate::config::agent::McpServerConfig;
use crate::config::agent::{AgentConfig, AgentDef, AgentStore, RefusedAgent, validate_agent_name};
use crate::config::{DaemonConfig, Refusal};
use crate::hook::Chain;
use crate::mcp::{McpHub, McpSettings};
use crate::memories::Memories;
use crate::provider::{Environment, ModelRegistry};
use crate::sessions::SessionSearch;
use crate::storage::Storage;
use crate::tools::{ToolSettings, Tools};

/// The sender used when a client names none.
pub const DEFAULT_SENDER: &str = "user";

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] Refusal),
    #[error("cannot create the default agent in {dir}: {source}")]
    DefaultAgent {
        dir: PathBuf,
        source: std::io::Error,
    },
}

pub struct Runtime {
    pub home: Home,
    agent_store: AgentStore,
    snapshot: RwLock<Arc<Snapshot>>,
    pub conversations: Conversations,
    pub hub: Arc<EventHub>,
    environment: Environment,
    next_run: AtomicU64,
    started: Instant,
    turns: TaskTracker,
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
    pub fn start(home: Home, environment: Environment) -> Result<Arc<Self>, StartError> {
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
    pub fn next_id(&self) -> u64 {
        self.next_run.fetch_add(1, Ordering::Relaxed)
    }

    /// Publishes an event: every subscription to `source` runs its agent
    /// with `payload`, as sender `event:<source>`. `cause` is the chain of
    /// the turn (or the client) that published it; the fired turns continue
    /// it one hop further. Past the hop limit the chain stops, with a
    /// warning.
    pub fn publish(self: &Arc<Self>, source: &str, payload: &str, cause: &Chain) {
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
    pub fn memories(&self) -> &Arc<Memories> {
        &self.memories
    }

    /// Session search over every stored conversation.
    pub fn sessions(&self) -> &SessionSearch {
        &self.sessions
    }

    /// The event bus's subscription table.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// The snapshot new work runs against.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().clone()
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Starts a turn; its events go to `request.client`, its outcome to the
    /// returned handle. The turn runs to its end even if nobody listens.
    pub fn start_turn(
        self: &Arc<Self>,
        mut request: TurnRequest,
    ) -> Result<JoinHandle<TurnOutcome>, Error> {
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::unavailable("the daemon is shutting down"));
        }
        let snapshot = self.snapshot();
        if request.agent.is_empty() {
            request.agent = snapshot.config.default_agent.clone();
        }
        if request.sender.is_empty() {
            request.sender = DEFAULT_SENDER.into();
        }
        if request.created_by.is_empty() {
            request.created_by = request.sender.clone();
        }
        if request.content.trim().is_empty() {
            return Err(Error::invalid("the message is empty"));
        }
        let primary = snapshot.agent(&request.agent).map_err(Error::not_found)?;
        let guest = match request.guest.as_deref().filter(|guest| !guest.is_empty()) {
            Some(name) => Some(snapshot.agent(name).map_err(Error::not_found)?),
            None => None,
        };
        let cwd = match request.cwd.take() {
            Some(cwd) => validate_cwd(&cwd)?,
            None => default_cwd(&self.home),
        };
        let chain = request.chain.take().unwrap_or_else(|| {
            let origin = request
                .origin
                .as_deref()
                .filter(|origin| !origin.trim().is_empty())
                .unwrap_or(&request.sender);
            Chain::begun_by(origin).triggered_by(request.trigger.as_deref())
        });
        let run_id = self.next_run.fetch_add(1, Ordering::Relaxed);
        let key = ConversationKey {
            agent: primary.name.clone(),
            sender: request.sender.clone(),
        };
        let conversation = self.conversations.get_or_create(&key);
        let ticket = conversation.take_ticket();
        let plan = TurnPlan {
            request,
            conversation,
            ticket,
            snapshot,
            primary,
            guest,
            cwd,
            run_id,
            chain: chain.clone(),
        };
        let runtime = self.clone();
        Ok(self.turns.spawn(async move {
            let busy = release::busy();
            let outcome = turn::run(runtime.clone(), plan).await;
            // The turn has let go of its conversation: now it can be evicted.
            runtime.conversations.trim();
            let payload = match &outcome.error {
                None => outcome.final_text.clone(),
                Some(failure) => format!("[the turn failed: {}]\n{}", failure, outcome.final_text),
            };
            runtime.publish(&format!("agent:{}:done", outcome.agent), &payload, &chain);
            // The turn's memory is free now; once all is quiet, give it back.
            drop(busy);
            release::soon();
            outcome
        }))
    }

    /// Cancels the turn running on `(agent, sender)`, if any.
    pub fn kill(&self, agent: &str, sender: &str) -> bool {
        let key = self.key(agent, sender);
        self.conversations
            .get(&key)
            .is_some_and(|conversation| conversation.kill("cancelled by the user"))
    }

    /// Injects a user message into the running turn of `(agent, sender)`.
    pub fn steer(&self, agent: &str, sender: &str, content: &str) -> Result<(), Error> {
        let key = self.key(agent, sender);
        let steered = self
            .conversations
            .get(&key)
            .is_some_and(|conversation| conversation.steer(content));
        if steered {
            Ok(())
        } else {
            Err(Error::conflict(format!(
                "no turn is running on {}/{}; send the message as a new turn instead",
                key.agent, key.sender
            )))
        }
    }

    /// Answers a question waiting on `(agent, sender)`.
    pub fn answer(
        &self,
        agent: &str,
        sender: &str,
        call_id: &str,
        content: &str,
    ) -> Result<(), Error> {
        let key = self.key(agent, sender);
        let conversation = self.conversations.get(&key).ok_or_else(|| {
            Error::not_found(format!(
                "no question is waiting on {}/{}",
                key.agent, key.sender
            ))
        })?;
        conversation
            .answer(Some(call_id), content)
            .map_err(|err| Error::not_found(format!("{}/{}: {err}", key.agent, key.sender)))
    }

    /// `(agent, sender)` with the defaults filled in.
    pub fn key(&self, agent: &str, sender: &str) -> ConversationKey {
        let agent = if agent.is_empty() {
            self.snapshot().config.default_agent.clone()
        } else {
            agent.to_owned()
        };
        let sender = if sender.is_empty() {
            DEFAULT_SENDER.to_owned()
        } else {
            sender.to_owned()
        };
        ConversationKey { agent, sender }
    }

    /// Re-reads `config.toml` and the agents and swaps them in. In-flight
    /// turns finish on what they started with; conversations, their
    /// histories and the event hub carry over.
    ///
    /// A file with a problem is refused and what it defined stays: a broken
    /// `config.toml` keeps the running configuration, a broken agent file
    /// keeps that agent's previous definition. Everything else is applied.
    /// `Ok` carries notes worth showing (warnings); `Err` lists every
    /// refused file's problems, with file, line and column.
    pub fn reload(&self) -> Result<Vec<String>, Error> {
        let previous = self.snapshot();
        let mut refusals = Vec::new();
        let loaded = match DaemonConfig::load(&self.home.config_file()) {
            Ok(config) => Some(config),
            Err(err) => {
                refusals.push(format!(
                    "{err}\n  config.toml was not applied: the running configuration stays"
                ));
                None
            }
        };
        let config = loaded
            .clone()
            .unwrap_or_else(|| DaemonConfig::clone(&previous.config));
        let mut notes = Vec::new();
        self.agent_store
            .ensure(&config.default_agent)
            .map_err(|err| Error::internal(err.to_string()))?;
        let (agents, refused) = load_agents(&self.agent_store, &config, Some(&previous.agents));
        for refused in &refused {
            refusals.push(refusal(refused, Some(&previous.agents)));
        }
        let snapshot = match loaded {
            Some(config) => {
                let registry = Arc::new(ModelRegistry::new(&config, &self.environment));
                if config.default_model.is_none()
                    && let Some(active) = previous.registry.active_model()
                    && registry.set_active(&active).is_err()
                {
                    notes.push(format!("the active model {active} is no longer configured"));
                }
                notes.extend(registry.problems());
                tokio::spawn(registry.clone().discover());
                let settings = tool_settings(
                    &self.home,
                    &config,
                    &self.mcp,
                    &self.memories,
                    &self.sessions,
                );
                let tools = Tools::standard(&settings);
                Snapshot {
                    config: Arc::new(config),
                    agents,
                    registry,
                    tools,
                    skills: settings.skill_dirs,
                }
            }
            None => previous.with_agents(agents),
        };
        *self.snapshot.write() = Arc::new(snapshot);
        self.reconcile_mcp();
        self.reloads.send_replace(());
        self.check_skills();
        for note in &notes {
            tracing::warn!("{note}");
        }
        if refusals.is_empty() {
            return Ok(notes);
        }
        for refusal in &refusals {
            tracing::error!("reload: {refusal}");
        }
        let files = refusals.len();
        let mut message = format!(
            "the reload refused {files} file{}; everything else was applied:\n{}",
            if files == 1 { "" } else { "s" },
            refusals.join("\n")
        );
        for note in &notes {
            message.push_str(&format!("\nnote: {note}"));
        }
        Err(Error::invalid(message))
    }

    /// Creates an agent from a JSON config (empty for the defaults).
    pub fn create_agent(
        &self,
        name: &str,
        config_json: &str,
        prompt: &str,
    ) -> Result<Arc<AgentDef>, Error> {
        validate_agent_name(name).map_err(|err| Error::invalid(err.to_string()))?;
        let snapshot = self.snapshot();
        if let Some(existing) = snapshot
            .agents
            .keys()
            .find(|existing| existing.eq_ignore_ascii_case(name))
        {
            return Err(Error::conflict(format!(
                "an agent named {existing:?} already exists"
            )));
        }
        let config = parse_agent_config(config_json)?.unwrap_or_default();
        config
            .check_mcps()
            .map_err(|err| Error::invalid(err.to_string()))?;
        let agent = AgentDef {
            name: name.to_owned(),
            config,
            prompt: prompt.to_owned(),
        };
        self.agent_store
            .save(&agent)
            .map_err(|err| Error::internal(format!("cannot save agent {name:?}: {err}")))?;
        Ok(self.refresh_agents(&snapshot, name))
    }

    /// Replaces an agent's config and/or prompt (an empty one is kept).
    pub fn update_agent(
        &self,
        name: &str,
        config_json: &str,
        prompt: &str,
    ) -> Result<Arc<AgentDef>, Error> {
        let snapshot = self.snapshot();
        let current = snapshot.agent(name).map_err(Error::not_found)?;
        let mut agent = AgentDef::clone(&current);
        if let Some(config) = parse_agent_config(config_json)? {
            config
                .check_mcps()
                .map_err(|err| Error::invalid(err.to_string()))?;
            agent.config = config;
        }
        if !prompt.is_empty() {
            agent.prompt = prompt.to_owned();
        }
        self.agent_store
            .save(&agent)
            .map_err(|err| Error::internal(format!("cannot save agent {name:?}: {err}")))?;
        Ok(self.refresh_agents(&snapshot, name))
    }

    /// Deletes an agent's definition (its stored conversations stay on disk).
    pub async fn delete_agent(&self, name: &str) -> Result<(), Error> {
        let snapshot = self.snapshot();
        snapshot.agent(name).map_err(Error::not_found)?;
        self.refuse_builtin(name)?;
        if name == snapshot.config.default_agent {
            return Err(Error::conflict(format!(
                "{name:?} is the default agent; set another default_agent in config.toml first"
            )));
        }
        self.release_conversations(name).await?;
        self.agent_store
            .delete(name)
            .map_err(|err| Error::internal(format!("cannot delete agent {name:?}: {err}")))?;
        self.refresh_agents(&snapshot, name);
        Ok(())
    }

    /// Renames an agent and moves its conversations.
    pub async fn rename_agent(&self, old: &str, new: &str) -> Result<Arc<AgentDef>, Error> {
        validate_agent_name(new).map_err(|err| Error::invalid(err.to_string()))?;
        let snapshot = self.snapshot();
        snapshot.agent(old).map_err(Error::not_found)?;
        self.refuse_builtin(old)?;
        if snapshot
            .agents
            .keys()
            .any(|existing| existing != old && existing.eq_ignore_ascii_case(new))
        {
            return Err(Error::conflict(format!(
                "an agent named {new:?} already exists"
            )));
        }
        if old == snapshot.config.default_agent {
            return Err(Error::conflict(format!(
                "{old:?} is the default agent; change default_agent in config.toml before renaming it"
            )));
        }
        // Everything that could stop the move half-way is checked before
        // anything moves: what an earlier agent of the new name left.
        let left_over = [
            self.agent_store
                .exists(new)
                .then(|| self.agent_store.dir().join(format!("{new}.toml"))),
            self.conversations.storage().agent_folder(new),
            self.memories.exists(new).then(|| self.memories.file(new)),
        ];
        if let Some(path) = left_over.into_iter().flatten().next() {
            return Err(Error::conflict(format!(
                "{} already exists (left by an earlier agent {new:?}); move it aside first, \
                 or choose another name",
                path.display()
            )));
        }
        self.release_conversations(old).await?;
        self.move_agent_files(old, new)?;
        let sessions = self.sessions.clone();
        let (from, to) = (old.to_owned(), new.to_owned());
        tokio::task::spawn_blocking(move || {
            if let Err(err) = sessions.move_agent(&from, &to) {
                tracing::warn!("session index: cannot move {from}'s conversations to {to}: {err}");
            }
        });
        self.refresh_agents(&snapshot, old);
        self.snapshot().agent(new).map_err(Error::internal)
    }

    /// Moves an agent's definition, conversations and memory to `new`; if a
    /// step fails, the steps before it are undone, so the agent is whole
    /// under one name or the other.
    fn move_agent_files(&self, old: &str, new: &str) -> Result<(), Error> {
        let failed = |what: &str, err: std::io::Error, undone: bool| {
            let after = if undone {
                "nothing was changed"
            } else {
                "it could not all be moved back (see the log)"
            };
            Error::internal(format!(
                "cannot rename agent {old:?} to {new:?}: {what}: {err}; {after}"
            ))
        };
        let storage = self.conversations.storage();
        self.agent_store
            .rename(old, new)
            .map_err(|err| failed("moving its definition", err, true))?;
        if let Err(err) = storage.rename_agent(old, new) {
            let undone = undo_rename(old, new, "definition", self.agent_store.rename(new, old));
            return Err(failed("moving its conversations", err, undone));
        }
        if let Err(err) = self.memories.rename(old, new) {
            let undone = undo_rename(old, new, "conversations", storage.rename_agent(new, old))
                & undo_rename(old, new, "definition", self.agent_store.rename(new, old));
            return Err(failed("moving its memory", err, undone));
        }
        Ok(())
    }

    /// Adds (or replaces, by name) an MCP server in `agent`'s config, from
    /// `McpServerConfig` JSON; returns the server's name.
    pub fn upsert_mcp(&self, agent: &str, config_json: &str) -> Result<String, Error> {
        let config: McpServerConfig = serde_json::from_str(config_json)
            .map_err(|err| Error::invalid(format!("not McpServerConfig JSON: {err}")))?;
        crate::config::agent::validate_server_name(&config.name)
            .map_err(|err| Error::invalid(err.to_string()))?;
        if config.command.is_none() == config.url.is_none() {
            return Err(Error::invalid(
                "give the MCP server either a command or a url",
            ));
        }
        let key = self.key(agent, "");
        let snapshot = self.snapshot();
        let mut def = AgentDef::clone(&*snapshot.agent(&key.agent).map_err(Error::not_found)?);
        match def
            .config
            .mcps
            .iter_mut()
            .find(|existing| existing.name == config.name)
        {
            Some(existing) => *existing = config.clone(),
            None => def.config.mcps.push(config.clone()),
        }
        def.config
            .check_mcps()
            .map_err(|err| Error::invalid(err.to_string()))?;
        self.agent_store
            .save(&def)
            .map_err(|err| Error::internal(format!("cannot save agent {:?}: {err}", def.name)))?;
        self.refresh_agents(&snapshot, &def.name);
        Ok(config.name)
    }

    /// Removes the MCP server `name` from `agent`'s config.
    pub fn delete_mcp(&self, agent: &str, name: &str) -> Result<(), Error> {
        let key = self.key(agent, "");
        let snapshot = self.snapshot();
        let mut def = AgentDef::clone(&*snapshot.agent(&key.agent).map_err(Error::not_found)?);
        let before = def.config.mcps.len();
        def.config.mcps.retain(|mcp| mcp.name != name);
        if def.config.mcps.len() == before {
            return Err(Error::not_found(format!(
                "agent {:?} declares no MCP server named {name:?}",
                def.name
            )));
        }
        self.agent_store
            .save(&def)
            .map_err(|err| Error::internal(format!("cannot save agent {:?}: {err}", def.name)))?;
        self.refresh_agents(&snapshot, &def.name);
        Ok(())
    }

    /// Refuses to delete or rename the built-in worker (it has no file).
    fn refuse_builtin(&self, name: &str) -> Result<(), Error> {
        if name == WORKER && !self.agent_store.exists(name) {
            return Err(Error::conflict(
                "worker is built in and cannot be deleted or renamed; an agents/worker.toml replaces it",
            ));
        }
        Ok(())
    }

    /// Takes `agent`'s conversations out of memory and waits until nothing
    /// holds them; refuses if one is busy.
    async fn release_conversations(&self, agent: &str) -> Result<(), Error> {
        match self.conversations.take_where(|key| key.agent == agent) {
            Ok(taken) => {
                futures::future::join_all(
                    taken.into_iter().map(|conversation| conversation.settled()),
                )
                .await;
                Ok(())
            }
            Err(busy) => {
                let senders: Vec<&str> = busy.iter().map(|key| key.sender.as_str()).collect();
                Err(Error::conflict(format!(
                    "agent {agent:?} is busy (conversations with {}); kill or finish them first",
                    senders.join(", ")
                )))
            }
        }
    }

    /// Takes one stored conversation out of memory (if it is there and not
    /// busy) and waits until nothing holds it.
    pub async fn release_conversation(
        &self,
        files: &crate::storage::ConversationFiles,
    ) -> Result<(), Error> {
        let storage = self.conversations.storage().clone();
        match self
            .conversations
            .take_where(|key| storage.files(&key.agent, &key.sender) == *files)
        {
            Ok(taken) => {
                futures::future::join_all(
                    taken.into_iter().map(|conversation| conversation.settled()),
                )
                .await;
                Ok(())
            }
            Err(_) => Err(Error::conflict(
                "the conversation is busy (a turn or a question is pending); kill it first",
            )),
        }
    }

    /// Re-reads the agents into a new snapshot; returns `name` if it exists.
    fn refresh_agents(&self, snapshot: &Snapshot, name: &str) -> Arc<AgentDef> {
        let (agents, refused) =
            load_agents(&self.agent_store, &snapshot.config, Some(&snapshot.agents));
        for refused in &refused {
            tracing::error!("{}", refusal(refused, Some(&snapshot.agents)));
        }
        let agent = agents.get(name).cloned();
        *self.snapshot.write() = Arc::new(snapshot.with_agents(agents));
        self.reconcile_mcp();
        agent.unwrap_or_else(|| {
            Arc::new(AgentDef {
                name: name.to_owned(),
                config: AgentConfig::default(),
                prompt: String::new(),
            })
        })
    }

    /// Cancels every running turn and waits (bounded) for them to persist.
    pub async fn shutdown(&self, grace: Duration) {
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

/// Logs a step of a failed rename that could not be undone; whether it was.
fn undo_rename(old: &str, new: &str, what: &str, undone: std::io::Result<()>) -> bool {
    match undone {
        Ok(()) => true,
        Err(err) => {
            tracing::error!(
                "renaming agent {old:?} to {new:?} failed, and its {what} could not be moved \
                 back: {err}; move the files under {new:?} back to {old:?} by hand"
            );
            false
        }
    }
}

fn load_config(home: &Home) -> Result<DaemonConfig, Refusal> {
    DaemonConfig::load(&home.config_file())
}

/// The name of the built-in agent that is always there to delegate to.
pub const WORKER: &str = "worker";

/// The built-in worker's prompt.
const WORKER_PROMPT: &str = "\
You are a worker agent: another agent handed you a task. Do exactly that task with the tools you \
have, then reply with the result itself — what you found or what you changed — concisely and \
completely, because your reply is all the other agent sees. If the task cannot be done, say why.
";

/// The agents of `store`. A refused file keeps the agent it defined in
/// `previous` (a reload never loses an agent, or its restrictions, to a
/// typo); with no previous definition the agent is not loaded.
fn load_agents(
    store: &AgentStore,
    config: &DaemonConfig,
    previous: Option<&BTreeMap<String, Arc<AgentDef>>>,
) -> (BTreeMap<String, Arc<AgentDef>>, Vec<RefusedAgent>) {
    let loaded = store.load_all(config.served_models().as_ref());
    let mut agents: BTreeMap<String, Arc<AgentDef>> = loaded
        .agents
        .into_iter()
        .map(|agent| (agent.name.clone(), Arc::new(agent)))
        .collect();
    for refused in &loaded.refused {
        if let Some(kept) = previous.and_then(|previous| previous.get(&refused.name)) {
            agents.insert(refused.name.clone(), kept.clone());
        }
    }
    // The worker is always there; an agents/worker.toml replaces it.
    if !agents.contains_key(WORKER) {
        let thinking = agents
            .get(&config.default_agent)
            .is_some_and(|agent| agent.config.thinking);
        let worker = AgentDef {
            name: WORKER.into(),
            config: AgentConfig {
                description: "A built-in agent for self-contained tasks handed over with delegate."
                    .into(),
                thinking,
                ..AgentConfig::default()
            },
            prompt: WORKER_PROMPT.into(),
        };
        agents.insert(WORKER.into(), Arc::new(worker));
    }
    (agents, loaded.refused)
}

/// A refused agent file for people: its problems, then what happened to
/// the agent.
fn refusal(refused: &RefusedAgent, previous: Option<&BTreeMap<String, Arc<AgentDef>>>) -> String {
    let name = &refused.name;
    let outcome = if previous.is_some_and(|previous| previous.contains_key(name)) {
        format!("agent {name} keeps its previous definition")
    } else {
        format!("agent {name} is not loaded")
    };
    format!("{}\n  {outcome}", refused.error)
}

fn tool_settings(
    home: &Home,
    config: &DaemonConfig,
    mcp: &Arc<McpHub>,
    memories: &Arc<Memories>,
    sessions: &SessionSearch,
) -> ToolSettings {
    let mut skill_dirs = vec![home.skills_dir()];
    skill_dirs.extend(config.skill_dirs.iter().cloned());
    ToolSettings {
        home: home.clone(),
        gateway: crate::tools::gateway::GatewayPolicy::new(&config.gateway),
        skill_dirs: crate::skills::SkillDirs::new(skill_dirs),
        mcp: mcp.clone(),
        memories: memories.clone(),
        sessions: sessions.clone(),
        max_delegation_depth: config.delegation.max_depth,
        max_delegated_tasks: config.delegation.max_tasks,
    }
}

fn mcp_settings(config: &DaemonConfig) -> McpSettings {
    McpSettings::from(&config.mcp)
}

fn parse_agent_config(json: &str) -> Result<Option<AgentConfig>, Error> {
    if json.trim().is_empty() {
        return Ok(None);
    }
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let (config, unknown): (AgentConfig, _) =
        crabtalk_kit::config::deserialize_noting_unknown(&mut deserializer)
            .and_then(|parsed| deserializer.end().map(|()| parsed))
            .map_err(|err| {
                Error::invalid(format!(
                    "the agent config is not valid AgentConfig JSON: {err}"
                ))
            })?;
    // As in the agent files: an unknown key is refused, never ignored.
    let unknown: Vec<String> = unknown
        .iter()
        .map(|key| format!("`{}`: {}", key.path, key.message()))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::invalid(format!(
            "the agent config has keys this daemon does not know: {}",
            unknown.join("; ")
        )));
    }
    Ok(Some(config))
}

fn validate_cwd(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid(format!(
            "cwd {} must be an absolute path",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(Error::invalid(format!(
            "cwd {} is not a directory",
            cwd.display()
        )));
    }
    Ok(cwd.to_owned())
}

/// A conversation's working directory when the client sends none: the
/// user's home directory, else the crabtalk home.
fn default_cwd(home: &Home) -> PathBuf {
    dirs::home_dir()
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| home.root().to_owned())
}
