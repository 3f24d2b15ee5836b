//! MCP servers: those agents declare (RFC 0193) and the components that
//! announce themselves in `run/<name>.port` (RFC 0043).
//!
//! Agents own their servers by value. Identical declarations — same command,
//! arguments, environment, URL and token — are one connection, however many
//! agents declare them; a connection nobody declares any more is closed (its
//! process killed). [`McpHub::reconcile`] makes the connections match the
//! agents after every change to them.
//!
//! Components are found by watching `run/` ([`discovery`]): every live port
//! file other than the daemon's own is a server at
//! `http://127.0.0.1:<port>/mcp`, offered to every agent.
//!
//! Tools are named `server__tool`. An agent's own servers come first: a
//! component with the same name as one of them is hidden from that agent.
//! Each call has a timeout, and servers are independent: a slow or dead one
//! never holds up another.

pub mod discovery;
mod peer;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crabtalk_proto::msg::{ErrorMsg, McpEventMsg, McpInfo, SourceKind};
use futures::Stream;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use self::peer::{Peer, PeerSettings, sanitize};
pub use self::peer::{RemoteTool, Status};
use crate::config::REDACTED;
use crate::config::agent::{AgentDef, McpServerConfig};
use crate::tools::{ToolOutput, ToolSpec};

/// Where a server comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Declared by agents, by value.
    Declared(McpServerConfig),
    /// A component that wrote `run/<name>.port`.
    Component {
        name: String,
        port: u16,
        port_file: PathBuf,
    },
}

/// The namespace a server's tools get from its configured name.
pub fn server_name(configured: &str) -> String {
    sanitize(configured, 24)
}

/// What makes two declarations one connection.
type Fingerprint = u64;

fn fingerprint(origin: &Origin, env: &BTreeMap<String, String>) -> Fingerprint {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match origin {
        Origin::Declared(config) => {
            "declared".hash(&mut hasher);
            (
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

/// How connections behave (`[mcp]` in `config.toml`).
#[derive(Debug, Clone)]
pub struct McpSettings {
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
}

struct Entry {
    peer: Arc<Peer>,
    /// The agents that declare it; empty for a component.
    owners: BTreeSet<String>,
}

/// Every MCP connection of the daemon.
pub struct McpHub {
    entries: Mutex<BTreeMap<Fingerprint, Entry>>,
    events: broadcast::Sender<McpEventMsg>,
    settings: Mutex<McpSettings>,
    /// `[env]` of `config.toml`, given to every command.
    env: Mutex<BTreeMap<String, String>>,
}

impl McpHub {
    pub fn new(settings: McpSettings) -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(BTreeMap::new()),
            events: broadcast::channel(256).0,
            settings: Mutex::new(settings),
            env: Mutex::new(BTreeMap::new()),
        })
    }

    fn peer_settings(&self) -> PeerSettings {
        PeerSettings {
            connect_timeout: self.settings.lock().connect_timeout,
            env: self.env.lock().clone(),
        }
    }

    /// Makes the declared connections match `agents` (and `env`, the
    /// environment every command gets): new declarations connect, shared ones
    /// are shared, undeclared ones close. Components are left alone.
    pub fn reconcile(
        &self,
        agents: &BTreeMap<String, Arc<AgentDef>>,
        env: &BTreeMap<String, String>,
        settings: McpSettings,
    ) {
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
            }
            keep
        });
        for (print, (config, owners)) in wanted {
            match entries.get_mut(&print) {
                Some(entry) => entry.owners = owners,
                None => {
                    let name = server_name(&config.name);
                    let owners_text = owners.iter().cloned().collect::<Vec<_>>().join(", ");
                    let peer = Peer::start(
                        name,
                        Origin::Declared(config),
                        self.peer_settings(),
                        self.events.clone(),
                        owners_text,
                    );
                    entries.insert(print, Entry { peer, owners });
                }
            }
        }
    }

    /// Makes the component connections match `components` (from `run/`).
    pub fn set_components(&self, components: Vec<discovery::Component>) {
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
        entries.retain(|print, entry| {
            let keep = !matches!(entry.peer.origin, Origin::Component { .. })
                || wanted.contains_key(print);
            if !keep {
                tracing::info!("component {} is gone", entry.peer.name);
                entry.peer.stop();
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
            let peer = Peer::start(
                server_name(name),
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
    }

    /// The servers `agent` may use, its own first.
    fn servers_for(&self, agent: &AgentDef) -> Vec<Arc<Peer>> {
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
        servers
    }

    /// The tools `agent` can call now.
    pub fn tools_for(&self, agent: &AgentDef) -> Vec<ToolSpec> {
        let mut seen = BTreeSet::new();
        let mut specs = Vec::new();
        for peer in self.servers_for(agent) {
            for tool in peer.tools() {
                if seen.insert(tool.qualified.clone()) {
                    specs.push(ToolSpec {
                        name: tool.qualified,
                        description: tool.description,
                        parameters: tool.schema,
                    });
                }
            }
        }
        specs
    }

    /// Calls `qualified` (`server__tool`) for `agent`; `None` if no server of
    /// the agent has that tool.
    pub fn call(
        &self,
        agent: &AgentDef,
        qualified: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Option<impl Future<Output = ToolOutput> + Send + 'static> {
        let timeout = self.settings.lock().call_timeout;
        let (peer, tool) = self.servers_for(agent).into_iter().find_map(|peer| {
            let tool = peer
                .tools()
                .into_iter()
                .find(|tool| tool.qualified == qualified)?;
            Some((peer, tool))
        })?;
        Some(async move { peer.call(&tool, arguments, timeout).await })
    }

    /// Every server, or those `agent` declares (plus components), as the
    /// protocol shows them (secrets redacted).
    pub fn list(&self, agent: Option<&str>) -> Vec<McpInfo> {
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

    /// MCP lifecycle events from now on.
    pub fn subscribe(&self) -> impl Stream<Item = Result<McpEventMsg, ErrorMsg>> + Send + 'static {
        futures::stream::unfold(self.events.subscribe(), |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(event) => return Some((Ok(event), receiver)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }

    /// Closes every connection (at shutdown).
    pub fn shutdown(&self) {
        for entry in std::mem::take(&mut *self.entries.lock()).into_values() {
            entry.peer.stop();
        }
    }
}

fn info(peer: &Peer, owners: &BTreeSet<String>) -> McpInfo {
    let status = peer.status();
    let mut info = McpInfo {
        name: peer.name.clone(),
        status: status.wire() as i32,
        error: match &status {
            Status::Failed(error) => error.clone(),
            _ => String::new(),
        },
        tool_count: peer.tools().len() as u32,
        auto_restart: true,
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
