//! Typed configuration files: a component's `$CRABTALK_HOME/config/<name>.toml`,
//! and the daemon's `config.toml` and agent files — one loader for every
//! program of the family.
//!
//! A program owns its format: it defines a `serde` type (for a component,
//! the same type `crabup`'s first-run setup writes). The kit reads a file
//! into that type with errors a person can act on:
//!
//! - a required file that does not exist names the file
//!   ([`ConfigError::Missing`]);
//! - TOML that does not parse, a value of the wrong type, a required key
//!   left out — each names `file:line:column` and what is wrong
//!   ([`ConfigError::At`], a [`Problem`]);
//! - an **unknown key is refused**, also at `file:line:column`, with the
//!   known key it most likely meant ([`UnknownKey`]: "did you mean
//!   `tcp`?", chosen from the fields of the type itself). A misspelt key
//!   that were only warned about would leave its setting at the default
//!   while the person believes it set — for an allow-list, a schedule or
//!   an agent's tool restriction that is worse than not starting. This
//!   holds for every program, the daemon included: a file from a newer
//!   version with a key this one does not know is refused too, and says
//!   which key.
//!
//! Two ways to be refused, one loader:
//!
//! - A **component** stops at the first problem: [`load`] for a file it
//!   cannot run without, [`load_or_default`] for one that is optional.
//!   Every [`ConfigError`] makes it exit with 78 (`EX_CONFIG`) through
//!   the kit's `main` ([`main_run`](crate::main_run)).
//! - The **daemon** reads several files (`config.toml` and one file per
//!   agent) and names every problem of each: [`ConfigFile::open`] and
//!   [`ConfigFile::parse_noting`] give the value with a [`Problem`] for
//!   each unknown key, its own checks add theirs, and a [`Refusal`] lists
//!   them all. Which files a refusal stops is the daemon's: it does not
//!   start on a bad `config.toml`, skips a bad agent file, and on a reload
//!   keeps what a refused file defined before.
//!
//! Checks beyond the types (a value out of range, two settings that
//! contradict) use [`ConfigFile::error_at`] or [`ConfigFile::error_at_key`]
//! (or their `problem_*` forms) so they point at the line too:
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

mod fields;
mod location;
mod problem;
mod unknown;

use std::fmt::Display;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crabtalk_home::{EnvFileError, HomeError, NotUtf8};
use serde::de::DeserializeOwned;

pub use self::location::{KeyPath, line_column};
pub use self::problem::{Problem, Refusal};
pub use self::unknown::{UnknownKey, deserialize_noting_unknown};

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

impl ConfigError {
    /// The error of a problem at a place (the start of the file when it
    /// has none).
    fn at(problem: Problem) -> Self {
        let (line, column) = problem.position.unwrap_or((1, 1));
        Self::At {
            path: problem.path,
            line,
            column,
            message: problem.message,
        }
    }
}

/// Why a file's text could not be read.
enum Unreadable {
    Io(std::io::Error),
    NotUtf8(NotUtf8),
}

/// The text at `path`; `None` when there is no file.
fn read_text(path: &Path) -> Result<Option<String>, Unreadable> {
    match std::fs::read(path) {
        Ok(bytes) => crabtalk_home::utf8_text(bytes)
            .map(Some)
            .map_err(Unreadable::NotUtf8),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Unreadable::Io(err)),
    }
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
        match read_text(path) {
            Ok(text) => Ok(text.map(|text| Self::new(path, text))),
            Err(Unreadable::NotUtf8(err)) => Err(ConfigError::at(not_utf8(path, &err))),
            Err(Unreadable::Io(source)) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// [`read`](Self::read), with what stops it as a [`Problem`] (for a
    /// loader that collects them).
    pub fn open(path: &Path) -> Result<Option<Self>, Problem> {
        match read_text(path) {
            Ok(text) => Ok(text.map(|text| Self::new(path, text))),
            Err(Unreadable::NotUtf8(err)) => Err(not_utf8(path, &err)),
            Err(Unreadable::Io(err)) => {
                Err(Problem::in_file(path, format!("cannot read it: {err}")))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The file as a `T`; the first problem in the file, an unknown key
    /// included, is the error (see the module doc).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        let (value, problems) = self.parse_noting::<T>().map_err(ConfigError::at)?;
        match problems.into_iter().next() {
            None => Ok(value),
            Some(problem) => Err(ConfigError::at(problem)),
        }
    }

    /// The file as a `T`, with a problem for every key `T` does not know
    /// (in the order of the file), so that checks beyond the types can add theirs before the file is
    /// refused. The error is a problem that leaves no value: TOML that
    /// does not parse, a value of the wrong type.
    pub fn parse_noting<T: DeserializeOwned>(&self) -> Result<(T, Vec<Problem>), Problem> {
        let deserializer =
            toml::Deserializer::parse(&self.text).map_err(|err| self.toml_problem(&err))?;
        let (value, unknown) = deserialize_noting_unknown::<T, _>(deserializer)
            .map_err(|err| self.toml_problem(&err))?;
        let mut problems: Vec<Problem> = unknown
            .iter()
            .map(|key| self.problem_at_key(&key.path, key.message()))
            .collect();
        problems.sort_by_key(|problem| problem.position);
        Ok((value, problems))
    }

    /// A problem at the byte range `span` of the text (from a
    /// `toml::Spanned` field, say).
    pub fn problem_at(&self, span: Range<usize>, message: impl Display) -> Problem {
        Problem::at_offset(&self.path, &self.text, span.start, message.to_string())
    }

    /// A problem about the key at `key`, at the place it is set, or at the
    /// start of the file when it is not set. The message is as given.
    pub fn problem_at_key(&self, key: &KeyPath, message: impl Display) -> Problem {
        Problem::at_key(&self.path, &self.text, key, message.to_string())
    }

    /// An error at the byte range `span` of the text.
    pub fn error_at(&self, span: Range<usize>, message: impl Display) -> ConfigError {
        ConfigError::at(self.problem_at(span, message))
    }

    /// An error about the key at `key` (table names, then the key), at the
    /// place it is set, or at the start of the file when it is not set.
    /// The message is prefixed with the dotted key.
    pub fn error_at_key(&self, key: &[&str], message: impl Display) -> ConfigError {
        ConfigError::at(
            self.problem_at_key(&KeyPath::keys(key), format!("{}: {message}", key.join("."))),
        )
    }

    fn toml_problem(&self, err: &toml::de::Error) -> Problem {
        let span = err.span().unwrap_or(0..0);
        self.problem_at(span, err.message().trim())
    }
}

/// A file that is not UTF-8, refused at its first bad byte.
fn not_utf8(path: &Path, err: &NotUtf8) -> Problem {
    Problem {
        path: path.to_owned(),
        position: Some((err.line, err.column)),
        message: err.to_string(),
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
            (
                "tokn = \"1:a\"\n",
                "gw.toml:1:1:",
                "`tokn`; did you mean `token`?",
            ),
            (
                "token = \"x\"\n\n[limits]\n  per_minut = 3\n",
                "gw.toml:4:3:",
                "`per_minut` in [limits]; did you mean `per_minute`?",
            ),
            (
                "[[routes]]\nchat = 1\nagent = \"a\"\n[[routes]]\nchat = 2\nagent = \"b\"\nextra = 1\n",
                "gw.toml:7:1:",
                "`extra` in [[routes]]; the keys here are chat, agent",
            ),
            ("[other]\nx = 1\n", "gw.toml:1:2:", "`other`"),
        ] {
            let err = file(text).parse::<Gateway>().unwrap_err().to_string();
            assert!(err.contains(at) && err.contains(key), "{text:?}: {err}");
            assert!(err.contains("unknown key"), "{err}");
        }
    }

    #[test]
    fn parse_noting_names_every_unknown_key_and_keeps_the_value() {
        let f = file("tokn = \"1:a\"\nchats = [7]\n[limits]\nper_minut = 3\n");
        let (value, problems) = f.parse_noting::<Gateway>().unwrap();
        assert_eq!(value.chats, [7]);
        let lines: Vec<String> = problems.iter().map(Problem::to_string).collect();
        assert_eq!(
            lines,
            [
                "/h/config/gw.toml:1:1: unknown key `tokn`; did you mean `token`?",
                "/h/config/gw.toml:4:1: unknown key `per_minut` in [limits]; did you mean \
                 `per_minute`?",
            ]
        );
        // A problem that leaves no value is the error.
        let bad = file("chats = 7\n").parse_noting::<Gateway>().unwrap_err();
        assert_eq!(bad.position, Some((1, 9)));
    }

    #[test]
    fn open_says_what_stops_it_as_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.toml");
        assert!(ConfigFile::open(&path).unwrap().is_none());
        std::fs::write(&path, b"chats = [7] # caf\xe9\n").unwrap();
        let problem = ConfigFile::open(&path).unwrap_err();
        assert_eq!(problem.position, Some((1, 18)));
        let problem = ConfigFile::open(dir.path()).unwrap_err();
        assert_eq!(problem.position, None);
        assert!(problem.message.starts_with("cannot read it: "), "{problem}");
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
