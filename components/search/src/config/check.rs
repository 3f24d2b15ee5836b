//! What the types of `search.toml` cannot say, checked with errors that
//! point at the key.

use crabtalk_kit::config::{ConfigError, ConfigFile};

use super::{EngineId, SearchConfig};

/// The longest timeout or deadline accepted, in milliseconds.
const MAX_MS: u64 = 120_000;

/// Every check; the first problem found is the error.
pub(super) fn check(file: &ConfigFile, config: &SearchConfig) -> Result<(), ConfigError> {
    let search = &config.search;
    ms(file, &["search", "timeout_ms"], search.timeout_ms)?;
    ms(file, &["search", "deadline_ms"], search.deadline_ms)?;
    if !(1..=20).contains(&search.count) {
        return Err(file.error_at_key(
            &["search", "count"],
            format!("must be from 1 to 20 (got {})", search.count),
        ));
    }
    not_empty(file, &["search", "user_agent"], &search.user_agent)?;
    for id in EngineId::ALL {
        let common = config.engines.common(id);
        let table = ["engines", id.name()];
        if let Some(url) = &common.base_url {
            base_url(file, &[table[0], table[1], "base_url"], url)?;
        }
        if let Some(weight) = common.weight
            && !(weight.is_finite() && weight > 0.0 && weight <= 1_000.0)
        {
            return Err(file.error_at_key(
                &[table[0], table[1], "weight"],
                format!(
                    "must be a number above 0 and at most 1000 (got {weight}); to turn the engine off set enabled = false"
                ),
            ));
        }
        if let Some(timeout) = common.timeout_ms {
            ms(file, &[table[0], table[1], "timeout_ms"], timeout)?;
        }
    }
    if let Some(language) = &config.engines.wikipedia.language
        && !valid_language(language)
    {
        return Err(file.error_at_key(
            &["engines", "wikipedia", "language"],
            format!(
                "{language:?} is not a Wikipedia language code (like \"en\", \"de\", \"zh-yue\")"
            ),
        ));
    }
    if let Some(name) = &config.engines.brave.api_key_env
        && (name.is_empty() || name.contains(['=', '\0']))
    {
        return Err(file.error_at_key(
            &["engines", "brave", "api_key_env"],
            format!("{name:?} is not an environment variable name"),
        ));
    }
    if config.engines.searxng.enabled == Some(true) && config.engines.searxng.base_url.is_none() {
        return Err(file.error_at_key(
            &["engines", "searxng", "enabled"],
            "SearXNG has no default instance: set base_url to your instance (its JSON API must be on: search.formats in its settings.yml)",
        ));
    }
    let health = &config.health;
    for (key, secs) in [
        ("rate_limited_secs", health.rate_limited_secs),
        ("blocked_secs", health.blocked_secs),
        ("max_secs", health.max_secs),
    ] {
        if secs == 0 || secs > 7 * 86_400 {
            return Err(file.error_at_key(
                &["health", key],
                format!("must be from 1 to 604800 seconds (got {secs})"),
            ));
        }
    }
    let cache = &config.cache;
    if cache.ttl_secs > 7 * 86_400 {
        return Err(file.error_at_key(
            &["cache", "ttl_secs"],
            format!(
                "must be at most 604800 seconds, a week (got {}); 0 turns the cache off",
                cache.ttl_secs
            ),
        ));
    }
    if cache.max_bytes > 1024 * 1024 * 1024 {
        return Err(file.error_at_key(
            &["cache", "max_bytes"],
            format!("must be at most 1 GiB (got {})", cache.max_bytes),
        ));
    }
    let fetch = &config.fetch;
    for (index, cidr) in fetch.allow_private.iter().enumerate() {
        if crate::address::parse_cidr(cidr).is_none() {
            return Err(file.error_at_key(
                &["fetch", "allow_private"],
                format!(
                    "entry {} ({cidr:?}) is not a CIDR like \"10.0.0.0/8\", \"127.0.0.2/32\" or \"fd00::/8\"",
                    index + 1
                ),
            ));
        }
    }
    if !(1024..=1024 * 1024 * 1024).contains(&fetch.max_bytes) {
        return Err(file.error_at_key(
            &["fetch", "max_bytes"],
            format!("must be from 1024 to 1073741824 (got {})", fetch.max_bytes),
        ));
    }
    if !(100..=10_000_000).contains(&fetch.max_chars) {
        return Err(file.error_at_key(
            &["fetch", "max_chars"],
            format!("must be from 100 to 10000000 (got {})", fetch.max_chars),
        ));
    }
    ms(file, &["fetch", "timeout_ms"], fetch.timeout_ms)?;
    ms(file, &["fetch", "process_ms"], fetch.process_ms)?;
    if !(1..=256).contains(&fetch.max_concurrent) {
        return Err(file.error_at_key(
            &["fetch", "max_concurrent"],
            format!("must be from 1 to 256 (got {})", fetch.max_concurrent),
        ));
    }
    not_empty(file, &["fetch", "user_agent"], &fetch.user_agent)?;
    Ok(())
}

fn ms(file: &ConfigFile, key: &[&str], value: u64) -> Result<(), ConfigError> {
    if (100..=MAX_MS).contains(&value) {
        return Ok(());
    }
    Err(file.error_at_key(
        key,
        format!("must be from 100 to {MAX_MS} milliseconds (got {value})"),
    ))
}

fn not_empty(file: &ConfigFile, key: &[&str], value: &str) -> Result<(), ConfigError> {
    if value.trim().is_empty() || value.contains(['\r', '\n']) {
        return Err(file.error_at_key(key, "must be one non-empty line"));
    }
    Ok(())
}

fn base_url(file: &ConfigFile, key: &[&str], value: &str) -> Result<(), ConfigError> {
    let probe = value.replace("{lang}", "en");
    match url::Url::parse(&probe) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(()),
        Ok(url) => Err(file.error_at_key(
            key,
            format!(
                "{value:?} is a {} URL; give an http or https one",
                url.scheme()
            ),
        )),
        Err(err) => Err(file.error_at_key(
            key,
            format!("{value:?} is not a URL ({err}); give one like \"https://searx.example.org\""),
        )),
    }
}

/// `en`, `de`, `zh-yue`, `simple`, `be-tarask`.
fn valid_language(code: &str) -> bool {
    (2..=16).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        && !code.starts_with('-')
        && !code.ends_with('-')
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::parse;

    fn error(text: &str) -> String {
        parse(Path::new("/h/config/search.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn no_file_and_an_empty_file_are_the_defaults() {
        let config = parse(Path::new("/h/search.toml"), "").unwrap();
        assert_eq!(config.search.timeout_ms, 5_000);
        assert_eq!(config.cache.ttl_secs, 900);
        assert_eq!(config.fetch.max_bytes, 5 * 1024 * 1024);
        assert_eq!(config.fetch.max_chars, 50_000);
    }

    #[test]
    fn every_key_of_the_guide_parses() {
        let text = r#"
[search]
timeout_ms = 4000
deadline_ms = 6000
count = 8
user_agent = "me"

[engines.duckduckgo]
enabled = true
base_url = "http://127.0.0.1:1"
weight = 1.5
timeout_ms = 3000

[engines.bing]
enabled = false

[engines.mojeek]
weight = 0.5

[engines.wikipedia]
language = "de"
base_url = "https://{lang}.wikipedia.org"

[engines.brave]
api_key_env = "MY_BRAVE_KEY"

[engines.searxng]
base_url = "https://searx.example.org"

[health]
rate_limited_secs = 60
blocked_secs = 600
max_secs = 3600

[cache]
ttl_secs = 0
max_entries = 10
max_bytes = 100000

[fetch]
allow_private = ["10.0.0.0/8", "fd00::/8", "127.0.0.2/32"]
max_bytes = 1048576
max_chars = 20000
timeout_ms = 10000
user_agent = "me"
"#;
        let config = parse(Path::new("/h/search.toml"), text).unwrap();
        assert_eq!(config.engines.duckduckgo.weight, Some(1.5));
        assert_eq!(config.engines.wikipedia.language.as_deref(), Some("de"));
        assert_eq!(config.fetch.allow_private.len(), 3);
    }

    #[test]
    fn bad_values_are_named_at_their_line() {
        for (text, at, says) in [
            (
                "[engines.bing]\nweight = 0.0\n",
                "search.toml:2:1:",
                "engines.bing.weight: must be a number above 0",
            ),
            (
                "[engines.mojeek]\nbase_url = \"ftp://x\"\n",
                "search.toml:2:1:",
                "is a ftp URL",
            ),
            (
                "[engines.duckduckgo]\n\ntimeout_ms = 5\n",
                "search.toml:3:1:",
                "from 100 to 120000",
            ),
            (
                "[fetch]\nallow_private = [\"10.0.0.0/33\"]\n",
                "search.toml:2:1:",
                "entry 1 (\"10.0.0.0/33\") is not a CIDR",
            ),
            (
                "[search]\ncount = 50\n",
                "search.toml:2:1:",
                "from 1 to 20 (got 50)",
            ),
            (
                "[engines.wikipedia]\nlanguage = \"EN!\"\n",
                "search.toml:2:1:",
                "not a Wikipedia language code",
            ),
            (
                "[engines.searxng]\nenabled = true\n",
                "search.toml:2:1:",
                "no default instance",
            ),
            (
                "[health]\nblocked_secs = 0\n",
                "search.toml:2:1:",
                "health.blocked_secs",
            ),
        ] {
            let err = error(text);
            assert!(err.contains(at) && err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn unknown_engines_and_keys_are_refused_where_they_are() {
        let err = error("[engines.google]\nenabled = true\n");
        assert!(
            err.contains("search.toml:1:10:")
                && err.contains("unknown key `google` in [engines]; the keys here are duckduckgo"),
            "{err}"
        );
        let err = error("[engines.bing]\napi_key_env = \"X\"\n");
        assert!(
            err.contains("search.toml:2:1:")
                && err.contains("unknown key `api_key_env` in [engines.bing]"),
            "{err}"
        );
        let err = error("[search]\ntimeout_ms = \"fast\"\n");
        assert!(err.contains("search.toml:2:14:"), "{err}");
    }
}
