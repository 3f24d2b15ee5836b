//! An agent's MCP servers added, changed and removed by request: the
//! agent's definition rewritten, then the hub reconciled.

use crabtalk_kit::config::{UnknownKey, deserialize_noting_unknown};

use super::Runtime;
use super::error::Error;
use crate::config::agent::AgentDef;
use crate::config::agent::McpServerConfig;

/// Reads a server's JSON as the agent file's `[[mcps]]` table would be
/// read: a key the table does not know is refused, with the key it most
/// likely meant, rather than dropped (a misspelt `args` would otherwise
/// start the server without its arguments).
fn read_server(json: &str) -> Result<McpServerConfig, Error> {
    let not_config =
        |err: serde_json::Error| Error::invalid(format!("not McpServerConfig JSON: {err}"));
    let mut reader = serde_json::Deserializer::from_str(json);
    let (config, unknown) =
        deserialize_noting_unknown::<McpServerConfig, _>(&mut reader).map_err(not_config)?;
    reader.end().map_err(not_config)?;
    if !unknown.is_empty() {
        let said: Vec<String> = unknown.iter().map(UnknownKey::message).collect();
        return Err(Error::invalid(format!(
            "the MCP server's JSON: {}",
            said.join("; ")
        )));
    }
    Ok(config)
}

impl Runtime {
    /// Adds (or replaces, by name) an MCP server in `agent`'s config, from
    /// `McpServerConfig` JSON; returns the server's name.
    pub(crate) fn upsert_mcp(&self, agent: &str, config_json: &str) -> Result<String, Error> {
        let config = read_server(config_json)?;
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
    pub(crate) fn delete_mcp(&self, agent: &str, name: &str) -> Result<(), Error> {
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
}
