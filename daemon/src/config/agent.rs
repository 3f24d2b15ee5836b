//! Agents: `agents/<name>.toml` (an [`AgentConfig`]) plus `agents/<name>.md`
//! (the system prompt).
//!
//! A file with any problem — bad TOML, a wrong type, an unknown key, a model
//! no provider serves — is refused whole: the agent is not loaded from it
//! (and a reload keeps the agent's previous definition), so a typo such as
//! `tols = [...]` can never quietly lift the agent's tool restriction.
//!
//! Agent names become file names, so they are restricted to letters, digits,
//! `-`, `_` and `.` (not first), at most 64 characters; two names that differ
//! only in case are refused so a case-insensitive filesystem cannot merge
//! them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crabtalk_kit::config::{ConfigFile, KeyPath, Problem, Refusal};

use super::{PRESET_HINT, REDACTED, ServedModels};

/// The prompt of the default agent when it is first created.
pub const DEFAULT_PROMPT: &str = "\
You are Crab, an assistant that lives in the crabtalk daemon on the user's own machine.

Be direct and concrete. Prefer doing over describing: when a tool can answer a
question or finish a task, use it, then say briefly what you did and what you
found. When something is ambiguous and a wrong guess would be costly, ask
(the ask_user tool shows the user a question and waits for the answer).

Keep answers short unless the user asks for depth. Use Markdown: the user's
client renders it. Never invent file contents, command output or facts you did
not check; say what you do not know.
";

/// An agent's configuration (`agents/<name>.toml`; JSON on the wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub description: String,
    /// The model; the daemon's active model when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// LLM calls per turn, at most.
    pub max_iterations: u32,
    /// Ask the model to think (reasoning effort "medium") where it can.
    pub thinking: bool,
    /// `auto`, `none`, `required`, or a tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// Skills this agent may use; empty means all.
    pub skills: Vec<String>,
    /// Tools this agent may call; empty means all.
    pub tools: Vec<String>,
    /// MCP servers this agent owns.
    pub mcps: Vec<McpServerConfig>,
    pub bash: BashSettings,
    pub memory: MemorySettings,
    /// Tool outputs longer than this are cut when a conversation is
    /// summarised for compaction.
    pub compact_tool_max_len: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            description: String::new(),
            model: None,
            max_iterations: 16,
            thinking: false,
            tool_choice: None,
            skills: Vec::new(),
            tools: Vec::new(),
            mcps: Vec::new(),
            bash: BashSettings::default(),
            memory: MemorySettings::default(),
            compact_tool_max_len: 2000,
        }
    }
}

/// `[bash]` of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BashSettings {
    pub disabled: bool,
    /// Commands refused (matched against each word of the command line).
    pub deny: Vec<String>,
    /// Let gateway senders (`tg:…` and the like) use bash.
    pub allow_gateway: bool,
    pub timeout_secs: u64,
    /// Added to the environment of every command.
    pub env: BTreeMap<String, String>,
}

impl Default for BashSettings {
    fn default() -> Self {
        Self {
            disabled: false,
            deny: Vec::new(),
            allow_gateway: false,
            timeout_secs: 120,
            env: BTreeMap::new(),
        }
    }
}

/// `[memory]` of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemorySettings {
    pub enabled: bool,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// An MCP server an agent declares by value (RFC 0005): a command to spawn,
/// or a URL to connect to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerConfig {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A bearer token for `url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    pub auto_restart: bool,
}

impl AgentConfig {
    /// Parses and checks the text of an agent's file at `path`, as
    /// [`AgentStore::load`] does. `served`: the models the providers
    /// serve, when known.
    pub fn parse(path: &Path, text: &str, served: Option<&ServedModels>) -> Result<Self, Refusal> {
        let file = ConfigFile::new(path, text);
        let (config, mut problems) = file.parse_noting::<AgentConfig>()?;
        if let Err(err) = config.check_mcps() {
            problems.push(file.problem_at_key(&err.key(), &err));
        }
        if let (Some(model), Some(served)) = (&config.model, served)
            && !served.serves(model)
        {
            problems.push(file.problem_at_key(
                &KeyPath::keys(&["model"]),
                format!(
                    "model {model:?} is not served by any provider; the providers list {} (or remove `model` to use the default model); {PRESET_HINT}",
                    served.list()
                ),
            ));
        }
        Refusal::check(problems)?;
        Ok(config)
    }

    /// Checks the MCP servers: each name follows [`validate_server_name`]
    /// and appears once, and each server has a command or a url (not
    /// both). The error names the server and says what to change.
    pub fn check_mcps(&self) -> Result<(), McpServerError> {
        let mut seen = std::collections::BTreeSet::new();
        for (index, server) in self.mcps.iter().enumerate() {
            validate_server_name(&server.name)
                .map_err(|source| McpServerError::Name { index, source })?;
            if !seen.insert(server.name.as_str()) {
                return Err(McpServerError::Twice {
                    index,
                    name: server.name.clone(),
                });
            }
            if server.command.is_none() == server.url.is_none() {
                return Err(McpServerError::CommandOrUrl {
                    index,
                    name: server.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// This config with MCP env values and auth replaced by `<redacted>`.
    pub fn redacted(&self) -> Self {
        let mut copy = self.clone();
        for value in copy.bash.env.values_mut() {
            *value = REDACTED.into();
        }
        for mcp in &mut copy.mcps {
            for value in mcp.env.values_mut() {
                *value = REDACTED.into();
            }
            if mcp.auth.is_some() {
                mcp.auth = Some(REDACTED.into());
            }
        }
        copy
    }
}

/// A named agent with its prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDef {
    pub name: String,
    pub config: AgentConfig,
    pub prompt: String,
}

/// The longest MCP server name: its tools are offered as `<name>__<tool>`,
/// at most 64 characters, and the rest is left for the tool's own name.
pub const MAX_SERVER_NAME: usize = 24;

/// An agent asked for by a name no agent has; the text lists those there
/// are, so a model or a person can pick one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent {name:?} not found; agents: {}", agents.join(", "))]
pub struct UnknownAgent {
    pub name: String,
    /// The agents there are, by name.
    pub agents: Vec<String>,
}

/// The wire and the runtime answer with the message.
impl From<UnknownAgent> for String {
    fn from(unknown: UnknownAgent) -> Self {
        unknown.to_string()
    }
}

/// An MCP server name that breaks the rule of [`validate_server_name`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid MCP server name {name:?}: use 1-{MAX_SERVER_NAME} letters, digits, '-' or '_', \
     beginning and ending with a letter or digit, without \"__\" (tools are offered as \
     <server>__<tool>)"
)]
pub struct InvalidServerName {
    pub name: String,
}

/// Checks an MCP server name — the one rule for every name a server gets,
/// declared or discovered (see `mcp::names`); the error says what is
/// allowed.
pub fn validate_server_name(name: &str) -> Result<(), InvalidServerName> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let valid = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name.chars().all(allowed)
        && edge_ok(name.chars().next())
        && edge_ok(name.chars().last())
        && !name.contains("__");
    if valid {
        Ok(())
    } else {
        Err(InvalidServerName {
            name: name.to_owned(),
        })
    }
}

/// An agent name that cannot be one (see [`validate_agent_name`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid agent name {name:?}: use 1-64 letters, digits, '-', '_' or '.', not starting with '.'"
)]
pub struct InvalidAgentName {
    pub name: String,
}

/// Checks an agent name; the error says what is allowed.
pub fn validate_agent_name(name: &str) -> Result<(), InvalidAgentName> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(InvalidAgentName {
            name: name.to_owned(),
        })
    }
}

/// Why an agent's `[[mcps]]` cannot be used: which entry, and what to
/// change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpServerError {
    #[error("mcps[{index}].name: {source}")]
    Name {
        index: usize,
        source: InvalidServerName,
    },
    #[error(
        "mcps[{index}]: a second MCP server named {name:?}; each name may appear once per agent"
    )]
    Twice { index: usize, name: String },
    #[error("mcps[{index}] ({name:?}): give the server either a command or a url")]
    CommandOrUrl { index: usize, name: String },
}

impl McpServerError {
    /// Where in the agent's file the problem is.
    pub fn key(&self) -> KeyPath {
        let entry = |index: usize| KeyPath::keys(&["mcps"]).index(index);
        match self {
            Self::Name { index, .. } | Self::Twice { index, .. } => entry(*index).key("name"),
            Self::CommandOrUrl { index, .. } => entry(*index),
        }
    }
}

/// The `agents/` folder.
#[derive(Debug, Clone)]
pub struct AgentStore {
    dir: PathBuf,
}

/// An agent whose file was refused, and why.
#[derive(Debug, Clone)]
pub struct RefusedAgent {
    pub name: String,
    pub error: Refusal,
}

/// The agents found on disk, and the files that were refused.
#[derive(Debug, Default)]
pub struct LoadedAgents {
    pub agents: Vec<AgentDef>,
    pub refused: Vec<RefusedAgent>,
}

impl AgentStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn toml_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.toml"))
    }

    fn prompt_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.md"))
    }

    /// Reads every `*.toml` in the folder, sorted by name. A file with a
    /// problem is refused; the others still load. `served` is what
    /// [`super::DaemonConfig::served_models`] says.
    pub fn load_all(&self, served: Option<&ServedModels>) -> LoadedAgents {
        let mut loaded = LoadedAgents::default();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return loaded,
            Err(err) => {
                loaded.refused.push(RefusedAgent {
                    name: String::new(),
                    error: Problem::in_file(&self.dir, format!("cannot list the agents: {err}"))
                        .into(),
                });
                return loaded;
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                name.strip_suffix(".toml").map(str::to_owned)
            })
            .filter(|name| validate_agent_name(name).is_ok())
            .collect();
        names.sort();
        for name in names {
            match self.load(&name, served) {
                Ok(Some(agent)) => loaded.agents.push(agent),
                Ok(None) => {}
                Err(error) => loaded.refused.push(RefusedAgent { name, error }),
            }
        }
        loaded
    }

    /// Whether `name` has a definition file.
    pub fn exists(&self, name: &str) -> bool {
        self.toml_path(name).is_file()
    }

    /// Reads one agent; `None` when it does not exist. `served`: the models
    /// the providers serve, when known; an agent naming another is refused.
    pub fn load(
        &self,
        name: &str,
        served: Option<&ServedModels>,
    ) -> Result<Option<AgentDef>, Refusal> {
        let path = self.toml_path(name);
        let Some(file) = ConfigFile::open(&path)? else {
            return Ok(None);
        };
        let text = file.text();
        let config = AgentConfig::parse(&path, text, served)?;
        let prompt = match std::fs::read_to_string(self.prompt_path(name)) {
            Ok(prompt) => prompt,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => {
                return Err(Problem::in_file(
                    &self.prompt_path(name),
                    format!("cannot read it: {err}"),
                )
                .into());
            }
        };
        Ok(Some(AgentDef {
            name: name.to_owned(),
            config,
            prompt,
        }))
    }

    /// The file that defines `name`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.toml_path(name)
    }

    /// Writes an agent's files atomically (prompt first, then config, so a
    /// crash in between leaves the old config with the new prompt at worst).
    pub fn save(&self, agent: &AgentDef) -> std::io::Result<()> {
        let text = toml::to_string_pretty(&agent.config).map_err(std::io::Error::other)?;
        crabtalk_home::write_atomic_private(
            &self.prompt_path(&agent.name),
            agent.prompt.as_bytes(),
        )?;
        crabtalk_home::write_atomic_private(&self.toml_path(&agent.name), text.as_bytes())
    }

    /// Removes an agent's files (config first, so a half-removed agent is
    /// simply gone).
    pub fn delete(&self, name: &str) -> std::io::Result<()> {
        remove_if_present(&self.toml_path(name))?;
        remove_if_present(&self.prompt_path(name))
    }

    /// Renames an agent's files.
    pub fn rename(&self, old: &str, new: &str) -> std::io::Result<()> {
        if self.prompt_path(old).exists() {
            std::fs::rename(self.prompt_path(old), self.prompt_path(new))?;
        }
        std::fs::rename(self.toml_path(old), self.toml_path(new))
    }

    /// Creates the default agent with the built-in prompt if it is missing.
    pub fn ensure(&self, name: &str) -> std::io::Result<bool> {
        if self.toml_path(name).exists() {
            return Ok(false);
        }
        let agent = AgentDef {
            name: name.to_owned(),
            config: AgentConfig {
                description: "The default assistant.".into(),
                ..AgentConfig::default()
            },
            prompt: DEFAULT_PROMPT.into(),
        };
        self.save(&agent)?;
        Ok(true)
    }
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_are_safe_file_names() {
        for good in ["crab", "Research-Bot_2", "v1.2"] {
            assert!(validate_agent_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "../x", "a b", "é", &"x".repeat(65)] {
            assert!(validate_agent_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn save_load_rename_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = AgentStore::new(dir.path().join("agents"));
        assert!(store.ensure("crab").unwrap());
        assert!(!store.ensure("crab").unwrap());
        let crab = store.load("crab", None).unwrap().unwrap();
        assert_eq!(crab.prompt, DEFAULT_PROMPT);
        assert_eq!(crab.config.max_iterations, 16);

        let mut other = crab.clone();
        other.name = "scout".into();
        other.config.tools = vec!["read".into()];
        store.save(&other).unwrap();
        store.rename("scout", "ranger").unwrap();
        let loaded = store.load_all(None);
        let names: Vec<_> = loaded.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["crab", "ranger"]);
        assert_eq!(loaded.agents[1].config.tools, ["read"]);
        store.delete("ranger").unwrap();
        assert!(store.load("ranger", None).unwrap().is_none());
    }

    #[test]
    fn broken_agents_are_refused_and_the_rest_load() {
        let dir = tempfile::tempdir().unwrap();
        let store = AgentStore::new(dir.path());
        store.ensure("crab").unwrap();
        std::fs::write(
            dir.path().join("broken.toml"),
            "max_iterations = \"many\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("odd.toml"),
            "tols = [\"read\"]\n\n[bash]\ncolour = \"red\"\n\n[[mcps]]\nname = \"x\"\ncomand = \"x\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("picky.toml"), "model = \"gpt-9\"\n").unwrap();
        std::fs::write(
            dir.path().join("fast.toml"),
            "model = \"groq/llama-3.3-70b-versatile\"\n",
        )
        .unwrap();
        let served = ServedModels {
            names: ["gpt-4o".to_owned()].into(),
            presets: vec!["groq".into()],
        };
        let loaded = store.load_all(Some(&served));
        let mut names: Vec<_> = loaded.agents.iter().map(|a| a.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["crab", "fast"], "a preset's model is served");
        let refused: Vec<String> = loaded
            .refused
            .iter()
            .map(|r| format!("{}: {}", r.name, r.error))
            .collect();
        let text = refused.join("\n");
        assert!(text.contains("broken.toml:1:18"), "{text}");
        assert!(
            text.contains("odd.toml:1:1: unknown key `tols`; did you mean `tools`?"),
            "{text}"
        );
        assert!(
            text.contains("odd.toml:4:1: unknown key `colour` in [bash]; the keys here are"),
            "{text}"
        );
        assert!(
            text.contains(
                "odd.toml:8:1: unknown key `comand` in [[mcps]]; did you mean `command`?"
            ),
            "{text}"
        );
        assert!(
            text.contains("picky.toml:1:1: model \"gpt-9\" is not served by any provider; the providers list gpt-4o"),
            "{text}"
        );
    }

    #[test]
    fn every_key_an_agent_can_set_is_known() {
        let text = "description = \"d\"\nmodel = \"m\"\nmax_iterations = 1\nthinking = true\ntool_choice = \"auto\"\nskills = []\ntools = []\ncompact_tool_max_len = 1\n[bash]\ndisabled = true\ndeny = []\nallow_gateway = true\ntimeout_secs = 1\nenv = {}\n[memory]\nenabled = true\n[[mcps]]\nname = \"n\"\ncommand = \"c\"\nargs = []\nenv = {}\nurl = \"u\"\nauth = \"a\"\nauto_restart = true\n";
        let file = ConfigFile::new("agents/a.toml", text);
        let (config, problems) = file.parse_noting::<AgentConfig>().unwrap();
        assert_eq!(problems, Vec::new());
        // The text sets every field there is.
        let json = serde_json::to_value(&config).unwrap();
        for (key, value) in json.as_object().unwrap() {
            assert!(
                text.contains(&format!("{key} ="))
                    || text.contains(&format!("[{key}]"))
                    || text.contains(&format!("[[{key}]]")),
                "{key}"
            );
            let value = value.as_array().and_then(|a| a.first()).unwrap_or(value);
            for inner in value.as_object().into_iter().flat_map(|inner| inner.keys()) {
                assert!(text.contains(&format!("{inner} =")), "{key}.{inner}");
            }
        }
    }

    #[test]
    fn unknown_keys_in_agent_json_are_found_too() {
        let json = r#"{"tols": ["read"], "mcps": [{"name": "x", "comand": "y"}]}"#;
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let (_config, unknown): (AgentConfig, _) =
            crabtalk_kit::config::deserialize_noting_unknown(&mut deserializer).unwrap();
        let messages: Vec<String> = unknown.iter().map(|key| key.message()).collect();
        assert_eq!(
            messages,
            [
                "unknown key `tols`; did you mean `tools`?",
                "unknown key `comand` in [[mcps]]; did you mean `command`?",
            ]
        );
    }

    #[test]
    fn server_names_follow_one_rule() {
        for good in ["calc", "GitHub", "web-search", "db_2", "a", &"x".repeat(24)] {
            assert!(validate_server_name(good).is_ok(), "{good:?}");
        }
        for bad in [
            "",
            "my server",
            "a__b",
            "_calc",
            "calc_",
            "-x",
            "é",
            "a.b",
            &"x".repeat(25),
        ] {
            let err = validate_server_name(bad).unwrap_err().to_string();
            assert!(err.contains("invalid MCP server name"), "{err}");
        }
    }

    #[test]
    fn an_agent_file_with_an_unusable_mcp_server_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = AgentStore::new(dir.path());
        for (file, text, expected) in [
            (
                "empty",
                "[[mcps]]\nname = \"\"\ncommand = \"x\"\n",
                "mcps[0].name",
            ),
            (
                "twice",
                "[[mcps]]\nname = \"a\"\ncommand = \"x\"\n[[mcps]]\nname = \"a\"\nurl = \"http://h\"\n",
                "mcps[1]: a second MCP server named \"a\"",
            ),
            (
                "neither",
                "[[mcps]]\nname = \"a\"\n",
                "either a command or a url",
            ),
        ] {
            std::fs::write(dir.path().join(format!("{file}.toml")), text).unwrap();
            let err = store.load(file, None).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{file}.toml")) && err.contains(expected),
                "{err}"
            );
        }
    }

    #[test]
    fn an_unusable_mcp_server_is_placed_at_its_entry() {
        let path = Path::new("agents/a.toml");
        for (text, position, error) in [
            (
                "[[mcps]]\nname = \"\"\ncommand = \"x\"\n",
                (2, 1),
                McpServerError::Name {
                    index: 0,
                    source: InvalidServerName {
                        name: String::new(),
                    },
                },
            ),
            (
                "[[mcps]]\nname = \"a\"\ncommand = \"x\"\n\n[[mcps]]\nname = \"a\"\nurl = \"http://h\"\n",
                (6, 1),
                McpServerError::Twice {
                    index: 1,
                    name: "a".into(),
                },
            ),
        ] {
            let config: AgentConfig = toml::from_str(text).unwrap();
            assert_eq!(config.check_mcps(), Err(error.clone()));
            let refusal = AgentConfig::parse(path, text, None).unwrap_err();
            assert_eq!(refusal.problems[0].position, Some(position), "{refusal}");
            assert_eq!(refusal.problems[0].message, error.to_string());
        }
    }

    #[test]
    fn mcp_secrets_are_redacted() {
        let config = AgentConfig {
            mcps: vec![McpServerConfig {
                name: "gh".into(),
                env: [("TOKEN".to_owned(), "secret".to_owned())].into(),
                auth: Some("bearer".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let json = serde_json::to_string(&config.redacted()).unwrap();
        assert!(
            !json.contains("secret") && !json.contains("bearer"),
            "{json}"
        );
    }
}
