//! The daemon's configuration: `config.toml` ([`DaemonConfig`]) and the agent
//! definitions under `agents/` ([`agent`]).
//!
//! Parsing is strict: a file that is not valid TOML, has a value of the
//! wrong type, a key this version does not know (most likely a typo, and a
//! typo must not silently drop a setting such as an agent's tool
//! restriction), an unknown provider `kind` or a model no provider serves is
//! refused with every [`Problem`] named by file, line and column. Reading a
//! file, finding its unknown keys (with a "did you mean", from the types'
//! own fields) and placing a problem are the kit's config loader
//! ([`crabtalk_kit::config`]), the same one every component uses; the
//! checks here are what only the daemon knows (provider kinds, served
//! models, names). What a refusal means — the daemon does not start, a
//! reload keeps the previous file in force — is decided by the caller;
//! [`check`] runs the same checks without a daemon (`crabtalkd check`).

pub mod agent;
pub mod check;
mod load;
pub mod presets;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crabtalk_kit::config::{KeyPath, Problem, Refusal};

pub use self::presets::{Preset, PresetEntry};

/// Address the daemon listens on by default.
pub const DEFAULT_TCP: &str = crabtalk_proto::DEFAULT_TCP_ADDR;

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
    /// `[presets.<name>]`: changes to the built-in providers chosen by a
    /// model's prefix (`groq/…`), or presets of one's own (RFC 0023).
    pub presets: BTreeMap<String, PresetEntry>,
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
    pub gateway: GatewaySettings,
}

/// `[gateway]`: who talks through a gateway, and what their chains may not
/// use (see `tools::gateway`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct GatewaySettings {
    /// Sender prefixes that mark a gateway sender (`tg:` for Telegram).
    pub senders: Vec<String>,
    /// Tools no turn begun by a gateway sender may use: exact names, or a
    /// prefix ending in `*` (`cron__*`).
    pub deny_tools: Vec<String>,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            senders: vec!["tg:".into()],
            deny_tools: vec!["bash".into(), "read".into(), "edit".into()],
        }
    }
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
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            call_timeout_secs: 60,
            connect_timeout_secs: 30,
            restart_backoff_ms: 1000,
            restart_backoff_max_ms: 60_000,
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
}

impl Default for EventSettings {
    fn default() -> Self {
        Self { max_hops: 8 }
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
}

impl Default for DelegationSettings {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_tasks: 8,
        }
    }
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            default_model: None,
            default_agent: "crab".into(),
            providers: Vec::new(),
            presets: BTreeMap::new(),
            transport: TransportConfig::default(),
            env: BTreeMap::new(),
            llm: LlmSettings::default(),
            conversations: ConversationSettings::default(),
            skill_dirs: Vec::new(),
            events: EventSettings::default(),
            delegation: DelegationSettings::default(),
            mcp: McpConfig::default(),
            gateway: GatewaySettings::default(),
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
    /// The token every TCP client sends in `Hello`; when absent, the
    /// daemon keeps a random one in `run/token` (see the `token` module).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            tcp: DEFAULT_TCP.into(),
            token: None,
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
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            stream_idle_timeout_secs: 120,
            max_retries: 2,
            retry_backoff_ms: 100,
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
    /// How long a turn waits for its client to take any of the events
    /// queued for it before dropping the client (the turn goes on).
    pub client_stall_secs: u64,
}

impl Default for ConversationSettings {
    fn default() -> Self {
        Self {
            max_in_memory: 256,
            idle_evict_secs: 1800,
            ask_timeout_secs: 600,
            client_stall_secs: 30,
        }
    }
}

impl DaemonConfig {
    /// Every preset, built-in and configured, longest name first; the
    /// Ollama preset follows `OLLAMA_HOST`.
    pub fn presets(&self) -> Vec<Preset> {
        let ollama_host = std::env::var(crabtalk_home::provider_env::OLLAMA_HOST_VAR).ok();
        presets::presets(&self.presets, ollama_host.as_deref())
    }

    /// The models the providers serve, when that can be known without
    /// asking them: every provider lists its `models`, and any model a
    /// preset's prefix names (`groq/…`). `None` when a provider discovers
    /// its models, or when the environment supplies the providers (none in
    /// `config.toml`).
    pub fn served_models(&self) -> Option<ServedModels> {
        if self.providers.is_empty() {
            return None;
        }
        let mut names = BTreeSet::new();
        for provider in &self.providers {
            names.extend(provider.models.clone()?);
        }
        Some(ServedModels {
            names,
            presets: self
                .presets()
                .into_iter()
                .map(|preset| preset.name)
                .collect(),
        })
    }

    /// This config as JSON with every secret replaced by `"<redacted>"`.
    pub fn redacted_json(&self) -> serde_json::Value {
        let mut copy = self.clone();
        for provider in &mut copy.providers {
            if provider.api_key.is_some() {
                provider.api_key = Some(REDACTED.into());
            }
        }
        for preset in copy.presets.values_mut() {
            if preset.api_key.is_some() {
                preset.api_key = Some(REDACTED.into());
            }
        }
        if copy.transport.token.is_some() {
            copy.transport.token = Some(REDACTED.into());
        }
        for value in copy.env.values_mut() {
            *value = REDACTED.into();
        }
        serde_json::to_value(&copy).unwrap_or(serde_json::Value::Null)
    }
}

/// The models `config.toml` can be seen to serve: the names its providers
/// list, and every name with a preset's prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServedModels {
    pub names: BTreeSet<String>,
    /// The presets' names (`groq` serves `groq/…`).
    pub presets: Vec<String>,
}

impl ServedModels {
    /// Whether `model` is served.
    pub fn serves(&self, model: &str) -> bool {
        self.names.contains(model)
            || self.presets.iter().any(|preset| {
                model
                    .strip_prefix(preset.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|rest| !rest.trim().is_empty())
            })
    }

    /// The names, for a message.
    pub fn list(&self) -> String {
        if self.names.is_empty() {
            "no models".to_owned()
        } else {
            self.names.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    /// What is served, for a message: the names, then the prefixes.
    pub fn describe(&self) -> String {
        let names = if self.names.is_empty() {
            "no model by name".to_owned()
        } else {
            self.names
                .iter()
                .map(|name| format!("{name:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut prefixes = self.presets.clone();
        prefixes.sort();
        format!(
            "{names}; a model named <preset>/<model> goes to a preset ({})",
            prefixes
                .iter()
                .map(|name| format!("{name}/…"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The end of a message about a model nobody serves: presets serve models
/// by prefix.
pub const PRESET_HINT: &str = "a preset's model, like \"groq/llama-3.3-70b-versatile\", is served too (`crabtalkd check` lists the presets)";

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

    /// A config.toml that sets every key the lists name.
    const EVERY_KEY: &str = r#"
        default_model = "m"
        default_agent = "crab"
        skill_dirs = ["/x"]
        [[providers]]
        name = "p"
        kind = "openai"
        base_url = "http://127.0.0.1:1/v1"
        api_key = "k"
        api_key_env = "K"
        models = ["m"]
        api_version = "v"
        [presets.groq]
        kind = "openai-compatible"
        base_url = "http://127.0.0.1:1/v1"
        api_key = "k"
        api_key_env = "K"
        [transport]
        tcp = "off"
        token = "t"
        [env]
        A = "b"
        [llm]
        stream_idle_timeout_secs = 1
        max_retries = 1
        retry_backoff_ms = 1
        [conversations]
        max_in_memory = 1
        idle_evict_secs = 1
        ask_timeout_secs = 1
        client_stall_secs = 1
        [events]
        max_hops = 1
        [delegation]
        max_depth = 1
        max_tasks = 1
        [mcp]
        call_timeout_secs = 1
        connect_timeout_secs = 1
        restart_backoff_ms = 1
        restart_backoff_max_ms = 1
        [gateway]
        senders = ["tg:"]
        deny_tools = ["bash"]
    "#;

    /// The keys of a table of `value`, and of its tables, by path.
    fn keys(value: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        if let Some(object) = value.as_object() {
            for (key, inner) in object {
                out.push(format!("{path}{key}"));
                if path.is_empty() && key != "env" {
                    // A table of named tables: the keys are a named one's.
                    let inner = match key.as_str() {
                        "presets" => inner.as_object().and_then(|named| named.values().next()),
                        _ => inner.as_array().and_then(|a| a.first()),
                    }
                    .unwrap_or(inner);
                    keys(inner, &format!("{key}."), out);
                }
            }
        }
    }

    #[test]
    fn every_key_a_config_can_set_is_known() {
        let config = DaemonConfig::parse(std::path::Path::new("config.toml"), EVERY_KEY)
            .unwrap_or_else(|err| panic!("{err}"));
        // The file above sets every field there is (so a field added later
        // is parsed here too).
        let mut found = Vec::new();
        keys(&serde_json::to_value(&config).unwrap(), "", &mut found);
        for key in found {
            let last = key.rsplit('.').next().unwrap_or(&key);
            assert!(
                EVERY_KEY.contains(last),
                "{key} is a field EVERY_KEY does not set"
            );
        }
    }

    #[test]
    fn an_unknown_key_in_any_table_gets_the_likely_one() {
        for (text, says) in [
            (
                "[mcp]\ncall_timeout = 1\n",
                "unknown key `call_timeout` in [mcp]; did you mean `call_timeout_secs`?",
            ),
            (
                "[gateway]\nsender = []\n",
                "unknown key `sender` in [gateway]; did you mean `senders`?",
            ),
            (
                "[presets.lab]\nbase_url = \"http://lab/v1\"\napi_kye = \"k\"\n",
                "unknown key `api_kye` in [presets.lab]; did you mean `api_key`?",
            ),
            (
                "[delegation]\nmax_dept = 1\n",
                "unknown key `max_dept` in [delegation]; did you mean `max_depth`?",
            ),
        ] {
            let err = DaemonConfig::parse(std::path::Path::new("config.toml"), text).unwrap_err();
            assert!(err.to_string().contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn secrets_are_redacted_in_json() {
        let config: DaemonConfig = toml::from_str(
            r#"
            [[providers]]
            kind = "openai"
            api_key = "sk-secret"
            [presets.lab]
            base_url = "http://lab/v1"
            api_key = "lab-secret"
            [transport]
            token = "hunter2"
            [env]
            GITHUB_TOKEN = "ghp_x"
            "#,
        )
        .unwrap();
        let json = config.redacted_json().to_string();
        assert!(!json.contains("sk-secret"));
        assert!(!json.contains("lab-secret"));
        assert!(!json.contains("hunter2"));
        assert!(!json.contains("ghp_x"));
        assert!(json.contains("GITHUB_TOKEN"));
        assert!(json.contains(REDACTED));
    }
}
