//! `Reload`: `config.toml` and the agents read again and swapped in, a
//! file with a problem refused while what it defined stays.

use std::sync::Arc;

use super::Runtime;
use super::error::Error;
use super::snapshot::Snapshot;
use super::snapshot::{load_agents, refusal, tool_settings};
use crate::config::DaemonConfig;
use crate::provider::ModelRegistry;
use crate::tools::Tools;

impl Runtime {
    /// Re-reads `config.toml` and the agents and swaps them in. In-flight
    /// turns finish on what they started with; conversations, their
    /// histories and the event hub carry over.
    ///
    /// A file with a problem is refused and what it defined stays: a broken
    /// `config.toml` keeps the running configuration, a broken agent file
    /// keeps that agent's previous definition. Everything else is applied.
    /// `Ok` carries notes worth showing (warnings); `Err` lists every
    /// refused file's problems, with file, line and column.
    pub(crate) fn reload(&self) -> Result<Vec<String>, Error> {
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
                    generation: super::snapshot::next_generation(),
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
}
