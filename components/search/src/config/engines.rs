//! `[engines.<name>]`: the engines the service knows and their tables.

use std::fmt;

use serde::Deserialize;

/// An engine the service can ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineId {
    DuckDuckGo,
    Bing,
    Mojeek,
    Wikipedia,
    Brave,
    Searxng,
}

impl EngineId {
    /// Every engine, in the order answers list them.
    pub const ALL: [EngineId; 6] = [
        EngineId::DuckDuckGo,
        EngineId::Bing,
        EngineId::Mojeek,
        EngineId::Wikipedia,
        EngineId::Brave,
        EngineId::Searxng,
    ];

    /// The name in `search.toml`, in answers and in `engines` arguments.
    pub fn name(self) -> &'static str {
        match self {
            EngineId::DuckDuckGo => "duckduckgo",
            EngineId::Bing => "bing",
            EngineId::Mojeek => "mojeek",
            EngineId::Wikipedia => "wikipedia",
            EngineId::Brave => "brave",
            EngineId::Searxng => "searxng",
        }
    }

    /// The engine called `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|id| id.name() == name)
    }

    /// The names of every engine, for messages.
    pub fn names() -> String {
        Self::ALL.map(EngineId::name).join(", ")
    }

    /// Where the real service is. Wikipedia's has `{lang}` for the language.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            EngineId::DuckDuckGo => Some("https://html.duckduckgo.com"),
            EngineId::Bing => Some("https://www.bing.com"),
            EngineId::Mojeek => Some("https://www.mojeek.com"),
            EngineId::Wikipedia => Some("https://{lang}.wikipedia.org"),
            EngineId::Brave => Some("https://api.search.brave.com"),
            // There is no default instance: each is someone's server.
            EngineId::Searxng => None,
        }
    }
}

impl fmt::Display for EngineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The keys every engine's table has.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EngineConfig {
    /// On or off (default: on where the engine can work).
    pub enabled: Option<bool>,
    /// Where to send the query (tests point it at 127.0.0.1).
    pub base_url: Option<String>,
    /// Its weight in fusion (default 1.0).
    pub weight: Option<f64>,
    /// Its own timeout (default `[search] timeout_ms`).
    pub timeout_ms: Option<u64>,
}

/// `[engines.wikipedia]`: the common keys and the language.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WikipediaConfig {
    pub enabled: Option<bool>,
    pub base_url: Option<String>,
    pub weight: Option<f64>,
    pub timeout_ms: Option<u64>,
    /// Which Wikipedia (default `en`; a call's `lang` overrides it).
    pub language: Option<String>,
}

/// `[engines.brave]`: the common keys and where the key is.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BraveConfig {
    pub enabled: Option<bool>,
    pub base_url: Option<String>,
    pub weight: Option<f64>,
    pub timeout_ms: Option<u64>,
    /// The environment variable holding the API key (default `BRAVE_API_KEY`;
    /// `$CRABTALK_HOME/env` is loaded at start).
    pub api_key_env: Option<String>,
}

/// `[engines]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EnginesConfig {
    pub duckduckgo: EngineConfig,
    pub bing: EngineConfig,
    pub mojeek: EngineConfig,
    pub wikipedia: WikipediaConfig,
    pub brave: BraveConfig,
    pub searxng: EngineConfig,
}

impl EnginesConfig {
    /// The common keys of `id`'s table.
    pub fn common(&self, id: EngineId) -> EngineConfig {
        match id {
            EngineId::DuckDuckGo => self.duckduckgo.clone(),
            EngineId::Bing => self.bing.clone(),
            EngineId::Mojeek => self.mojeek.clone(),
            EngineId::Searxng => self.searxng.clone(),
            EngineId::Wikipedia => EngineConfig {
                enabled: self.wikipedia.enabled,
                base_url: self.wikipedia.base_url.clone(),
                weight: self.wikipedia.weight,
                timeout_ms: self.wikipedia.timeout_ms,
            },
            EngineId::Brave => EngineConfig {
                enabled: self.brave.enabled,
                base_url: self.brave.base_url.clone(),
                weight: self.brave.weight,
                timeout_ms: self.brave.timeout_ms,
            },
        }
    }
}
