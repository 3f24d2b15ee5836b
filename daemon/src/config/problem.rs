//! What is wrong with a configuration file, and where.
//!
//! Every problem names its file and, when it is about a key or a value, the
//! line and column where that key or value is written (1-based; columns
//! count characters), so a person can jump straight to it:
//!
//! ```text
//! /home/me/.crabtalk/agents/scout.toml:3:1: unknown key `tols`; did you mean `tools`?
//! ```
//!
//! Positions of keys are found again in the file's text with `toml`'s
//! spanned document ([`KeyPath::locate`]), since the typed configuration
//! keeps no positions.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem with one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    /// Line and column, when the problem is at a place in the file.
    pub position: Option<(usize, usize)>,
    pub message: String,
}

impl Problem {
    /// A problem with the file as a whole (unreadable, missing, …).
    pub fn in_file(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            position: None,
            message: message.into(),
        }
    }

    /// A problem at a byte offset of the file's text.
    pub fn at_offset(path: &Path, text: &str, offset: usize, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            position: Some(line_column(text, offset)),
            message: message.into(),
        }
    }

    /// A problem with the key (or its value) at `key` in the file's text;
    /// the file's start when the key cannot be found.
    pub fn at_key(path: &Path, text: &str, key: &KeyPath, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            position: Some(key.locate(text).unwrap_or((1, 1))),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, column)) => {
                write!(
                    f,
                    "{}:{line}:{column}: {}",
                    self.path.display(),
                    self.message
                )
            }
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Problems, one per line.
pub fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    /// An element of an array (of tables).
    Index(usize),
}

/// Where a key is in a document: `transport.tcp`, `providers[0].kind`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPath(pub Vec<Step>);

impl KeyPath {
    /// A path of plain keys.
    pub fn keys(keys: &[&str]) -> Self {
        Self(
            keys.iter()
                .map(|key| Step::Key((*key).to_owned()))
                .collect(),
        )
    }

    /// This path followed by `key`.
    pub fn key(&self, key: &str) -> Self {
        let mut steps = self.0.clone();
        steps.push(Step::Key(key.to_owned()));
        Self(steps)
    }

    /// This path followed by an array index.
    pub fn index(&self, index: usize) -> Self {
        let mut steps = self.0.clone();
        steps.push(Step::Index(index));
        Self(steps)
    }

    /// The last key, if the path ends with one.
    pub fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Step::Key(key)) => Some(key),
            _ => None,
        }
    }

    /// The table the last key is in, as a person writes it (`[transport]`,
    /// `[[providers]]`, `[bash]`); `None` for the top level.
    pub fn table(&self) -> Option<String> {
        let parent = KeyPath(self.0[..self.0.len().saturating_sub(1)].to_vec());
        if parent.0.is_empty() {
            return None;
        }
        Some(match parent.0.last() {
            Some(Step::Index(_)) => {
                let array = KeyPath(parent.0[..parent.0.len() - 1].to_vec());
                format!("[[{array}]]")
            }
            _ => format!("[{parent}]"),
        })
    }

    /// Line and column of the last key of this path in `text` (of the
    /// element, for a path ending with an index).
    pub fn locate(&self, text: &str) -> Option<(usize, usize)> {
        let document = toml::de::DeTable::parse(text).ok()?;
        let mut table = document.get_ref();
        let mut span = None;
        let mut steps = self.0.iter().peekable();
        while let Some(step) = steps.next() {
            let Step::Key(key) = step else {
                return None;
            };
            let (found_key, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == key)?;
            span = Some(found_key.span());
            let mut value = value.get_ref();
            if let Some(Step::Index(index)) = steps.peek() {
                steps.next();
                let toml::de::DeValue::Array(items) = value else {
                    return None;
                };
                let item = items.get(*index)?;
                span = Some(item.span());
                value = item.get_ref();
            }
            match value {
                toml::de::DeValue::Table(inner) => table = inner,
                _ if steps.peek().is_none() => break,
                _ => return None,
            }
        }
        span.map(|span| line_column(text, span.start))
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => write!(f, "{key}")?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
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

pub use crabtalk_kit::suggest::closest;

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "default_model = \"x\"\n\n[transport]\n  tpc = \"off\"\n\n[[providers]]\nkind = \"a\"\n\n[[providers]]\nkind = \"b\"\nmodel = \"m\"\n";

    #[test]
    fn keys_are_found_in_tables_and_arrays_of_tables() {
        assert_eq!(KeyPath::keys(&["default_model"]).locate(DOC), Some((1, 1)));
        assert_eq!(
            KeyPath::keys(&["transport", "tpc"]).locate(DOC),
            Some((4, 3))
        );
        let second = KeyPath::keys(&["providers"]).index(1);
        assert_eq!(second.key("model").locate(DOC), Some((11, 1)));
        assert_eq!(second.key("kind").locate(DOC), Some((10, 1)));
        assert_eq!(KeyPath::keys(&["nothing"]).locate(DOC), None);
        assert_eq!(second.key("model").to_string(), "providers[1].model");
        assert_eq!(
            second.key("model").table().as_deref(),
            Some("[[providers]]")
        );
        assert_eq!(
            KeyPath::keys(&["transport", "tpc"]).table().as_deref(),
            Some("[transport]")
        );
        assert_eq!(KeyPath::keys(&["tols"]).table(), None);
    }

    #[test]
    fn inline_tables_and_dotted_keys_are_found() {
        let text = "bash = { disabeld = true }\nmemory.enabeld = false\n";
        assert_eq!(
            KeyPath::keys(&["bash", "disabeld"]).locate(text),
            Some((1, 10))
        );
        assert_eq!(
            KeyPath::keys(&["memory", "enabeld"]).locate(text),
            Some((2, 8))
        );
    }

    #[test]
    fn problems_print_file_line_and_column() {
        let problem = Problem::at_key(
            Path::new("/h/config.toml"),
            DOC,
            &KeyPath::keys(&["transport", "tpc"]),
            "unknown key `tpc`",
        );
        assert_eq!(problem.to_string(), "/h/config.toml:4:3: unknown key `tpc`");
        let whole = Problem::in_file(Path::new("/h/a.toml"), "cannot read it");
        assert_eq!(whole.to_string(), "/h/a.toml: cannot read it");
    }

    #[test]
    fn typos_find_their_key() {
        let known = ["tools", "skills", "model", "thinking"];
        assert_eq!(closest("tols", &known), Some("tools"));
        assert_eq!(closest("modle", &known), Some("model"));
        assert_eq!(closest("colour", &known), None);
        assert_eq!(closest("tpc", &["tcp", "token"]), Some("tcp"));
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncé d", 7), (2, 4));
        assert_eq!(line_column("", 5), (1, 1));
    }
}
