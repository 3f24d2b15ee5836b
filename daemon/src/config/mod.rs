//! The daemon's configuration: `config.toml` ([`DaemonConfig`]) and the agent
//! definitions under `agents/` ([`agent`]).
//!
//! Parsing is strict about shape and lenient about extras: a file that is not
//! valid TOML, or has a value of the wrong type, is an error naming the file,
//! line and column; a key this version does not know is a warning (it may be
//! from a newer version, or a typo) and is otherwise ignored.

pub mod agent;
mod load;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use self::load::{ConfigError, Loaded};

/// Address the daemon listens on by default.
pub const DEFAULT_TCP: &str = crabtalk_proto::transport::DEFAULT_TCP_ADDR;

/// `config.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct DaemonConfig {
    /// The model used when an agent names none; else the first model of the
    /// first provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The agent used when a client names none; created on first start.
    pub default_agent: String,
    pub providers: Vec<ProviderEntry>,
    pub transport: TransportConfig,
    /// Added to the environment of MCP server processes.
    pub env: BTreeMap<String, String>,
    pub llm: LlmSettings,
    pub conversations: ConversationSettings,
    /// More skill folders, searched after `skills/` in the home, in order.
    pub skill_dirs: Vec<PathBuf>,
    pub events: EventSettings,
    pub delegation: DelegationSettings,
    pub mcp: McpConfig,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

/// `[mcp]`: connections to MCP servers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct McpConfig {
    /// A tool call that takes longer fails (and is cancelled).
    pub call_timeout_secs: u64,
    /// Connecting and listing tools may take this long.
    pub connect_timeout_secs: u64,
    /// The first pause before a server is started (or connected to) again;
    /// it doubles after each try.
    pub restart_backoff_ms: u64,
    /// The longest pause between tries; a connection that stays up this
    /// long brings the pause back to `restart_backoff_ms`.
    pub restart_backoff_max_ms: u64,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            call_timeout_secs: 60,
            connect_timeout_secs: 30,
            restart_backoff_ms: 1000,
            restart_backoff_max_ms: 60_000,
            unknown: BTreeMap::new(),
        }
    }
}

/// `[events]`: the event bus.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EventSettings {
    /// How many turns one event may set off in a row (an agent's done-event
    /// firing another agent, whose done-event fires the next…) before the
    /// chain is stopped: the guard against subscription cycles.
    pub max_hops: u32,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl Default for EventSettings {
    fn default() -> Self {
        Self {
            max_hops: 8,
            unknown: BTreeMap::new(),
        }
    }
}

/// `[delegation]`: limits of the delegate tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegationSettings {
    /// How many levels delegated agents may delegate further.
    pub max_depth: u32,
    /// How many tasks one delegate call may start.
    pub max_tasks: usize,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl Default for DelegationSettings {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_tasks: 8,
            unknown: BTreeMap::new(),
        }
    }
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            default_model: None,
            default_agent: "crab".into(),
            providers: Vec::new(),
            transport: TransportConfig::default(),
            env: BTreeMap::new(),
            llm: LlmSettings::default(),
            conversations: ConversationSettings::default(),
            skill_dirs: Vec::new(),
            events: EventSettings::default(),
            delegation: DelegationSettings::default(),
            mcp: McpConfig::default(),
            unknown: BTreeMap::new(),
        }
    }
}

/// One `[[providers]]` entry.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderEntry {
    /// A label; defaults to the kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// openai (any OpenAI-compatible API) | anthropic | google | azure |
    /// ollama | openai-compatible | a crabllm compat name (deepseek, …).
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Read the key from this environment variable instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The models this provider serves; discovered from its model list when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Azure OpenAI API version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl ProviderEntry {
    /// The label used in messages and `ListModels`.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.kind)
    }
}

/// `[transport]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct TransportConfig {
    /// `host:port`, or `"off"` to disable TCP. Port 0 picks a free port.
    pub tcp: String,
    /// Required when `tcp` is not a loopback address.
    pub token: String,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            tcp: DEFAULT_TCP.into(),
            token: String::new(),
            unknown: BTreeMap::new(),
        }
    }
}

/// `[llm]`: how the daemon treats provider calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSettings {
    /// A stream that sends nothing for this long fails the turn.
    pub stream_idle_timeout_secs: u64,
    /// Retries of transient failures (429, 5xx, network) before giving up.
    pub max_retries: u32,
    /// First backoff; doubles per retry, with full jitter.
    pub retry_backoff_ms: u64,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            stream_idle_timeout_secs: 120,
            max_retries: 2,
            retry_backoff_ms: 100,
            unknown: BTreeMap::new(),
        }
    }
}

/// `[conversations]`: memory use and waiting limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ConversationSettings {
    /// Conversations kept in RAM; idle ones beyond this are evicted (least
    /// recently used first) and reloaded from disk on demand.
    pub max_in_memory: usize,
    /// Idle conversations are evicted after this long.
    pub idle_evict_secs: u64,
    /// How long `ask_user` waits for a reply.
    pub ask_timeout_secs: u64,
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, toml::Value>,
}

impl Default for ConversationSettings {
    fn default() -> Self {
        Self {
            max_in_memory: 256,
            idle_evict_secs: 1800,
            ask_timeout_secs: 600,
            unknown: BTreeMap::new(),
        }
    }
}

impl DaemonConfig {
    /// Every unknown key, as a dotted path (`transport.tpc`).
    pub fn unknown_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        let mut collect = |prefix: &str, unknown: &BTreeMap<String, toml::Value>| {
            keys.extend(unknown.keys().map(|key| {
                if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                }
            }));
        };
        collect("", &self.unknown);
        collect("transport", &self.transport.unknown);
        collect("llm", &self.llm.unknown);
        collect("conversations", &self.conversations.unknown);
        collect("events", &self.events.unknown);
        collect("delegation", &self.delegation.unknown);
        collect("mcp", &self.mcp.unknown);
        for (i, provider) in self.providers.iter().enumerate() {
            collect(&format!("providers[{i}]"), &provider.unknown);
        }
        keys
    }

    /// This config as JSON with every secret replaced by `"<redacted>"`.
    pub fn redacted_json(&self) -> serde_json::Value {
        let mut copy = self.clone();
        for provider in &mut copy.providers {
            if provider.api_key.is_some() {
                provider.api_key = Some(REDACTED.into());
            }
        }
        if !copy.transport.token.is_empty() {
            copy.transport.token = REDACTED.into();
        }
        for value in copy.env.values_mut() {
            *value = REDACTED.into();
        }
        serde_json::to_value(&copy).unwrap_or(serde_json::Value::Null)
    }
}

/// What replaces a secret in anything the daemon shows.
pub const REDACTED: &str = "<redacted>";

/// Where the configuration of one home lives.
#[derive(Debug, Clone)]
pub struct ConfigPaths {
    pub config_file: PathBuf,
    pub agents_dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_in_json() {
        let config: DaemonConfig = toml::from_str(
            r#"
            [[providers]]
            kind = "openai"
            api_key = "sk-secret"
            [transport]
            token = "hunter2"
            [env]
            GITHUB_TOKEN = "ghp_x"
            "#,
        )
        .unwrap();
        let json = config.redacted_json().to_string();
        assert!(!json.contains("sk-secret"));
        assert!(!json.contains("hunter2"));
        assert!(!json.contains("ghp_x"));
        assert!(json.contains("GITHUB_TOKEN"));
        assert!(json.contains(REDACTED));
    }
}
