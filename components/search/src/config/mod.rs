//! `$CRABTALK_HOME/config/search.toml`: which engines to ask and how, the
//! health backoff, the cache and `web_fetch`'s limits.
//!
//! The file is optional: with none, the keyless engines (DuckDuckGo, Bing,
//! Mojeek, Wikipedia) are on, Brave is on when `BRAVE_API_KEY` is set and
//! SearXNG when an instance's `base_url` is given. The kit's loader reads
//! it (errors at `file:line:column`, unknown keys refused, exit 78);
//! `check` adds what the types cannot say (a weight of 0, a URL that is
//! not http, a CIDR that does not parse), pointing at the key, and
//! [`Settings`] is the result every part of the service works from.
//!
//! ```toml
//! [search]
//! timeout_ms = 5000        # each engine's, unless its own table says
//! deadline_ms = 8000       # the whole fan-out
//!
//! [engines.bing]
//! weight = 1.5
//!
//! [engines.searxng]
//! base_url = "https://searx.example.org"
//!
//! [fetch]
//! allow_private = ["10.1.0.0/16"]
//! ```

mod check;
mod engines;
mod settings;

use std::path::Path;

use crabtalk_kit::config::{ConfigError, ConfigFile};
use serde::Deserialize;

pub use self::engines::EngineId;
pub(crate) use self::engines::EnginesConfig;
pub use self::settings::Settings;
#[cfg(feature = "service")]
pub(crate) use self::settings::{EngineSettings, FetchSettings};

/// The user agent engines and pages see unless `user_agent` says otherwise
/// (some engines refuse agents they do not know as browsers).
pub(crate) const DEFAULT_USER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SearchConfig {
    pub search: SearchSection,
    pub engines: EnginesConfig,
    pub health: HealthConfig,
    pub cache: CacheConfig,
    pub fetch: FetchConfig,
}

/// `[search]`: the fan-out.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SearchSection {
    /// Each engine's timeout unless its table sets `timeout_ms`.
    pub timeout_ms: u64,
    /// The whole search: engines still running then are reported as timed out.
    pub deadline_ms: u64,
    /// Results when the caller does not say (1–20).
    pub count: usize,
    pub user_agent: String,
}

impl Default for SearchSection {
    fn default() -> Self {
        Self {
            timeout_ms: 5_000,
            deadline_ms: 8_000,
            count: 10,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
        }
    }
}

/// `[health]`: how long an engine that said "slow down" or "go away" is
/// left alone. Each further refusal in a row doubles it, up to the cap.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct HealthConfig {
    /// After a rate limit (HTTP 429, 202).
    pub rate_limited_secs: u64,
    /// After a block (HTTP 403, a CAPTCHA or anomaly page, a page without results).
    pub blocked_secs: u64,
    /// The longest suspension.
    pub max_secs: u64,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            rate_limited_secs: 120,
            blocked_secs: 1_800,
            max_secs: 6 * 3_600,
        }
    }
}

/// `[cache]`: answers kept for repeated questions.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct CacheConfig {
    pub ttl_secs: u64,
    pub max_entries: usize,
    pub max_bytes: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            ttl_secs: 15 * 60,
            max_entries: 512,
            max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// `[fetch]`: `web_fetch`'s limits and the private ranges it may reach.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct FetchConfig {
    /// CIDRs (`10.0.0.0/8`, `fd00::/8`, `127.0.0.2/32`) fetches may reach
    /// although they are not public.
    pub allow_private: Vec<String>,
    /// The most bytes of a body read.
    pub max_bytes: usize,
    /// The longest text returned unless the call asks for less or more.
    pub max_chars: usize,
    /// The whole fetch, redirects and body included.
    pub timeout_ms: u64,
    /// Making a fetched page readable, after the fetch.
    pub process_ms: u64,
    /// Fetches at once; more wait for a free one, up to `timeout_ms`.
    pub max_concurrent: usize,
    pub user_agent: String,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            allow_private: Vec::new(),
            max_bytes: 5 * 1024 * 1024,
            max_chars: 50_000,
            timeout_ms: 20_000,
            process_ms: 5_000,
            max_concurrent: 8,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
        }
    }
}

/// Reads `path` (defaults when it does not exist) and checks it.
pub fn load(path: &Path) -> Result<SearchConfig, ConfigError> {
    match ConfigFile::read(path)? {
        None => Ok(SearchConfig::default()),
        Some(file) => {
            let config: SearchConfig = file.parse()?;
            check::check(&file, &config)?;
            Ok(config)
        }
    }
}

/// Parses and checks `text` as if it were the file at `path`.
pub fn parse(path: &Path, text: &str) -> Result<SearchConfig, ConfigError> {
    let file = ConfigFile::new(path, text);
    let config: SearchConfig = file.parse()?;
    check::check(&file, &config)?;
    Ok(config)
}
