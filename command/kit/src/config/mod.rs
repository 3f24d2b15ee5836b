//! A component's typed configuration: `$CRABTALK_HOME/config/<name>.toml`.
//!
//! The component owns its format: it defines a `serde` type, and the same
//! type is what `crabup`'s first-run setup writes. The kit reads the file
//! into that type with errors a person can act on:
//!
//! - a required file that does not exist names the file
//!   ([`ConfigError::Missing`]);
//! - TOML that does not parse, a value of the wrong type, a required key
//!   left out — each names `file:line:column` and what is wrong
//!   ([`ConfigError::At`]);
//! - an **unknown key is refused**, also at `file:line:column`. A
//!   misspelt key that were only warned about would leave its setting at
//!   the default while the person believes it set — for an allow-list or a
//!   schedule that is worse than not starting. Component configs are
//!   written by the component's own types (crabup's setup uses them), so a
//!   newer writer adding keys an older reader does not know does not arise.
//!   (The daemon's `config.toml`, read by older daemons after upgrades,
//!   warns instead.)
//!
//! Every one of these makes the component exit with 78 (`EX_CONFIG`)
//! through [`exit_code`](crate::exit::exit_code).
//!
//! Two flavours: [`load`] for a file the component cannot run without,
//! [`load_or_default`] for one that is optional. Checks beyond the types
//! (a value out of range, two settings that contradict) use
//! [`ConfigFile::error_at`] or [`ConfigFile::error_at_key`] so they point
//! at the line too:
//!
//! ```
//! use crabtalk_kit::config::{ConfigError, ConfigFile};
//!
//! #[derive(serde::Deserialize)]
//! struct Limits { per_minute: u32 }
//!
//! let file = ConfigFile::new("/h/config/x.toml", "per_minute = 0\n");
//! let limits: Limits = file.parse()?;
//! if limits.per_minute == 0 {
//!     let err = file.error_at_key(&["per_minute"], "must be at least 1");
//!     assert_eq!(err.to_string(), "/h/config/x.toml:1:1: per_minute: must be at least 1");
//! }
//! # Ok::<(), ConfigError>(())
//! ```

mod location;

use std::fmt::Display;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crabtalk_home::{EnvFileError, HomeError};
use serde::de::DeserializeOwned;

use self::location::{KeyPath, line_column};

/// Why a component's configuration cannot be used. Every variant exits 78.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required file does not exist.
    #[error("{path}: missing; this service cannot start without it (`crabup <name> start` in a terminal sets it up where it can)", path = path.display())]
    Missing { path: PathBuf },
    #[error("cannot read {path}: {source}", path = path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Something at a place in the file.
    #[error("{path}:{line}:{column}: {message}", path = path.display())]
    At {
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based, in characters.
        column: usize,
        message: String,
    },
    /// `$CRABTALK_HOME` cannot be found, or a name cannot be a file.
    #[error(transparent)]
    Home(#[from] HomeError),
    /// `$CRABTALK_HOME/env` has a line that is not an assignment.
    #[error(transparent)]
    EnvFile(#[from] EnvFileError),
}

/// The text of a config file, kept to point into it.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    text: String,
}

impl ConfigFile {
    /// A config file with its text (for tests and for text not yet saved).
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            text: text.into(),
        }
    }

    /// Reads the file at `path`; `None` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>, ConfigError> {
        match std::fs::read(path) {
            Ok(bytes) => match crabtalk_home::utf8_text(bytes) {
                Ok(text) => Ok(Some(Self::new(path, text))),
                Err(err) => Err(ConfigError::At {
                    path: path.to_owned(),
                    line: err.line,
                    column: err.column,
                    message: err.to_string(),
                }),
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The file as a `T`; unknown keys are refused (see the module doc).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        let deserializer =
            toml::Deserializer::parse(&self.text).map_err(|err| self.toml_error(&err))?;
        let mut unknown: Option<KeyPath> = None;
        let value = serde_ignored::deserialize(deserializer, |path| {
            unknown.get_or_insert_with(|| KeyPath::from_ignored(&path));
        })
        .map_err(|err| self.toml_error(&err))?;
        match unknown {
            None => Ok(value),
            Some(key) => Err(self.error_at_key_path(
                &key,
                format!(
                    "unknown key `{key}`; check its spelling (a key this version does not know \
                     is refused rather than ignored)"
                ),
            )),
        }
    }

    /// An error at the byte range `span` of the text (from a
    /// `toml::Spanned` field, say).
    pub fn error_at(&self, span: Range<usize>, message: impl Display) -> ConfigError {
        let (line, column) = line_column(&self.text, span.start);
        ConfigError::At {
            path: self.path.clone(),
            line,
            column,
            message: message.to_string(),
        }
    }

    /// An error about the key at `key` (table names, then the key), at the
    /// place it is set, or at the start of the file when it is not set.
    /// The message is prefixed with the dotted key.
    pub fn error_at_key(&self, key: &[&str], message: impl Display) -> ConfigError {
        self.error_at_key_path(
            &KeyPath::from_keys(key),
            format!("{}: {message}", key.join(".")),
        )
    }

    fn error_at_key_path(&self, key: &KeyPath, message: String) -> ConfigError {
        let span = key.span_in(&self.text).unwrap_or(0..0);
        self.error_at(span, message)
    }

    fn toml_error(&self, err: &toml::de::Error) -> ConfigError {
        let span = err.span().unwrap_or(0..0);
        self.error_at(span, err.message().trim())
    }
}

/// Loads a file the component cannot run without.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    ConfigFile::read(path)?
        .ok_or_else(|| ConfigError::Missing {
            path: path.to_owned(),
        })?
        .parse()
}

/// Loads an optional file: a missing one is `T::default()`; one that is
/// there must be valid.
pub fn load_or_default<T: DeserializeOwned + Default>(path: &Path) -> Result<T, ConfigError> {
    match ConfigFile::read(path)? {
        Some(file) => file.parse(),
        None => Ok(T::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(default)]
    struct Gateway {
        token: String,
        chats: Vec<i64>,
        limits: Limits,
        routes: Vec<Route>,
    }

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(default)]
    struct Limits {
        per_minute: u32,
    }

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    struct Route {
        chat: i64,
        agent: String,
    }

    fn file(text: &str) -> ConfigFile {
        ConfigFile::new("/h/config/gw.toml", text)
    }

    #[test]
    fn a_valid_file_parses_into_the_type() {
        let text = "token = \"1:a\"\nchats = [1, 2]\n[limits]\nper_minute = 20\n\
                    [[routes]]\nchat = 1\nagent = \"crab\"\n";
        let parsed: Gateway = file(text).parse().unwrap();
        assert_eq!(parsed.chats, [1, 2]);
        assert_eq!(parsed.limits.per_minute, 20);
        assert_eq!(parsed.routes[0].agent, "crab");
    }

    #[test]
    fn syntax_and_type_errors_name_file_line_and_column() {
        for (text, at, says) in [
            (
                "token = \"1:a\"\nchats = [1,\n",
                "gw.toml:2:12",
                "unclosed array",
            ),
            ("token = 5\n", "gw.toml:1:9", "string"),
            (
                "\n\n[limits]\nper_minute = \"x\"\n",
                "gw.toml:4:14",
                "expected u32",
            ),
            ("[[routes]]\nchat = 1\n", "gw.toml:1:1", "agent"),
        ] {
            let err = file(text).parse::<Gateway>().unwrap_err().to_string();
            assert!(err.contains(at), "{text:?}: {err}");
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_refused_where_they_are() {
        for (text, at, key) in [
            ("tokn = \"1:a\"\n", "gw.toml:1:1:", "`tokn`"),
            (
                "token = \"x\"\n\n[limits]\n  per_minut = 3\n",
                "gw.toml:4:3:",
                "`limits.per_minut`",
            ),
            (
                "[[routes]]\nchat = 1\nagent = \"a\"\n[[routes]]\nchat = 2\nagent = \"b\"\nextra = 1\n",
                "gw.toml:7:1:",
                "`routes[1].extra`",
            ),
            ("[other]\nx = 1\n", "gw.toml:1:2:", "`other`"),
        ] {
            let err = file(text).parse::<Gateway>().unwrap_err().to_string();
            assert!(err.contains(at) && err.contains(key), "{text:?}: {err}");
            assert!(err.contains("unknown key"), "{err}");
        }
    }

    #[test]
    fn checks_beyond_the_types_point_at_the_key() {
        let f = file("token = \"\"\n[limits]\nper_minute = 0\n");
        let err = f.error_at_key(&["limits", "per_minute"], "must be at least 1");
        assert_eq!(
            err.to_string(),
            "/h/config/gw.toml:3:1: limits.per_minute: must be at least 1"
        );
        // A key that is not set points at the start of the file.
        let err = f.error_at_key(&["chats"], "name at least one chat");
        assert!(
            err.to_string()
                .starts_with("/h/config/gw.toml:1:1: chats: "),
            "{err}"
        );
        let err = f.error_at(9..10, "a token is required");
        assert!(
            err.to_string().starts_with("/h/config/gw.toml:1:10: "),
            "{err}"
        );
    }

    #[test]
    fn required_and_optional_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.toml");
        let err = load::<Gateway>(&path).unwrap_err();
        assert!(matches!(err, ConfigError::Missing { .. }), "{err}");
        assert!(err.to_string().contains("gw.toml: missing"), "{err}");
        assert_eq!(
            load_or_default::<Gateway>(&path).unwrap(),
            Gateway::default()
        );
        std::fs::write(&path, "chats = [7]\n").unwrap();
        assert_eq!(load::<Gateway>(&path).unwrap().chats, [7]);
        std::fs::write(&path, "chats = 7\n").unwrap();
        let err = load_or_default::<Gateway>(&path).unwrap_err().to_string();
        assert!(err.contains("gw.toml:1:9:"), "{err}");
    }

    /// Found by the fuzzer (`components/fuzz/corpus/telegram_toml/not-utf8`): a
    /// file that is not UTF-8 was refused without a place.
    #[test]
    fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.toml");
        std::fs::write(&path, b"token = \"a\"\nchats = [7] # caf\xe9\n").unwrap();
        let err = load::<Gateway>(&path).unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::At {
                    line: 2,
                    column: 18,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .ends_with("gw.toml:2:18: byte 0xe9 is not UTF-8 text; save the file as UTF-8"),
            "{err}"
        );
    }
}
