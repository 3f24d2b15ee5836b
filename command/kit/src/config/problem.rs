//! What is wrong with a configuration file, and where; and a refusal that
//! names every problem, in one file or in several.
//!
//! Every problem names its file and, when it is about a key or a value, the
//! line and column where that key or value is written (1-based; columns
//! count characters), so a person can jump straight to it:
//!
//! ```text
//! /home/me/.crabtalk/agents/scout.toml:3:1: unknown key `tols`; did you mean `tools`?
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use super::location::{KeyPath, line_column};

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
    /// at the file's start when the key is not written there.
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
            Some((line, column)) => write!(
                f,
                "{}:{line}:{column}: {}",
                self.path.display(),
                self.message
            ),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Why a configuration was refused: every problem found, one per line when
/// shown. What a refusal means (a program does not start, a reload keeps
/// what the file defined before) is the caller's to decide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", list(.problems))]
pub struct Refusal {
    pub problems: Vec<Problem>,
}

impl Refusal {
    /// `Ok` when there is no problem; else the refusal, its problems in the
    /// order of their places in the file.
    pub fn check(mut problems: Vec<Problem>) -> Result<(), Self> {
        if problems.is_empty() {
            return Ok(());
        }
        problems.sort_by_key(|problem| problem.position);
        Err(Self { problems })
    }
}

impl From<Problem> for Refusal {
    fn from(problem: Problem) -> Self {
        Self {
            problems: vec![problem],
        }
    }
}

/// Problems, one per line.
fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "default_model = \"x\"\n\n[transport]\n  tpc = \"off\"\n";

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
        let nowhere = Problem::at_key(
            Path::new("/h/config.toml"),
            DOC,
            &KeyPath::keys(&["llm"]),
            "x",
        );
        assert_eq!(nowhere.position, Some((1, 1)));
    }

    #[test]
    fn a_refusal_lists_its_problems_in_the_order_of_the_file() {
        let path = Path::new("/h/config.toml");
        assert_eq!(Refusal::check(Vec::new()), Ok(()));
        let refusal = Refusal::check(vec![
            Problem::at_offset(path, DOC, 24, "second"),
            Problem::at_offset(path, DOC, 0, "first"),
        ])
        .unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "/h/config.toml:1:1: first\n/h/config.toml:3:4: second"
        );
    }
}
