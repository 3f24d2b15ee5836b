//! [`Settings`]: `search.toml` resolved into what the service works with —
//! each engine on or off (and why), its URL, weight and timeout; the
//! Brave key read from the environment.

use std::time::Duration;

use super::{CacheConfig, EngineId, HealthConfig, SearchConfig};
use crate::address::AddressPolicy;

/// One engine, ready to be asked.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    pub id: EngineId,
    pub enabled: bool,
    /// Why it is off, when it is (`BRAVE_API_KEY is not set`).
    pub off_because: Option<String>,
    /// Without a trailing slash; Wikipedia's may hold `{lang}`.
    pub base_url: String,
    pub weight: f64,
    pub timeout: Duration,
    /// Wikipedia's default language.
    pub language: String,
    /// Brave's key.
    pub api_key: Option<String>,
}

/// `web_fetch`'s settings.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub policy: AddressPolicy,
    pub max_bytes: usize,
    pub max_chars: usize,
    pub timeout: Duration,
    /// Making one page readable.
    pub process_time: Duration,
    /// Fetches at once.
    pub max_concurrent: usize,
    pub user_agent: String,
}

/// Everything the service works from.
#[derive(Debug, Clone)]
pub struct Settings {
    pub engines: Vec<EngineSettings>,
    pub deadline: Duration,
    pub count: usize,
    pub user_agent: String,
    pub health: HealthConfig,
    pub cache: CacheConfig,
    pub fetch: FetchSettings,
}

impl Settings {
    /// Resolves `config`, reading API keys with `env` (`std::env::var`
    /// in the service; a map in tests).
    pub fn resolve(config: &SearchConfig, env: impl Fn(&str) -> Option<String>) -> Self {
        let default_timeout = Duration::from_millis(config.search.timeout_ms);
        let engines = EngineId::ALL
            .into_iter()
            .map(|id| {
                let common = config.engines.common(id);
                let base_url = common
                    .base_url
                    .clone()
                    .or_else(|| id.default_base_url().map(str::to_owned))
                    .unwrap_or_default()
                    .trim_end_matches('/')
                    .to_owned();
                let mut off_because = None;
                let mut api_key = None;
                match id {
                    EngineId::Brave => {
                        let var = config
                            .engines
                            .brave
                            .api_key_env
                            .clone()
                            .unwrap_or_else(|| "BRAVE_API_KEY".to_owned());
                        api_key = env(&var).filter(|key| !key.trim().is_empty());
                        if api_key.is_none() {
                            off_because = Some(format!("{var} is not set"));
                        }
                    }
                    EngineId::Searxng if base_url.is_empty() => {
                        off_because = Some(
                            "no base_url: set [engines.searxng] base_url to an instance".to_owned(),
                        );
                    }
                    _ => {}
                }
                let enabled = match common.enabled {
                    Some(false) => {
                        off_because = Some("enabled = false in search.toml".to_owned());
                        false
                    }
                    _ => off_because.is_none(),
                };
                EngineSettings {
                    id,
                    enabled,
                    off_because,
                    base_url,
                    weight: common.weight.unwrap_or(1.0),
                    timeout: common
                        .timeout_ms
                        .map(Duration::from_millis)
                        .unwrap_or(default_timeout),
                    language: config
                        .engines
                        .wikipedia
                        .language
                        .clone()
                        .unwrap_or_else(|| "en".to_owned()),
                    api_key,
                }
            })
            .collect();
        let policy = AddressPolicy::allowing(
            config
                .fetch
                .allow_private
                .iter()
                .filter_map(|cidr| crate::address::parse_cidr(cidr)),
        );
        Self {
            engines,
            deadline: Duration::from_millis(config.search.deadline_ms),
            count: config.search.count,
            user_agent: config.search.user_agent.clone(),
            health: config.health.clone(),
            cache: config.cache.clone(),
            fetch: FetchSettings {
                policy,
                max_bytes: config.fetch.max_bytes,
                max_chars: config.fetch.max_chars,
                timeout: Duration::from_millis(config.fetch.timeout_ms),
                process_time: Duration::from_millis(config.fetch.process_ms),
                max_concurrent: config.fetch.max_concurrent,
                user_agent: config.fetch.user_agent.clone(),
            },
        }
    }

    /// The engine `id`.
    pub fn engine(&self, id: EngineId) -> &EngineSettings {
        self.engines
            .iter()
            .find(|engine| engine.id == id)
            .expect("every engine is resolved")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyless_engines_are_on_brave_needs_a_key_and_searxng_a_url() {
        let settings = Settings::resolve(&SearchConfig::default(), |_| None);
        let on: Vec<&str> = settings
            .engines
            .iter()
            .filter(|e| e.enabled)
            .map(|e| e.id.name())
            .collect();
        assert_eq!(on, ["duckduckgo", "bing", "mojeek", "wikipedia"]);
        assert_eq!(
            settings.engine(EngineId::Brave).off_because.as_deref(),
            Some("BRAVE_API_KEY is not set")
        );
        let with_key = Settings::resolve(&SearchConfig::default(), |name| {
            (name == "BRAVE_API_KEY").then(|| "k".to_owned())
        });
        assert!(with_key.engine(EngineId::Brave).enabled);
        assert_eq!(
            with_key.engine(EngineId::Brave).api_key.as_deref(),
            Some("k")
        );
        let mut config = SearchConfig::default();
        config.engines.searxng.base_url = Some("http://127.0.0.1:9/".into());
        config.engines.bing.enabled = Some(false);
        config.engines.mojeek.timeout_ms = Some(700);
        let settings = Settings::resolve(&config, |_| None);
        assert!(settings.engine(EngineId::Searxng).enabled);
        assert_eq!(
            settings.engine(EngineId::Searxng).base_url,
            "http://127.0.0.1:9"
        );
        assert!(!settings.engine(EngineId::Bing).enabled);
        assert_eq!(
            settings.engine(EngineId::Mojeek).timeout,
            Duration::from_millis(700)
        );
        assert_eq!(
            settings.engine(EngineId::DuckDuckGo).timeout,
            Duration::from_secs(5)
        );
    }
}
