//! What a turn runs against: the configuration, the agents, the models,
//! the tools and the skill folders, as one immutable value. Reload and agent edits build a new
//! snapshot and swap it in; a turn keeps the one it started with. The parts
//! of a snapshot are read here: the config, the agents (the built-in worker
//! among them), the tools' and the MCP hub's settings.

use std::collections::BTreeMap;
use std::sync::Arc;

use crabtalk_home::Home;

use crate::config::DaemonConfig;
use crate::config::Refusal;
use crate::config::agent::AgentDef;
use crate::config::agent::{AgentConfig, AgentStore, RefusedAgent, UnknownAgent};
use crate::mcp::{McpHub, McpSettings};
use crate::memories::Memories;
use crate::provider::ModelRegistry;
use crate::sessions::SessionSearch;
use crate::skills::SkillDirs;
use crate::tools::ToolSettings;
use crate::tools::Tools;

pub(crate) struct Snapshot {
    /// This snapshot among every snapshot of the process: no two share it.
    pub generation: u64,
    pub config: Arc<DaemonConfig>,
    pub agents: BTreeMap<String, Arc<AgentDef>>,
    pub registry: Arc<ModelRegistry>,
    pub tools: Tools,
    /// The skill folders (the skill tool shares this, and what it logged).
    pub skills: SkillDirs,
}

/// A generation no snapshot has had yet.
pub(crate) fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Snapshot {
    /// The same snapshot with other agents.
    pub(crate) fn with_agents(&self, agents: BTreeMap<String, Arc<AgentDef>>) -> Self {
        Self {
            generation: next_generation(),
            config: self.config.clone(),
            agents,
            registry: self.registry.clone(),
            tools: self.tools.clone(),
            skills: self.skills.clone(),
        }
    }

    /// `agent`, or which agents there are.
    pub(crate) fn agent(&self, name: &str) -> Result<Arc<AgentDef>, UnknownAgent> {
        self.agents.get(name).cloned().ok_or_else(|| UnknownAgent {
            name: name.to_owned(),
            agents: self.agents.keys().cloned().collect(),
        })
    }
}

pub(super) fn load_config(home: &Home) -> Result<DaemonConfig, Refusal> {
    DaemonConfig::load(&home.config_file())
}

pub(crate) const WORKER: &str = "worker";

pub(super) const WORKER_PROMPT: &str = "\
You are a worker agent: another agent handed you a task. Do exactly that task with the tools you \
have, then reply with the result itself — what you found or what you changed — concisely and \
completely, because your reply is all the other agent sees. If the task cannot be done, say why.
";

pub(super) fn load_agents(
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

pub(super) fn refusal(
    refused: &RefusedAgent,
    previous: Option<&BTreeMap<String, Arc<AgentDef>>>,
) -> String {
    let name = &refused.name;
    let outcome = if previous.is_some_and(|previous| previous.contains_key(name)) {
        format!("agent {name} keeps its previous definition")
    } else {
        format!("agent {name} is not loaded")
    };
    format!("{}\n  {outcome}", refused.error)
}

pub(super) fn tool_settings(
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

pub(super) fn mcp_settings(config: &DaemonConfig) -> McpSettings {
    McpSettings::from(&config.mcp)
}
