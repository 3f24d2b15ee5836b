//! `$CRABTALK_HOME/env`: provider keys and other variables for services.
//!
//! Only systemd can hand a file of variables to a service
//! (`EnvironmentFile=-`); launchd, Task Scheduler and a plain
//! `crabtalkd run` cannot. So every crabtalk binary reads the file itself
//! at start, before it starts any thread, with [`Home::load_env_file`]:
//!
//! ```text
//! # provider keys
//! OPENAI_API_KEY=sk-…
//! export ANTHROPIC_API_KEY="sk-ant-…"
//! GREETING='two words'
//! ```
//!
//! One `KEY=value` per line; blank lines and lines starting with `#` are
//! skipped; `export ` before the key is allowed; a value wrapped in one
//! pair of matching quotes is unwrapped (nothing inside is escaped). A
//! variable already in the environment wins over the file, so a shell can
//! always override it. Any other line is an error naming `file:line`: a
//! key that was meant to be set and silently is not would be worse.

use std::path::{Path, PathBuf};

use crate::Home;

/// One `KEY=value` assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub key: String,
    pub value: String,
}

/// The assignments of an env file, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFile {
    pub vars: Vec<EnvVar>,
}

/// A line of an env file that is not an assignment, blank or a comment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct EnvLineError {
    /// 1-based.
    pub line: usize,
    pub reason: BadEnvLine,
}

/// What is wrong with a line of an env file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadEnvLine {
    /// The line (after `export `), which has no `=`.
    #[error("{0:?} has no '='")]
    NoEquals(String),
    /// The key, which is no variable name.
    #[error("{0:?} is not a variable name (letters, digits and _, not starting with a digit)")]
    NotAName(String),
    /// A value that opens a quote and does not close it.
    #[error("the value {value} has no closing {quote}")]
    Unclosed { value: String, quote: char },
}

/// Why an env file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum EnvFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {reason}; each line must be KEY=value, a # comment or blank")]
    BadLine {
        path: PathBuf,
        line: usize,
        reason: BadEnvLine,
    },
}

impl EnvFile {
    /// Parses the text of an env file.
    pub fn parse(text: &str) -> Result<Self, EnvLineError> {
        let mut vars = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let at = |reason: BadEnvLine| EnvLineError {
                line: index + 1,
                reason,
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((key, value)) = line.split_once('=') else {
                return Err(at(BadEnvLine::NoEquals(line.to_owned())));
            };
            let key = key.trim();
            if !valid_key(key) {
                return Err(at(BadEnvLine::NotAName(key.to_owned())));
            }
            let value = unquote(value.trim()).map_err(at)?;
            vars.push(EnvVar {
                key: key.to_owned(),
                value: value.to_owned(),
            });
        }
        Ok(Self { vars })
    }

    /// Reads the env file at `path`; a missing file has no variables.
    pub fn read(path: &Path) -> Result<Self, EnvFileError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(EnvFileError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        Self::parse(&text).map_err(|err| EnvFileError::BadLine {
            path: path.to_owned(),
            line: err.line,
            reason: err.reason,
        })
    }

    /// The assignments for keys `is_set` says are not set yet; for a key
    /// assigned twice, the last assignment.
    pub fn unset_vars(&self, is_set: impl Fn(&str) -> bool) -> Vec<&EnvVar> {
        let mut chosen: Vec<&EnvVar> = Vec::new();
        for var in self.vars.iter().filter(|var| !is_set(&var.key)) {
            match chosen.iter_mut().find(|seen| seen.key == var.key) {
                Some(seen) => *seen = var,
                None => chosen.push(var),
            }
        }
        chosen
    }
}

impl Home {
    /// Sets every variable of `env` that this process does not have yet and
    /// returns their names. Call it first thing in `main`, before any
    /// thread starts: changing the environment is only sound while no other
    /// thread can read it.
    pub fn load_env_file(&self) -> Result<Vec<String>, EnvFileError> {
        let file = EnvFile::read(&self.env_file())?;
        let missing = file.unset_vars(|key| std::env::var_os(key).is_some());
        let mut loaded = Vec::with_capacity(missing.len());
        for var in missing {
            // SAFETY: documented above; callers load the file while the
            // process is still single-threaded.
            unsafe { std::env::set_var(&var.key, &var.value) };
            loaded.push(var.key.clone());
        }
        Ok(loaded)
    }
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !key.as_bytes()[0].is_ascii_digit()
}

fn unquote(value: &str) -> Result<&str, BadEnvLine> {
    let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return Ok(value);
    };
    value[1..]
        .strip_suffix(quote)
        .ok_or_else(|| BadEnvLine::Unclosed {
            value: value.to_owned(),
            quote,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(file: &EnvFile) -> Vec<(&str, &str)> {
        file.vars
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_str()))
            .collect()
    }

    #[test]
    fn assignments_comments_blank_lines_and_quotes() {
        let file = EnvFile::parse(
            "# provider keys\n\
             OPENAI_API_KEY=sk-1\n\
             \n\
             \t  \n\
             export B=\"two words\"\n\
             C='x=y # not a comment'\n\
             _D = spaced \n\
             EMPTY=\n\
             QUOTES_ONLY=\"\"\n\
             INNER=a\"b'c\n",
        )
        .unwrap();
        assert_eq!(
            pairs(&file),
            [
                ("OPENAI_API_KEY", "sk-1"),
                ("B", "two words"),
                ("C", "x=y # not a comment"),
                ("_D", "spaced"),
                ("EMPTY", ""),
                ("QUOTES_ONLY", ""),
                ("INNER", "a\"b'c"),
            ]
        );
    }

    #[test]
    fn a_bad_line_is_an_error_naming_its_line() {
        for (text, line, says) in [
            ("A=1\nnot an assignment\n", 2, "no '='"),
            ("# c\n\n9X=1\n", 3, "\"9X\""),
            ("A-B=1\n", 1, "not a variable name"),
            ("=value\n", 1, "not a variable name"),
            ("A=1\nB=\"open\n", 2, "no closing \""),
            ("A='open\"\n", 1, "no closing '"),
            ("A=\"\n", 1, "no closing"),
        ] {
            let err = EnvFile::parse(text).unwrap_err();
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(err.reason.to_string().contains(says), "{text:?}: {err}");
        }
        assert_eq!(
            EnvFile::parse("A='open\n").unwrap_err().reason,
            BadEnvLine::Unclosed {
                value: "'open".into(),
                quote: '\''
            }
        );
    }

    #[test]
    fn reading_names_the_file_and_line_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("env");
        assert_eq!(EnvFile::read(&path).unwrap(), EnvFile::default());
        std::fs::write(&path, "GOOD=1\noops\n").unwrap();
        let err = EnvFile::read(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:2: ", path.display())), "{err}");
        assert!(err.contains("KEY=value"), "{err}");
    }

    #[test]
    fn variables_already_set_are_never_overridden() {
        let file = EnvFile::parse("SET=file\nNEW=first\nNEW=second\nOTHER=x\n").unwrap();
        let unset = file.unset_vars(|key| key == "SET");
        let unset: Vec<(&str, &str)> = unset
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_str()))
            .collect();
        assert_eq!(unset, [("NEW", "second"), ("OTHER", "x")]);
    }
}
