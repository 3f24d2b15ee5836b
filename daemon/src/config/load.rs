//! Reading TOML files with errors a person can act on.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::DaemonConfig;

/// Why a configuration file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A parsed file and the warnings it produced.
#[derive(Debug)]
pub struct Loaded<T> {
    pub value: T,
    pub warnings: Vec<String>,
}

/// Parses TOML text from `path` into `T`.
pub(crate) fn parse_toml<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|err| {
        let (line, column) = err
            .span()
            .map(|span| line_column(text, span.start))
            .unwrap_or((1, 1));
        ConfigError::Parse {
            path: path.to_owned(),
            line,
            column,
            message: err.message().trim().to_owned(),
        }
    })
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |tail| tail.chars().count())
        + 1;
    (line, column)
}

impl DaemonConfig {
    /// Loads `config.toml`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Loaded<Self>, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Loaded {
                    value: Self::default(),
                    warnings: Vec::new(),
                });
            }
            Err(source) => {
                return Err(ConfigError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let value: Self = parse_toml(path, &text)?;
        value.validate(path)?;
        let warnings = value
            .unknown_keys()
            .into_iter()
            .map(|key| format!("{}: unknown key `{key}` ignored", path.display()))
            .collect();
        Ok(Loaded { value, warnings })
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if self.default_agent.is_empty() {
            return Err(invalid("default_agent must not be empty".into()));
        }
        for (i, provider) in self.providers.iter().enumerate() {
            if provider.kind.trim().is_empty() {
                return Err(invalid(format!(
                    "providers[{i}] has no `kind`; set kind = \"openai\" (any OpenAI-compatible API), \"anthropic\", \"google\", \"azure\" or \"ollama\""
                )));
            }
        }
        if self.transport.tcp != "off"
            && self.transport.tcp.parse::<std::net::SocketAddr>().is_err()
        {
            return Err(invalid(format!(
                "[transport] tcp = {:?} is not an address; use \"127.0.0.1:6688\", \"0.0.0.0:6688\" (with a token) or \"off\"",
                self.transport.tcp
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("config.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_missing_file_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = DaemonConfig::load(&dir.path().join("config.toml")).unwrap();
        assert_eq!(loaded.value.default_agent, "crab");
        assert_eq!(loaded.value.transport.tcp, "127.0.0.1:6688");
        assert!(loaded.warnings.is_empty());
    }

    #[test]
    fn bad_toml_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "default_agent = \"crab\"\n[transport]\ntcp = = 1\n",
        );
        let err = DaemonConfig::load(&path).unwrap_err();
        match &err {
            ConfigError::Parse { line, column, .. } => {
                assert_eq!(*line, 3);
                assert_eq!(*column, 7);
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("config.toml:3:7"), "{err}");
    }

    #[test]
    fn a_wrong_type_is_an_error_with_its_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "[llm]\nmax_retries = \"two\"\n");
        let err = DaemonConfig::load(&path).unwrap_err();
        assert!(err.to_string().contains("config.toml:2:"), "{err}");
    }

    #[test]
    fn unknown_keys_are_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "defualt_model = \"x\"\n[transport]\ntpc = \"off\"\n[[providers]]\nkind = \"openai\"\nmodel = \"gpt\"\n",
        );
        let loaded = DaemonConfig::load(&path).unwrap();
        let warnings = loaded.warnings.join("\n");
        assert!(warnings.contains("`defualt_model`"), "{warnings}");
        assert!(warnings.contains("`transport.tpc`"), "{warnings}");
        assert!(warnings.contains("`providers[0].model`"), "{warnings}");
    }

    #[test]
    fn a_bad_tcp_address_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "[transport]\ntcp = \"localhost\"\n");
        let err = DaemonConfig::load(&path).unwrap_err();
        assert!(err.to_string().contains("\"off\""), "{err}");
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncé d", 7), (2, 4));
        assert_eq!(line_column("", 5), (1, 1));
    }
}
