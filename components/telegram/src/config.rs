//! `$CRABTALK_HOME/config/telegram.toml`: the gateway's configuration.
//!
//! ```toml
//! token = "123456:ABC-DEF1234ghIkl"   # from @BotFather (or token_env)
//! allow = [111111111]                 # who may talk to the agent; empty: nobody
//! pairing = true                      # strangers get a code to approve here
//! groups = [-1001234567890]           # groups the bot answers allowed users in
//! open_groups = [-1009876543210]      # groups where every member may speak
//! ```
//!
//! The file holds the bot's token, so it is written private to the user
//! (mode 0600). Unknown keys are refused, like every component's config
//! (see `crabtalk_kit::config`); [`TelegramConfig::check`] refuses values
//! the gateway cannot use, at the key's `file:line:column`.

use std::path::PathBuf;

use crabtalk_home::{Home, write_atomic_private};
use crabtalk_kit::config::{self, ConfigError, ConfigFile};

/// Where the Bot API is unless `api_base_url` says otherwise.
pub(crate) const TELEGRAM_API: &str = "https://api.telegram.org";

/// The longest long poll Telegram holds a `getUpdates` for.
pub(crate) const MAX_POLL_TIMEOUT_SECS: u64 = 50;

/// Why there is no bot token to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoToken {
    /// Neither `token` nor `token_env` is set.
    #[error("no bot token: set `token` (from @BotFather) or `token_env`")]
    NotSet,
    /// `token_env` names a variable that is not set (or empty).
    #[error(
        "token_env = {var:?}, but that variable is not set; set it in $CRABTALK_HOME/env \
         or write the token as `token`"
    )]
    EnvUnset { var: String },
}

/// Why `api_base_url` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadApiUrl {
    #[error("{text:?} is not a URL: {source}")]
    NotUrl {
        text: String,
        source: url::ParseError,
    },
    #[error("{text:?} must be an http:// or https:// URL")]
    NotHttp { text: String },
}

/// The gateway's configuration, as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TelegramConfig {
    /// The bot token from @BotFather (`123456:ABC-…`); empty when
    /// `token_env` names it instead (or before first-run setup).
    pub token: String,
    /// The name of an environment variable holding the token (it may be
    /// set in `$CRABTALK_HOME/env`); used when `token` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// The Bot API's base URL (default `https://api.telegram.org`; a local
    /// Bot API server or a test server otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_base_url: Option<String>,
    /// The agent chats talk to; absent: the daemon's default agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Telegram user ids that may talk to the agent in private chats. An
    /// empty list means nobody (pairing aside), never everybody.
    pub allow: Vec<i64>,
    /// Whether a stranger gets a pairing code that a person approves on
    /// this machine (`crabtalk-telegram pair approve <code>`).
    pub pairing: bool,
    /// Group chat ids the bot answers in, to the users it would answer in
    /// a private chat (`allow`, or approved by pairing).
    pub groups: Vec<i64>,
    /// Group chat ids where every member may speak to the agent, allowed
    /// or not: whoever is added to such a group talks to the agent (still
    /// as a gateway sender, without the tools gateway chains are denied).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open_groups: Vec<i64>,
    /// In groups, answer only when addressed (`@bot`, a reply to the bot,
    /// `/cmd@bot`). `false`: every message in a listed group.
    pub require_mention: bool,
    /// How tool calls show in a streamed reply.
    pub tool_status: ToolStatus,
    /// How long one `getUpdates` long poll waits for updates (1-50 s).
    pub poll_timeout_secs: u64,
    /// A poll with no answer for this long is abandoned and started again.
    pub poll_restart_secs: u64,
}

/// How a reply shows the tools the agent calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// One short line per call: `🔧 web_search`.
    #[default]
    Name,
    /// The line with the start of its arguments.
    Detail,
    /// Nothing.
    Off,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            token: String::new(),
            token_env: None,
            api_base_url: None,
            agent: None,
            allow: Vec::new(),
            pairing: false,
            groups: Vec::new(),
            open_groups: Vec::new(),
            require_mention: true,
            tool_status: ToolStatus::Name,
            poll_timeout_secs: 30,
            poll_restart_secs: 120,
        }
    }
}

impl TelegramConfig {
    /// `config/telegram.toml` of `home`.
    pub fn path(home: &Home) -> PathBuf {
        home.component_config("telegram")
            .expect("telegram is a valid service name")
    }

    /// The configuration of `home`; the default (no token) when there is
    /// no file yet.
    pub fn load(home: &Home) -> Result<Self, ConfigError> {
        config::load_or_default(&Self::path(home))
    }

    /// The configuration of `home`, which must exist, checked.
    pub fn load_checked(home: &Home) -> Result<Self, ConfigError> {
        let path = Self::path(home);
        let file = ConfigFile::read(&path)?.ok_or(ConfigError::Missing { path })?;
        let config: Self = file.parse()?;
        config.check(&file)?;
        Ok(config)
    }

    /// Whether a token is set (in the file, or the variable it names).
    pub fn has_token(&self) -> bool {
        self.token().is_ok()
    }

    /// The token: `token`, else the variable `token_env` names.
    pub fn token(&self) -> Result<String, NoToken> {
        let token = self.token.trim();
        if !token.is_empty() {
            return Ok(token.to_owned());
        }
        let Some(var) = self.token_env.as_deref().filter(|v| !v.is_empty()) else {
            return Err(NoToken::NotSet);
        };
        match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
            _ => Err(NoToken::EnvUnset {
                var: var.to_owned(),
            }),
        }
    }

    /// The Bot API base URL.
    pub fn api_url(&self) -> Result<url::Url, BadApiUrl> {
        let text = self.api_base_url.as_deref().unwrap_or(TELEGRAM_API);
        let url = url::Url::parse(text).map_err(|source| BadApiUrl::NotUrl {
            text: text.to_owned(),
            source,
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(BadApiUrl::NotHttp {
                text: text.to_owned(),
            });
        }
        Ok(url)
    }

    /// The agent chats talk to (`""`: the daemon's default).
    pub fn agent_name(&self) -> &str {
        self.agent.as_deref().unwrap_or_default()
    }

    /// Refuses what the gateway cannot use, at the key in `file`.
    pub fn check(&self, file: &ConfigFile) -> Result<(), ConfigError> {
        if let Err(message) = self.token() {
            let key = if self.token_env.is_some() {
                "token_env"
            } else {
                "token"
            };
            return Err(file.error_at_key(&[key], message));
        }
        if !self.token.trim().is_empty() && !Self::looks_like_token(self.token.trim()) {
            return Err(file.error_at_key(
                &["token"],
                "does not look like a bot token (123456:ABC-…); copy it again from @BotFather",
            ));
        }
        if let Err(message) = self.api_url() {
            return Err(file.error_at_key(&["api_base_url"], message));
        }
        if !(1..=MAX_POLL_TIMEOUT_SECS).contains(&self.poll_timeout_secs) {
            return Err(file.error_at_key(
                &["poll_timeout_secs"],
                format!("must be between 1 and {MAX_POLL_TIMEOUT_SECS}"),
            ));
        }
        if self.poll_restart_secs < self.poll_timeout_secs + 5 {
            return Err(file.error_at_key(
                &["poll_restart_secs"],
                "must be at least poll_timeout_secs + 5 (a poll may take that long)",
            ));
        }
        if let Some(agent) = &self.agent
            && agent.trim().is_empty()
        {
            return Err(file.error_at_key(
                &["agent"],
                "is empty; leave it out for the daemon's default agent",
            ));
        }
        Ok(())
    }

    /// Whether `text` has the shape of a bot token: `<bot id>:<secret>`,
    /// with no spaces.
    pub fn looks_like_token(text: &str) -> bool {
        text.split_once(':').is_some_and(|(id, secret)| {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_digit())
                && !secret.is_empty()
                && !secret.contains(char::is_whitespace)
        })
    }

    /// Sets `token` in `home`'s file — and `pairing = true` when
    /// `pairing_on` — keeping everything else the file says (keys,
    /// comments, layout) and adding nothing else, so what the user never
    /// set keeps following the defaults. Atomic, private to the user.
    pub fn save_token(home: &Home, token: &str, pairing_on: bool) -> std::io::Result<PathBuf> {
        let path = Self::path(home);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(err),
        };
        let mut document: toml_edit::DocumentMut = text.parse().map_err(|err| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {err}", path.display()),
            )
        })?;
        document["token"] = toml_edit::value(token);
        if pairing_on {
            document["pairing"] = toml_edit::value(true);
        }
        write_atomic_private(&path, document.to_string().as_bytes())?;
        Ok(path)
    }

    /// Writes the whole configuration, every default included, to `home`,
    /// atomically and private to the user.
    pub fn save(&self, home: &Home) -> std::io::Result<PathBuf> {
        let path = Self::path(home);
        let text = toml::to_string(self).map_err(std::io::Error::other)?;
        write_atomic_private(&path, text.as_bytes())?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shapes() {
        assert!(TelegramConfig::looks_like_token("123:abc-DEF_9"));
        for bad in [
            "",
            "123",
            ":abc",
            "abc:def",
            "123:",
            "123:a b",
            "not a token",
        ] {
            assert!(!TelegramConfig::looks_like_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn saves_privately_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        assert_eq!(
            TelegramConfig::load(&home).unwrap(),
            TelegramConfig::default()
        );
        let config = TelegramConfig {
            token: "1:a".into(),
            allow: vec![42],
            ..Default::default()
        };
        let path = config.save(&home).unwrap();
        assert_eq!(TelegramConfig::load(&home).unwrap(), config);
        assert_eq!(TelegramConfig::load_checked(&home).unwrap(), config);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "tokn = \"1:a\"\n").unwrap();
        let err = TelegramConfig::load(&home).unwrap_err().to_string();
        assert!(
            err.contains("telegram.toml:1:1: unknown key `tokn`"),
            "{err}"
        );
    }

    #[test]
    fn setting_the_token_keeps_the_file_and_adds_no_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let path = TelegramConfig::save_token(&home, "1:a", true).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "token = \"1:a\"\npairing = true\n"
        );
        std::fs::write(
            &path,
            "# my bot\napi_base_url = \"http://127.0.0.1:9\"  # a local server\nallow = [42]\n",
        )
        .unwrap();
        TelegramConfig::save_token(&home, "2:b", false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# my bot\napi_base_url = \"http://127.0.0.1:9\"  # a local server\nallow = [42]\ntoken = \"2:b\"\n"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn defaults_are_the_safe_ones() {
        let config: TelegramConfig = ConfigFile::new("/t.toml", "token = \"1:a\"\n")
            .parse()
            .unwrap();
        assert!(config.allow.is_empty() && !config.pairing && config.groups.is_empty());
        assert!(config.require_mention);
        assert_eq!(
            config.api_url().unwrap().as_str(),
            "https://api.telegram.org/"
        );
        assert_eq!(config.agent_name(), "");
    }

    #[test]
    fn a_missing_token_and_a_bad_url_say_which() {
        let mut config = TelegramConfig::default();
        assert_eq!(config.token(), Err(NoToken::NotSet));
        config.token_env = Some("CRABTALK_TEST_UNSET_TOKEN_VAR".into());
        let unset = config.token().unwrap_err();
        assert_eq!(
            unset.to_string(),
            "token_env = \"CRABTALK_TEST_UNSET_TOKEN_VAR\", but that variable is not set; \
             set it in $CRABTALK_HOME/env or write the token as `token`"
        );
        config.api_base_url = Some("ftp://x".into());
        assert_eq!(
            config.api_url(),
            Err(BadApiUrl::NotHttp {
                text: "ftp://x".into()
            })
        );
        config.api_base_url = Some("no url".into());
        let bad = config.api_url().unwrap_err();
        assert!(matches!(bad, BadApiUrl::NotUrl { .. }), "{bad:?}");
        assert!(
            bad.to_string().starts_with("\"no url\" is not a URL: "),
            "{bad}"
        );
    }

    #[test]
    fn checks_point_at_the_key() {
        for (text, at, says) in [
            ("allow = [1]\n", "t.toml:1:1: token", "no bot token"),
            (
                "token = \"nope\"\n",
                "t.toml:1:1: token",
                "does not look like",
            ),
            (
                "token = \"1:a\"\napi_base_url = \"ftp://x\"\n",
                "t.toml:2:1: api_base_url",
                "http",
            ),
            (
                "token = \"1:a\"\npoll_timeout_secs = 0\n",
                "t.toml:2:1: poll_timeout_secs",
                "between 1 and 50",
            ),
            (
                "token = \"1:a\"\npoll_restart_secs = 10\n",
                "t.toml:2:1: poll_restart_secs",
                "at least",
            ),
            (
                "token_env = \"CRABTALK_TEST_UNSET_TOKEN_VAR\"\n",
                "t.toml:1:1: token_env",
                "not set",
            ),
            (
                "token = \"1:a\"\nagent = \" \"\n",
                "t.toml:2:1: agent",
                "empty",
            ),
        ] {
            let file = ConfigFile::new("/t.toml", text);
            let config: TelegramConfig = file.parse().unwrap();
            let err = config.check(&file).unwrap_err().to_string();
            assert!(err.contains(at) && err.contains(says), "{text:?}: {err}");
        }
        let file = ConfigFile::new("/t.toml", "tool_status = \"loud\"\n");
        let err = file.parse::<TelegramConfig>().unwrap_err().to_string();
        assert!(err.contains("t.toml:1:15"), "{err}");
    }
}
