//! MCP servers: those agents declare and the components that
//! announce themselves in `run/<name>.port`. See RFC 0005.
//!
//! Agents own their servers by value. Identical declarations — same name,
//! command, arguments, environment, URL and token — are one connection,
//! however many agents declare them; a connection nobody declares any more
//! is closed (its process group ended). [`McpHub::reconcile`] makes the
//! connections match the agents after every change to them.
//!
//! Components are found by watching `run/` ([`discovery`]): every live port
//! file other than the daemon's own is a server at
//! `http://127.0.0.1:<port>/mcp`, offered to every agent.
//!
//! A component that goes away is remembered: a call of one of its tools
//! (a model repeating what it called before) is answered with the fact —
//! `crabtalk-<name>` is not running, and `crabup <name> start` starts it —
//! instead of "there is no tool" ([`McpHub::unavailable`]).
//!
//! Tools are named `server__tool` ([`names`]). An agent's own servers come
//! first: a component with the same name as one of them is hidden from that
//! agent, with a warning in the log. A turn that a component started
//! (its chain's trigger) is not offered that component's tools. Each call
//! has a timeout and carries who made it ([`caller`]); servers are
//! independent: a slow or dead one never holds up another.
//!
//! At shutdown, discovery is stopped first (by the caller); then every
//! connection is closed and every stdio server's process group ended,
//! waiting a bounded time ([`McpHub::shutdown`]).

mod backoff;
pub(crate) mod caller;
mod client;
pub(crate) mod discovery;
mod exits;
mod failure;
pub(crate) mod names;
pub(crate) mod oversize;
mod peer;
mod stderr;
mod stdio;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crabtalk_proto::msg::{McpEventMsg, McpInfo, SourceKind};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use tokio::sync::broadcast;

pub(crate) use self::backoff::RestartPolicy;
use self::caller::Caller;
pub(crate) use self::peer::{CallError, RemoteTool, Status};
use self::peer::{Peer, PeerSettings};
use crate::config::REDACTED;
use crate::config::agent::{AgentDef, McpServerConfig};
use crate::hook::{ToolOutput, ToolSpec};

/// How long shutdown waits for connections to close and processes to end
/// before it stops waiting (they are killed either way).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Where a server comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Declared by agents, by value.
    Declared(McpServerConfig),
    /// A component that wrote `run/<name>.port`.
    Component {
        name: String,
        port: u16,
        port_file: PathBuf,
    },
}

/// What makes two declarations one connection.
type Fingerprint = u64;

fn fingerprint(origin: &Origin, env: &BTreeMap<String, String>) -> Fingerprint {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match origin {
        Origin::Declared(config) => {
            // The name is part of the identity: it is what the tools are
            // called by.
            "declared".hash(&mut hasher);
            (
                &config.name,
                &config.command,
                &config.args,
                &config.env,
                &config.url,
                &config.auth,
                env,
            )
                .hash(&mut hasher);
        }
        Origin::Component { name, port, .. } => ("component", name, port).hash(&mut hasher),
    }
    hasher.finish()
}

/// The owner's token beside a component's port file: both live in `run/`
/// (`Home::port_file`, `Home::token_file`).
/// Moves on whenever a server's tools or the set of servers may have
/// changed; see [`tools_generation`].
static TOOLS_GENERATION: AtomicU64 = AtomicU64::new(0);

/// A number that changes whenever the MCP tools any agent is offered may
/// have changed (a server connected, lost, stopped, relisted its tools; a
/// reconcile). A conversation keeps its tools between turns while it stays
/// the same.
pub(crate) fn tools_generation() -> u64 {
    TOOLS_GENERATION.load(Ordering::Acquire)
}

/// Records that the MCP tools may have changed: called after the change,
/// so that whoever reads the new number also sees the new tools.
pub(crate) fn tools_changed() {
    TOOLS_GENERATION.fetch_add(1, Ordering::AcqRel);
}

fn component_token_file(port_file: &std::path::Path) -> PathBuf {
    port_file.with_file_name("token")
}

/// How connections behave (`[mcp]` in `config.toml`).
#[derive(Debug, Clone)]
pub(crate) struct McpSettings {
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
    pub restart: RestartPolicy,
}

impl From<&crate::config::McpConfig> for McpSettings {
    fn from(config: &crate::config::McpConfig) -> Self {
        let first = Duration::from_millis(config.restart_backoff_ms.max(10));
        Self {
            call_timeout: Duration::from_secs(config.call_timeout_secs.max(1)),
            connect_timeout: Duration::from_secs(config.connect_timeout_secs.max(1)),
            restart: RestartPolicy {
                first,
                max: Duration::from_millis(config.restart_backoff_max_ms).max(first),
            },
        }
    }
}

struct Entry {
    peer: Arc<Peer>,
    /// The agents that declare it; empty for a component.
    owners: BTreeSet<String>,
}

/// Every MCP connection of the daemon.
pub(crate) struct McpHub {
    entries: Mutex<BTreeMap<Fingerprint, Entry>>,
    events: broadcast::Sender<McpEventMsg>,
    settings: Mutex<McpSettings>,
    /// `[env]` of `config.toml`, given to every command.
    env: Mutex<BTreeMap<String, String>>,
    /// Set at shutdown: nothing connects after it.
    closed: AtomicBool,
    /// `component/agent` pairs whose shadowing was logged.
    shadowed: Mutex<BTreeSet<String>>,
    /// Components that were here and went away, by name: when.
    gone: Mutex<BTreeMap<String, chrono::DateTime<chrono::Utc>>>,
}

impl McpHub {
    pub(crate) fn new(settings: McpSettings) -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(BTreeMap::new()),
            events: broadcast::channel(256).0,
            settings: Mutex::new(settings),
            env: Mutex::new(BTreeMap::new()),
            closed: AtomicBool::new(false),
            shadowed: Mutex::new(BTreeSet::new()),
            gone: Mutex::new(BTreeMap::new()),
        })
    }

    fn peer_settings(&self) -> PeerSettings {
        let settings = self.settings.lock().clone();
        PeerSettings {
            connect_timeout: settings.connect_timeout,
            restart: settings.restart,
            env: self.env.lock().clone(),
        }
    }

    /// Makes the declared connections match `agents` (and `env`, the
    /// environment every command gets): new declarations connect, shared ones
    /// are shared, undeclared ones close. Components are left alone.
    pub(crate) fn reconcile(
        &self,
        agents: &BTreeMap<String, Arc<AgentDef>>,
        env: &BTreeMap<String, String>,
        settings: McpSettings,
    ) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        *self.env.lock() = env.clone();
        *self.settings.lock() = settings;
        let mut wanted: BTreeMap<Fingerprint, (McpServerConfig, BTreeSet<String>)> =
            BTreeMap::new();
        for agent in agents.values() {
            for config in &agent.config.mcps {
                let print = fingerprint(&Origin::Declared(config.clone()), env);
                wanted
                    .entry(print)
                    .or_insert_with(|| (config.clone(), BTreeSet::new()))
                    .1
                    .insert(agent.name.clone());
            }
        }
        let mut entries = self.entries.lock();
        entries.retain(|print, entry| {
            let keep =
                matches!(entry.peer.origin, Origin::Component { .. }) || wanted.contains_key(print);
            if !keep {
                tracing::info!(
                    "closing MCP server {}: no agent declares it any more",
                    entry.peer.name
                );
                entry.peer.stop();
                entry
                    .peer
                    .announce_stopped(&self.events, "no agent declares it any more");
            }
            keep
        });
        for (print, (config, owners)) in wanted {
            match entries.get_mut(&print) {
                Some(entry) => entry.owners = owners,
                None => {
                    let owners_text = owners.iter().cloned().collect::<Vec<_>>().join(", ");
                    let peer = Peer::start(
                        config.name.clone(),
                        Origin::Declared(config),
                        self.peer_settings(),
                        self.events.clone(),
                        owners_text,
                    );
                    entries.insert(print, Entry { peer, owners });
                }
            }
        }
        self.warn_shadowed(&entries);
        drop(entries);
        tools_changed();
    }

    /// Makes the component connections match `components` (from `run/`).
    pub(crate) fn set_components(&self, components: Vec<discovery::Component>) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let wanted: BTreeMap<Fingerprint, Origin> = components
            .into_iter()
            .map(|component| {
                let origin = Origin::Component {
                    name: component.name,
                    port: component.port,
                    port_file: component.port_file,
                };
                (fingerprint(&origin, &BTreeMap::new()), origin)
            })
            .collect();
        let mut entries = self.entries.lock();
        let mut gone = self.gone.lock();
        entries.retain(|print, entry| {
            let keep = !matches!(entry.peer.origin, Origin::Component { .. })
                || wanted.contains_key(print);
            if !keep {
                tracing::info!("component {} is gone", entry.peer.name);
                gone.insert(entry.peer.name.clone(), chrono::Utc::now());
                entry.peer.stop();
                entry.peer.announce_stopped(
                    &self.events,
                    "the component is gone (its port file was removed)",
                );
            }
            keep
        });
        for (print, origin) in wanted {
            if entries.contains_key(&print) {
                continue;
            }
            let Origin::Component { name, port, .. } = &origin else {
                continue;
            };
            tracing::info!("found component {name} on port {port}");
            gone.remove(name);
            let peer = Peer::start(
                name.clone(),
                origin,
                self.peer_settings(),
                self.events.clone(),
                String::new(),
            );
            entries.insert(
                print,
                Entry {
                    peer,
                    owners: BTreeSet::new(),
                },
            );
        }
        self.warn_shadowed(&entries);
        drop(entries);
        drop(gone);
        tools_changed();
    }

    /// Logs, once, each component that an agent cannot see because it
    /// declares a server of the same name.
    fn warn_shadowed(&self, entries: &BTreeMap<Fingerprint, Entry>) {
        let components: BTreeSet<&str> = entries
            .values()
            .filter(|entry| matches!(entry.peer.origin, Origin::Component { .. }))
            .map(|entry| entry.peer.name.as_str())
            .collect();
        let mut now = BTreeSet::new();
        for entry in entries.values() {
            if matches!(entry.peer.origin, Origin::Declared(_))
                && components.contains(entry.peer.name.as_str())
            {
                for agent in &entry.owners {
                    now.insert(format!("{}/{agent}", entry.peer.name));
                }
            }
        }
        let mut shadowed = self.shadowed.lock();
        for pair in now.difference(&shadowed) {
            let (component, agent) = pair.split_once('/').unwrap_or((pair, ""));
            tracing::warn!(
                "agent {agent} declares its own MCP server named {component}, so the component \
                 {component} is hidden from it; rename one of them to reach both"
            );
        }
        *shadowed = now;
    }

    /// The servers `agent` may use in a chain triggered by `trigger`, its
    /// own first.
    fn servers_for(&self, agent: &AgentDef, trigger: Option<&str>) -> Vec<Arc<Peer>> {
        let env = self.env.lock().clone();
        let entries = self.entries.lock();
        let mut servers: Vec<Arc<Peer>> = agent
            .config
            .mcps
            .iter()
            .filter_map(|config| entries.get(&fingerprint(&Origin::Declared(config.clone()), &env)))
            .map(|entry| entry.peer.clone())
            .collect();
        let own: BTreeSet<String> = servers.iter().map(|peer| peer.name.clone()).collect();
        servers.extend(
            entries
                .values()
                .filter(|entry| {
                    matches!(entry.peer.origin, Origin::Component { .. })
                        && !own.contains(&entry.peer.name)
                })
                .map(|entry| entry.peer.clone()),
        );
        servers.retain(|peer| Some(peer.name.as_str()) != trigger);
        servers
    }

    /// The tools `agent` can call now, in a chain triggered by `trigger`.
    pub(crate) fn tools_for(&self, agent: &AgentDef, trigger: Option<&str>) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for peer in self.servers_for(agent, trigger) {
            for tool in peer.tools() {
                specs.push(ToolSpec {
                    name: tool.qualified,
                    description: tool.description,
                    parameters: tool.schema,
                });
            }
        }
        specs
    }

    /// Calls `qualified` (`server__tool`) of `agent` for `caller`; `None` if
    /// no server the agent may use in the caller's chain has that tool.
    pub(crate) fn call(
        &self,
        agent: &AgentDef,
        qualified: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        caller: Caller,
    ) -> Option<impl Future<Output = ToolOutput> + Send + 'static> {
        let timeout = self.settings.lock().call_timeout;
        let (peer, tool) = self
            .servers_for(agent, caller.trigger.as_deref())
            .into_iter()
            .find_map(|peer| {
                let tool = peer
                    .tools()
                    .into_iter()
                    .find(|tool| tool.qualified == qualified)?;
                Some((peer, tool))
            })?;
        Some(async move { peer.call(&tool, arguments, &caller, timeout).await })
    }

    /// The tools of every connected component, component by component
    /// (sorted by name): what `crabtalkd mcp` offers a host.
    pub(crate) fn component_tools(&self) -> Vec<(String, Vec<RemoteTool>)> {
        self.entries
            .lock()
            .values()
            .filter(|entry| matches!(entry.peer.origin, Origin::Component { .. }))
            .map(|entry| (entry.peer.name.clone(), entry.peer.tools()))
            .filter(|(_, tools)| !tools.is_empty())
            .collect()
    }

    /// Calls the tool `tool` (the component's own name for it) of the
    /// component `component` for `caller`: the component's own result, or
    /// what went wrong; `None` if the component has no such tool now.
    pub(crate) fn call_component(
        &self,
        component: &str,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        caller: Caller,
    ) -> Option<impl Future<Output = Result<rmcp::model::CallToolResult, CallError>> + Send + 'static>
    {
        let timeout = self.settings.lock().call_timeout;
        let (peer, tool) = self.entries.lock().values().find_map(|entry| {
            if !matches!(entry.peer.origin, Origin::Component { .. })
                || entry.peer.name != component
            {
                return None;
            }
            let tool = entry
                .peer
                .tools()
                .into_iter()
                .find(|found| found.name == tool)?;
            Some((entry.peer.clone(), tool))
        })?;
        Some(async move { peer.call_result(&tool, arguments, &caller, timeout).await })
    }

    /// Why `qualified` (`server__tool`) cannot be called by `agent` now,
    /// when its server is one the daemon knows: a component that went away
    /// (and how to start it again), or a server that is not connected
    /// (and why). `None` when the name is no server's.
    pub(crate) fn unavailable(
        &self,
        agent: &AgentDef,
        trigger: Option<&str>,
        qualified: &str,
    ) -> Option<String> {
        let (server, _) = qualified.split_once(names::SEPARATOR)?;
        if trigger == Some(server) {
            return None;
        }
        if let Some(peer) = self
            .servers_for(agent, trigger)
            .into_iter()
            .find(|peer| peer.name == server)
        {
            return match peer.status() {
                Status::Connected => None,
                Status::Connecting => Some(format!(
                    "the MCP server {server} is still connecting, so {qualified} cannot be called \
                     yet; try again in a moment"
                )),
                Status::Failed(why) | Status::Disconnected(why) => Some(format!(
                    "the MCP server {server} is not connected ({why}), so {qualified} cannot be \
                     called now"
                )),
            };
        }
        if agent.config.mcps.iter().any(|config| config.name == server) {
            return None;
        }
        let since = *self.gone.lock().get(server)?;
        Some(format!(
            "crabtalk-{server} is not running; start it with `crabup {server} start`, then try \
             again ({qualified} is one of its tools; the {server} component stopped at {})",
            since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ))
    }

    /// Every server, or those `agent` declares (plus components), as the
    /// protocol shows them (secrets redacted).
    pub(crate) fn list(&self, agent: Option<&str>) -> Vec<McpInfo> {
        let entries = self.entries.lock();
        entries
            .values()
            .filter(|entry| match agent {
                None => true,
                Some(agent) => entry.owners.is_empty() || entry.owners.contains(agent),
            })
            .map(|entry| info(&entry.peer, &entry.owners))
            .collect()
    }

    /// Waits until no connection is still being made — each one is
    /// connected or has failed — or `patience` has passed.
    pub(crate) async fn settled(&self, patience: Duration) {
        // Subscribed before the first look, so no change is missed.
        let mut events = std::pin::pin!(self.subscribe());
        let connecting = || {
            self.entries
                .lock()
                .values()
                .any(|entry| matches!(entry.peer.status(), Status::Connecting))
        };
        let _ = tokio::time::timeout(patience, async {
            while connecting() {
                if events.next().await.is_none() {
                    return;
                }
            }
        })
        .await;
    }

    /// MCP lifecycle events from now on.
    pub(crate) fn subscribe(&self) -> impl Stream<Item = McpEventMsg> + Send + 'static {
        futures::stream::unfold(self.events.subscribe(), |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(event) => return Some((event, receiver)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }

    /// Closes every connection and ends every stdio server's process group,
    /// waiting at most `SHUTDOWN_WAIT`; nothing connects afterwards.
    pub(crate) async fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        let peers: Vec<Arc<Peer>> = std::mem::take(&mut *self.entries.lock())
            .into_values()
            .map(|entry| entry.peer)
            .collect();
        tools_changed();
        let closing = futures::future::join_all(peers.iter().map(|peer| peer.shut_down()));
        if tokio::time::timeout(SHUTDOWN_WAIT, closing).await.is_err() {
            tracing::warn!(
                "MCP servers did not close within {} s of shutdown; killing them",
                SHUTDOWN_WAIT.as_secs()
            );
            for peer in &peers {
                peer.abort();
            }
        }
    }
}

fn info(peer: &Peer, owners: &BTreeSet<String>) -> McpInfo {
    let status = peer.status();
    let mut info = McpInfo {
        name: peer.name.clone(),
        status: status.wire() as i32,
        error: status.error().to_owned(),
        tool_count: peer.tools().len() as u32,
        auto_restart: true,
        restarts: peer.restarts(),
        last_stderr: peer.last_stderr().unwrap_or_default(),
        ..Default::default()
    };
    match &peer.origin {
        Origin::Declared(config) => {
            info.command = config.command.clone().unwrap_or_default();
            info.args = config.args.clone();
            info.env = config
                .env
                .keys()
                .map(|key| (key.clone(), REDACTED.to_owned()))
                .collect();
            info.url = config.url.clone().unwrap_or_default();
            info.auth = if config.auth.is_some() {
                REDACTED.into()
            } else {
                String::new()
            };
            info.source = format!(
                "declared by {}",
                owners.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            info.source_kind = SourceKind::Local as i32;
        }
        Origin::Component {
            port, port_file, ..
        } => {
            info.url = format!("http://127.0.0.1:{port}/mcp");
            info.source = format!("component ({})", port_file.display());
            info.source_kind = SourceKind::External as i32;
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_components_token_is_the_homes_token() {
        let home = crabtalk_home::Home::new("/tmp/crab");
        assert_eq!(
            component_token_file(&home.port_file("search").unwrap()),
            home.token_file()
        );
    }

    fn hub() -> Arc<McpHub> {
        McpHub::new(McpSettings {
            call_timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            restart: RestartPolicy {
                first: Duration::from_secs(1),
                max: Duration::from_secs(1),
            },
        })
    }

    #[tokio::test]
    async fn nothing_connects_after_shutdown() {
        let hub = hub();
        hub.shutdown().await;
        hub.set_components(vec![discovery::Component {
            name: "late".into(),
            port: 1,
            port_file: "/nowhere/late.port".into(),
        }]);
        let agent = AgentDef {
            name: "a".into(),
            config: crate::config::agent::AgentConfig {
                mcps: vec![McpServerConfig {
                    name: "calc".into(),
                    command: Some("true".into()),
                    ..Default::default()
                }],
                ..Default::default()
            },
            prompt: String::new(),
        };
        hub.reconcile(
            &[("a".to_owned(), Arc::new(agent))].into(),
            &BTreeMap::new(),
            hub.settings.lock().clone(),
        );
        assert!(hub.list(None).is_empty());
    }

    #[tokio::test]
    async fn a_component_that_went_away_is_named_with_how_to_start_it() {
        let hub = hub();
        let agent = AgentDef {
            name: "a".into(),
            config: Default::default(),
            prompt: String::new(),
        };
        assert_eq!(hub.unavailable(&agent, None, "search__web_search"), None);
        hub.set_components(vec![discovery::Component {
            name: "search".into(),
            port: 1,
            port_file: "/nowhere/search.port".into(),
        }]);
        hub.set_components(Vec::new());
        let message = hub.unavailable(&agent, None, "search__web_search").unwrap();
        assert!(
            message.starts_with(
                "crabtalk-search is not running; start it with `crabup search start`, then try \
                 again (search__web_search is one of its tools; the search component stopped at "
            ),
            "{message}"
        );
        // Not for the chains it triggered, nor for names of no server.
        assert_eq!(
            hub.unavailable(&agent, Some("search"), "search__web_search"),
            None
        );
        assert_eq!(hub.unavailable(&agent, None, "bash"), None);
        assert_eq!(hub.unavailable(&agent, None, "other__tool"), None);
        hub.shutdown().await;
    }

    #[test]
    fn the_name_is_part_of_a_declarations_identity() {
        let config = McpServerConfig {
            name: "calc".into(),
            command: Some("calc-server".into()),
            ..Default::default()
        };
        let renamed = McpServerConfig {
            name: "math".into(),
            ..config.clone()
        };
        let env = BTreeMap::new();
        assert_ne!(
            fingerprint(&Origin::Declared(config), &env),
            fingerprint(&Origin::Declared(renamed), &env)
        );
    }
}
