//! Agents made, changed, renamed and deleted while the daemon runs: the
//! definition written, the snapshot rebuilt with it, and their
//! conversations, memory and files moved or let go first.

use std::sync::Arc;

use super::Runtime;
use super::error::Error;
use super::snapshot::Snapshot;
use super::snapshot::{WORKER, load_agents, refusal};
use crate::config::agent::{AgentConfig, AgentDef, validate_agent_name};

impl Runtime {
    /// Creates an agent from a JSON config (empty for the defaults).
    pub(crate) fn create_agent(
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
    pub(crate) fn update_agent(
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
    pub(crate) async fn delete_agent(&self, name: &str) -> Result<(), Error> {
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
    pub(crate) async fn rename_agent(&self, old: &str, new: &str) -> Result<Arc<AgentDef>, Error> {
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
    pub(super) fn move_agent_files(&self, old: &str, new: &str) -> Result<(), Error> {
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

    /// Refuses to delete or rename the built-in worker (it has no file).
    pub(super) fn refuse_builtin(&self, name: &str) -> Result<(), Error> {
        if name == WORKER && !self.agent_store.exists(name) {
            return Err(Error::conflict(
                "worker is built in and cannot be deleted or renamed; an agents/worker.toml replaces it",
            ));
        }
        Ok(())
    }

    /// Takes `agent`'s conversations out of memory and waits until nothing
    /// holds them; refuses if one is busy.
    pub(super) async fn release_conversations(&self, agent: &str) -> Result<(), Error> {
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
    pub(crate) async fn release_conversation(
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
    pub(super) fn refresh_agents(&self, snapshot: &Snapshot, name: &str) -> Arc<AgentDef> {
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
}

pub(super) fn undo_rename(old: &str, new: &str, what: &str, undone: std::io::Result<()>) -> bool {
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

pub(super) fn parse_agent_config(json: &str) -> Result<Option<AgentConfig>, Error> {
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
