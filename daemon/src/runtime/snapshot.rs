//! What a turn runs against: the configuration, the agents, the models,
//! the tools and the skill folders, as one immutable value. Reload and agent edits build a new
//! snapshot and swap it in; a turn keeps the one it started with.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::DaemonConfig;
use crate::config::agent::AgentDef;
use crate::provider::ModelRegistry;
use crate::skills::SkillDirs;
use crate::tools::Tools;

pub struct Snapshot {
    pub config: Arc<DaemonConfig>,
    pub agents: BTreeMap<String, Arc<AgentDef>>,
    pub registry: Arc<ModelRegistry>,
    pub tools: Tools,
    /// The skill folders (the skill tool shares this, and what it logged).
    pub skills: SkillDirs,
}

impl Snapshot {
    /// The same snapshot with other agents.
    pub fn with_agents(&self, agents: BTreeMap<String, Arc<AgentDef>>) -> Self {
        Self {
            config: self.config.clone(),
            agents,
            registry: self.registry.clone(),
            tools: self.tools.clone(),
            skills: self.skills.clone(),
        }
    }

    /// `agent`, or a not-found message that lists the agents there are.
    pub fn agent(&self, name: &str) -> Result<Arc<AgentDef>, String> {
        self.agents.get(name).cloned().ok_or_else(|| {
            let names: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            format!("agent {name:?} not found; agents: {}", names.join(", "))
        })
    }
}
