//! Providers by name: `model = "groq/llama-3.3-70b-versatile"` reaches Groq
//! with nothing configured but `GROQ_API_KEY` (RFC 0023).
//!
//! A preset is a provider the daemon knows by name — its API kind, base
//! URL and the variables its key may be in. A model named `<preset>/<model>`
//! goes to that preset's provider as `<model>`. Presets are matched by the
//! longest name first, so `[presets."openrouter/free"]` in `config.toml`
//! takes `openrouter/free/…` away from `openrouter`. Models the configured
//! `[[providers]]` list by their exact name come first: a preset is asked
//! only for a name no provider serves.
//!
//! The built-in presets are `crabtalk-home`'s
//! [`PROVIDER_PRESETS`](crabtalk_home::provider_env::PROVIDER_PRESETS) (so
//! tools that tell a person what the daemon will find read the same
//! table). `[presets.<name>]` in `config.toml` overrides any field of a
//! built-in preset (a proxy's `base_url`, another key variable) or adds a preset of
//! its own (which then needs a `base_url`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crabtalk_home::provider_env::{OllamaAddress, PROVIDER_PRESETS as BUILTIN};

/// The names of the built-in presets, in the order `crabtalkd check` lists
/// them.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|builtin| builtin.name)
}

/// `[presets.<name>]` in `config.toml`: every field optional for a
/// built-in preset; a new preset needs `base_url`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PresetEntry {
    /// The API kind, as `[[providers]] kind` (default for a new preset:
    /// "openai-compatible").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The key itself (prefer `api_key_env`, or the home's `env` file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The variable the key is read from, instead of the preset's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

/// Where a preset's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PresetKey {
    /// `api_key` in `config.toml`.
    Configured(String),
    /// Read from one of these variables, the first set one.
    FromEnv(Vec<String>),
    /// None is needed (a local Ollama).
    None,
}

/// One preset, built-in and `config.toml` merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    pub name: String,
    pub kind: String,
    pub base_url: String,
    pub key: PresetKey,
    /// Whether `config.toml` changes or adds it.
    pub configured: bool,
}

/// The key a preset found, or why it found none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    /// The key, and where it was (`GROQ_API_KEY`, `config.toml`).
    Found { key: String, source: String },
    /// No key is needed.
    NotNeeded,
    /// None of these variables is set.
    Missing(Vec<String>),
}

impl Preset {
    /// Whether `model` names this preset: `<name>/<something>`; the
    /// model's name at the provider.
    pub fn strip<'a>(&self, model: &'a str) -> Option<&'a str> {
        model
            .strip_prefix(self.name.as_str())?
            .strip_prefix('/')
            .filter(|rest| !rest.trim().is_empty())
    }

    /// This preset's key, read through `var` (the process environment, in
    /// the daemon).
    pub fn lookup_key(&self, var: impl Fn(&str) -> Option<String>) -> KeyLookup {
        match &self.key {
            PresetKey::Configured(key) => KeyLookup::Found {
                key: key.clone(),
                source: "api_key in config.toml".into(),
            },
            PresetKey::None => KeyLookup::NotNeeded,
            PresetKey::FromEnv(vars) => vars
                .iter()
                .find_map(|name| {
                    var(name)
                        .filter(|value| !value.trim().is_empty())
                        .map(|key| KeyLookup::Found {
                            key,
                            source: name.clone(),
                        })
                })
                .unwrap_or_else(|| KeyLookup::Missing(vars.clone())),
        }
    }
}

/// Every preset — the built-in ones with `configured` applied, then the
/// ones `configured` adds — longest name first (so the most specific
/// prefix wins), then by name. `ollama_host`: the value of `OLLAMA_HOST`.
pub fn presets(
    configured: &BTreeMap<String, PresetEntry>,
    ollama_host: Option<&str>,
) -> Vec<Preset> {
    let mut all: Vec<Preset> = BUILTIN
        .iter()
        .map(|builtin| {
            let base_url = match (builtin.name, ollama_host) {
                ("ollama", Some(host)) if !host.trim().is_empty() => {
                    OllamaAddress::parse(Some(host)).base_url()
                }
                _ => builtin.base_url.to_owned(),
            };
            let key = if builtin.key_vars.is_empty() {
                PresetKey::None
            } else {
                PresetKey::FromEnv(builtin.key_vars.iter().map(|v| v.to_string()).collect())
            };
            Preset {
                name: builtin.name.to_owned(),
                kind: builtin.kind.to_owned(),
                base_url,
                key,
                configured: false,
            }
        })
        .collect();
    for (name, entry) in configured {
        let preset = match all.iter_mut().find(|preset| preset.name == *name) {
            Some(preset) => preset,
            None => {
                all.push(Preset {
                    name: name.clone(),
                    kind: "openai-compatible".into(),
                    base_url: String::new(),
                    key: PresetKey::None,
                    configured: true,
                });
                all.last_mut().expect("just pushed")
            }
        };
        preset.configured = true;
        if let Some(kind) = &entry.kind {
            preset.kind = kind.clone();
        }
        if let Some(url) = &entry.base_url {
            preset.base_url = url.clone();
        }
        if let Some(var) = &entry.api_key_env {
            preset.key = PresetKey::FromEnv(vec![var.clone()]);
        }
        if let Some(key) = &entry.api_key {
            preset.key = PresetKey::Configured(key.clone());
        }
    }
    all.sort_by(|a, b| b.name.len().cmp(&a.name.len()).then(a.name.cmp(&b.name)));
    all
}

/// The preset `model` names, if any, and the model's name at its provider.
pub fn route<'p, 'm>(presets: &'p [Preset], model: &'m str) -> Option<(&'p Preset, &'m str)> {
    presets
        .iter()
        .find_map(|preset| preset.strip(model).map(|rest| (preset, rest)))
}

/// What is wrong with `[presets.<name>]`, if anything.
pub(super) fn entry_problem(name: &str, entry: &PresetEntry) -> Option<String> {
    if name.trim().is_empty()
        || name.starts_with('/')
        || name.ends_with('/')
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Some(format!(
            "[presets.{name:?}]: a preset's name is the prefix of the models it serves \
             (\"groq\" for \"groq/llama-3.3-70b-versatile\"): no blanks, no '/' at either end"
        ));
    }
    let builtin = BUILTIN.iter().any(|builtin| builtin.name == name);
    if !builtin
        && entry
            .base_url
            .as_deref()
            .is_none_or(|url| url.trim().is_empty())
    {
        let known: Vec<&str> = builtin_names().collect();
        let hint = match crabtalk_kit::closest(name, &known) {
            Some(likely) => format!("did you mean [presets.{likely}]? "),
            None => String::new(),
        };
        return Some(format!(
            "[presets.{name}] is not a built-in preset, so it needs base_url = \"https://…/v1\"; \
             {hint}the built-in presets are {}",
            known.join(", ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> PresetEntry {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_model_goes_to_the_preset_its_prefix_names_longest_first() {
        let mut configured = BTreeMap::new();
        configured.insert(
            "openrouter/free".to_owned(),
            entry("base_url = \"http://127.0.0.1:1/free/v1\""),
        );
        let all = presets(&configured, None);
        let routed = |model| route(&all, model).map(|(preset, rest)| (preset.name.as_str(), rest));
        assert_eq!(
            routed("groq/llama-3.3-70b-versatile"),
            Some(("groq", "llama-3.3-70b-versatile"))
        );
        assert_eq!(
            routed("openrouter/anthropic/claude-sonnet-4"),
            Some(("openrouter", "anthropic/claude-sonnet-4"))
        );
        assert_eq!(
            routed("openrouter/free/llama"),
            Some(("openrouter/free", "llama"))
        );
        assert_eq!(routed("gemini/gemini-2.5-flash").unwrap().0, "gemini");
        // A name is a whole segment: "openai" is not a prefix of
        // "openairy/x", and a bare preset name names no model.
        assert_eq!(routed("openairy/x"), None);
        assert_eq!(routed("groq"), None);
        assert_eq!(routed("groq/"), None);
        assert_eq!(routed("gpt-4o"), None);
        for name in [
            "openai",
            "anthropic",
            "gemini",
            "groq",
            "deepseek",
            "mistral",
            "openrouter",
            "together",
            "xai",
            "ollama",
        ] {
            assert!(
                all.iter()
                    .any(|preset| preset.name == name && !preset.configured),
                "{name}"
            );
        }
    }

    #[test]
    fn config_toml_overrides_a_builtin_field_by_field_and_adds_its_own() {
        let mut configured = BTreeMap::new();
        configured.insert(
            "groq".to_owned(),
            entry("base_url = \"http://127.0.0.1:9/v1\""),
        );
        configured.insert("xai".to_owned(), entry("api_key_env = \"GROK_KEY\""));
        configured.insert(
            "lab".to_owned(),
            entry("base_url = \"http://lab:8000/v1\"\napi_key = \"k\""),
        );
        let all = presets(&configured, Some("gpu-box:9999"));
        let get = |name: &str| all.iter().find(|preset| preset.name == name).unwrap();
        let groq = get("groq");
        assert_eq!(
            (groq.base_url.as_str(), groq.kind.as_str(), groq.configured),
            ("http://127.0.0.1:9/v1", "openai-compatible", true)
        );
        assert_eq!(groq.key, PresetKey::FromEnv(vec!["GROQ_API_KEY".into()]));
        assert_eq!(get("xai").key, PresetKey::FromEnv(vec!["GROK_KEY".into()]));
        assert_eq!(get("xai").base_url, "https://api.x.ai/v1");
        assert_eq!(get("lab").key, PresetKey::Configured("k".into()));
        assert_eq!(get("ollama").base_url, "http://gpu-box:9999/v1");
        assert_eq!(get("ollama").key, PresetKey::None);
    }

    #[test]
    fn keys_are_looked_up_in_order_and_blank_ones_do_not_count() {
        let all = presets(&BTreeMap::new(), None);
        let gemini = all.iter().find(|preset| preset.name == "gemini").unwrap();
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            }
        };
        assert_eq!(
            gemini.lookup_key(env(&[("GOOGLE_API_KEY", "g"), ("GEMINI_API_KEY", "  ")])),
            KeyLookup::Found {
                key: "g".into(),
                source: "GOOGLE_API_KEY".into()
            }
        );
        assert_eq!(
            gemini.lookup_key(env(&[])),
            KeyLookup::Missing(vec!["GEMINI_API_KEY".into(), "GOOGLE_API_KEY".into()])
        );
        let ollama = all.iter().find(|preset| preset.name == "ollama").unwrap();
        assert_eq!(ollama.lookup_key(env(&[])), KeyLookup::NotNeeded);
    }

    #[test]
    fn bad_entries_are_explained() {
        assert!(entry_problem("groq", &PresetEntry::default()).is_none());
        let problem = entry_problem("grok", &PresetEntry::default()).unwrap();
        assert!(
            problem.contains("needs base_url") && problem.contains("did you mean [presets.groq]"),
            "{problem}"
        );
        assert!(entry_problem("lab", &entry("base_url = \"http://x/v1\"")).is_none());
        assert!(entry_problem("lab/", &entry("base_url = \"http://x/v1\"")).is_some());
        assert!(entry_problem("a b", &entry("base_url = \"http://x/v1\"")).is_some());
    }
}
