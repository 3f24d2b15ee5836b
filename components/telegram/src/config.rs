//! `$CRABTALK_HOME/config/telegram.toml`: the gateway's configuration.
//!
//! ```toml
//! token = "123456:ABC-DEF1234ghIkl"   # from @BotFather
//! ```
//!
//! The file holds the bot's token, so it is written private to the user
//! (mode 0600). Unknown keys are refused, like every component's config
//! (see `crabtalk_kit::config`).

use std::path::PathBuf;

use crabtalk_home::{Home, write_atomic_private};
use crabtalk_kit::config::{self, ConfigError};

/// The gateway's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TelegramConfig {
    /// The bot token from @BotFather (`123456:ABC-…`); empty until set up.
    pub token: String,
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

    /// Whether a token is set.
    pub fn has_token(&self) -> bool {
        !self.token.trim().is_empty()
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

    /// Writes the configuration to `home`, atomically and private to the
    /// user.
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
        };
        let path = config.save(&home).unwrap();
        assert_eq!(TelegramConfig::load(&home).unwrap(), config);
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
}
