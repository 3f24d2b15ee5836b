//! Reading `config.toml` with every problem named by file, line and column:
//! the kit's loader reads the file and names its unknown keys; the checks
//! here are the daemon's own.

use std::path::Path;

use crabtalk_kit::closest;
use crabtalk_kit::config::{ConfigFile, KeyPath, Problem, Refusal};

use super::agent::validate_agent_name;
use super::{DaemonConfig, PRESET_HINT};

/// The provider kinds the daemon knows besides crabllm's compatible
/// services (`deepseek`, …).
const PROVIDER_KINDS: &[&str] = &[
    "openai",
    "anthropic",
    "google",
    "azure",
    "ollama",
    "openai-compatible",
    "openai_compatible",
    "bedrock",
];

/// Every provider kind a `[[providers]]` entry may name.
pub(super) fn provider_kinds() -> Vec<&'static str> {
    let mut kinds = PROVIDER_KINDS.to_vec();
    kinds.extend(
        crabllm_provider::compat::COMPAT
            .iter()
            .map(|service| service.name),
    );
    kinds
}

impl DaemonConfig {
    /// Loads `config.toml`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Self, Refusal> {
        match ConfigFile::open(path)? {
            Some(file) => Self::parse(path, file.text()),
            None => Ok(Self::default()),
        }
    }

    /// Parses and checks the text of `config.toml`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, Refusal> {
        let file = ConfigFile::new(path, text);
        let (value, mut problems) = file.parse_noting::<Self>()?;
        problems.extend(value.validate(&file));
        Refusal::check(problems)?;
        Ok(value)
    }

    fn validate(&self, file: &ConfigFile) -> Vec<Problem> {
        let mut problems = Vec::new();
        let at = |keys: KeyPath, message: String| file.problem_at_key(&keys, message);
        if let Err(err) = validate_agent_name(&self.default_agent) {
            problems.push(at(
                KeyPath::keys(&["default_agent"]),
                format!("default_agent: {err}"),
            ));
        }
        let kinds = provider_kinds();
        for (name, preset) in &self.presets {
            let table = KeyPath::keys(&["presets"]).key(name);
            if let Some(problem) = super::presets::entry_problem(name, preset) {
                problems.push(at(table.clone(), problem));
            }
            if let Some(kind) = preset.kind.as_deref()
                && !kinds.contains(&kind.trim())
            {
                let hint = match closest(kind, &kinds) {
                    Some(likely) => format!("did you mean \"{likely}\"? "),
                    None => String::new(),
                };
                problems.push(at(
                    table.key("kind"),
                    format!(
                        "unknown provider kind {kind:?} in [presets.{name}]; {hint}the kinds are {}",
                        kinds.join(", ")
                    ),
                ));
            }
        }
        for (i, provider) in self.providers.iter().enumerate() {
            let entry = KeyPath::keys(&["providers"]).index(i);
            let kind = provider.kind.trim();
            if kind.is_empty() {
                problems.push(at(
                    entry,
                    "this [[providers]] entry has no `kind`; set kind = \"openai\" (any OpenAI-compatible API), \"anthropic\", \"google\", \"azure\" or \"ollama\"".into(),
                ));
            } else if !kinds.contains(&kind) {
                let hint = match closest(kind, &kinds) {
                    Some(likely) => format!("did you mean \"{likely}\"? "),
                    None => String::new(),
                };
                problems.push(at(
                    entry.key("kind"),
                    format!(
                        "unknown provider kind {kind:?}; {hint}the kinds are {} (use \"openai-compatible\" with base_url for any other OpenAI-compatible API)",
                        kinds.join(", ")
                    ),
                ));
            }
        }
        if self.transport.tcp != "off"
            && self.transport.tcp.parse::<std::net::SocketAddr>().is_err()
        {
            problems.push(at(
                KeyPath::keys(&["transport", "tcp"]),
                format!(
                    "[transport] tcp = {:?} is not an address; use \"127.0.0.1:6688\", \"0.0.0.0:6688\" (with a token) or \"off\"",
                    self.transport.tcp
                ),
            ));
        }
        for (i, prefix) in self.gateway.senders.iter().enumerate() {
            if prefix.trim().is_empty() {
                problems.push(at(
                    KeyPath::keys(&["gateway", "senders"]),
                    format!(
                        "[gateway] senders[{i}] is empty, which would make every sender a gateway sender; remove it (prefixes look like \"tg:\")"
                    ),
                ));
            }
        }
        for (i, tool) in self.gateway.deny_tools.iter().enumerate() {
            if tool.trim().is_empty() || tool == "*" {
                problems.push(at(
                    KeyPath::keys(&["gateway", "deny_tools"]),
                    format!(
                        "[gateway] deny_tools[{i}] = {tool:?} names no tool; list tool names (\"bash\") or prefixes ending in * (\"cron__*\")"
                    ),
                ));
            }
        }
        if let Some(problem) = self.transport.token.as_deref().and_then(token_problem) {
            problems.push(at(KeyPath::keys(&["transport", "token"]), problem));
        }
        if let (Some(model), Some(served)) = (&self.default_model, self.served_models())
            && !served.serves(model)
        {
            problems.push(at(
                KeyPath::keys(&["default_model"]),
                format!(
                    "default_model {model:?} is not served by any provider; the providers list {}; {PRESET_HINT}",
                    served.list()
                ),
            ));
        }
        problems
    }
}

/// What is wrong with a `[transport] token`, if anything: clients send it
/// as it is written, and read `run/token` trimmed, so it must be something
/// other than blanks, without blanks at its ends or control characters.
fn token_problem(token: &str) -> Option<String> {
    const HOW: &str = "set a long random value (e.g. the output of `openssl rand -hex 32`), or leave the key out and the daemon keeps a random token in run/token";
    if token.trim().is_empty() {
        return Some(format!(
            "[transport] token is empty; an empty token would let anyone in: {HOW}"
        ));
    }
    if token.trim() != token {
        return Some(format!(
            "[transport] token has blanks at its start or end, which clients reading run/token drop; remove them, or {HOW}"
        ));
    }
    if token.chars().any(char::is_control) {
        return Some(format!(
            "[transport] token contains a control character; {HOW}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("config.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_missing_file_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let config = DaemonConfig::load(&dir.path().join("config.toml")).unwrap();
        assert_eq!(config.default_agent, "crab");
        assert_eq!(config.transport.tcp, "127.0.0.1:6688");
    }

    /// Found by the fuzzer (`components/fuzz/corpus/daemon_config/not-utf8`): a
    /// `config.toml` or an agent's file that is not UTF-8 was refused
    /// without a line and column.
    #[test]
    fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, b"default_agent = \"cr\xffab\"\n").unwrap();
        let err = DaemonConfig::load(&path).unwrap_err();
        assert_eq!(err.problems.len(), 1);
        assert_eq!(err.problems[0].position, Some((1, 20)));
        assert!(err.to_string().contains("byte 0xff is not UTF-8"), "{err}");

        let agents = crate::config::agent::AgentStore::new(dir.path());
        std::fs::write(dir.path().join("scout.toml"), b"model = \"x\"\n\n\x80").unwrap();
        let err = agents.load("scout", None).unwrap_err();
        assert_eq!(err.problems[0].position, Some((3, 1)));
    }

    #[test]
    fn bad_toml_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "default_agent = \"crab\"\n[transport]\ntcp = = 1\n",
        );
        let err = DaemonConfig::load(&path).unwrap_err();
        assert_eq!(err.problems.len(), 1);
        assert_eq!(err.problems[0].position, Some((3, 7)));
        assert!(err.to_string().contains("config.toml:3:7"), "{err}");
    }

    #[test]
    fn a_wrong_type_is_an_error_with_its_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "[llm]\nmax_retries = \"two\"\n");
        let err = DaemonConfig::load(&path).unwrap_err();
        assert!(err.to_string().contains("config.toml:2:"), "{err}");
    }

    #[test]
    fn every_unknown_key_is_refused_where_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "defualt_model = \"x\"\n[transport]\ntpc = \"off\"\n[[providers]]\nkind = \"openai\"\nmodel = \"gpt\"\n",
        );
        let err = DaemonConfig::load(&path).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 3, "{text}");
        assert!(
            text.contains(
                "config.toml:1:1: unknown key `defualt_model`; did you mean `default_model`?"
            ),
            "{text}"
        );
        assert!(
            text.contains("config.toml:3:1: unknown key `tpc` in [transport]; did you mean `tcp`?"),
            "{text}"
        );
        assert!(
            text.contains(
                "config.toml:6:1: unknown key `model` in [[providers]]; did you mean `models`?"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_unknown_provider_kind_is_refused_with_the_likely_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "[[providers]]\nkind = \"openai\"\n\n[[providers]]\nkind = \"antropic\"\napi_key = \"k\"\n",
        );
        let err = DaemonConfig::load(&path).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(
                "config.toml:5:1: unknown provider kind \"antropic\"; did you mean \"anthropic\"?"
            ),
            "{text}"
        );
        // Compatible services are kinds too.
        let path = write(
            dir.path(),
            "[[providers]]\nkind = \"deepseek\"\napi_key = \"k\"\n",
        );
        DaemonConfig::load(&path).unwrap();
    }

    #[test]
    fn presets_are_checked_where_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "[presets.groq]\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[presets.grok]\napi_key_env = \"GROK\"\n\n[presets.lab]\nbase_url = \"http://lab/v1\"\nkind = \"opena\"\nkey = \"x\"\n",
        );
        let text = DaemonConfig::load(&path).unwrap_err().to_string();
        assert!(
            text.contains(
                "config.toml:4:10: [presets.grok] is not a built-in preset, so it needs base_url"
            ) && text.contains("did you mean [presets.groq]?"),
            "{text}"
        );
        assert!(
            text.contains("config.toml:9:1: unknown provider kind \"opena\" in [presets.lab]; did you mean \"openai\"?"),
            "{text}"
        );
        assert!(
            text.contains("config.toml:10:1: unknown key `key` in [presets.lab]"),
            "{text}"
        );
        // A preset's model is served: not refused as a default_model.
        let path = write(
            dir.path(),
            "default_model = \"groq/llama-3.3-70b-versatile\"\n[[providers]]\nkind = \"openai\"\nmodels = [\"gpt-4o\"]\n[presets.groq]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        );
        DaemonConfig::load(&path).unwrap();
    }

    #[test]
    fn a_default_model_no_provider_lists_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "default_model = \"gpt-5\"\n[[providers]]\nkind = \"openai\"\nmodels = [\"gpt-4o\", \"o3\"]\n",
        );
        let err = DaemonConfig::load(&path).unwrap_err();
        assert!(
            err.to_string().contains(
                "config.toml:1:1: default_model \"gpt-5\" is not served by any provider; the providers list gpt-4o, o3"
            ),
            "{err}"
        );
        // A provider that discovers its models may serve it: not refused.
        let path = write(
            dir.path(),
            "default_model = \"gpt-5\"\n[[providers]]\nkind = \"openai\"\n",
        );
        DaemonConfig::load(&path).unwrap();
    }

    #[test]
    fn an_empty_or_blank_token_is_refused_where_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        for (token, says) in [
            ("\"\"", "is empty"),
            ("\"   \"", "is empty"),
            ("\"\\t\"", "is empty"),
            ("\" padded\"", "blanks at its start or end"),
            ("\"a\\u0007b\"", "control character"),
        ] {
            let path = write(
                dir.path(),
                &format!(
                    "default_agent = \"crab\"\n[transport]\ntcp = \"127.0.0.1:0\"\ntoken = {token}\n"
                ),
            );
            let err = DaemonConfig::load(&path).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("config.toml:4:1: [transport] token"),
                "{text}"
            );
            assert!(text.contains(says), "{token}: {text}");
        }
        let path = write(dir.path(), "[transport]\ntoken = \"a-good-token\"\n");
        let config = DaemonConfig::load(&path).unwrap();
        assert_eq!(config.transport.token.as_deref(), Some("a-good-token"));
        let path = write(dir.path(), "[transport]\ntcp = \"off\"\n");
        assert_eq!(DaemonConfig::load(&path).unwrap().transport.token, None);
    }

    #[test]
    fn a_bad_tcp_address_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "[transport]\ntcp = \"localhost\"\n");
        let err = DaemonConfig::load(&path).unwrap_err();
        assert!(err.to_string().contains("config.toml:2:1"), "{err}");
        assert!(err.to_string().contains("\"off\""), "{err}");
    }
}
