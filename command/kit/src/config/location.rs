//! Places in a config file: byte offsets to `line:column`, and where a key
//! is set.
//!
//! A typed configuration keeps no positions, so the place of a key a
//! problem is about is found again in the file's text with `toml`'s
//! spanned document ([`KeyPath::span_in`]).

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// 1-based line and column (in characters) of a byte offset in `text`; an
/// offset past the end is the end, one inside a character is that
/// character.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |tail| tail.chars().count())
        + 1;
    (line, column)
}

/// One step from a table or array to a value in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The path to a value: `limits.per_minute`, `providers[1].kind`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath {
    steps: Vec<Step>,
}

impl KeyPath {
    /// A path of keys only.
    pub fn keys(keys: &[&str]) -> Self {
        Self {
            steps: keys
                .iter()
                .map(|key| Step::Key((*key).to_owned()))
                .collect(),
        }
    }

    /// This path followed by `key`.
    pub fn key(&self, key: &str) -> Self {
        let mut steps = self.steps.clone();
        steps.push(Step::Key(key.to_owned()));
        Self { steps }
    }

    /// This path followed by an array index.
    pub fn index(&self, index: usize) -> Self {
        let mut steps = self.steps.clone();
        steps.push(Step::Index(index));
        Self { steps }
    }

    /// The path `serde_ignored` reports for a key nothing wanted.
    pub(super) fn from_ignored(path: &serde_ignored::Path<'_>) -> Self {
        let mut steps = Vec::new();
        let mut at = path;
        loop {
            at = match at {
                serde_ignored::Path::Root => break,
                serde_ignored::Path::Seq { parent, index } => {
                    steps.push(Step::Index(*index));
                    parent
                }
                serde_ignored::Path::Map { parent, key } => {
                    steps.push(Step::Key(key.clone()));
                    parent
                }
                serde_ignored::Path::Some { parent }
                | serde_ignored::Path::NewtypeStruct { parent }
                | serde_ignored::Path::NewtypeVariant { parent } => parent,
            };
        }
        steps.reverse();
        Self { steps }
    }

    /// The last key, if the path ends with one.
    pub fn last_key(&self) -> Option<&str> {
        match self.steps.last() {
            Some(Step::Key(key)) => Some(key),
            _ => None,
        }
    }

    /// The path without its last step: where the last key is.
    pub fn parent(&self) -> Self {
        Self {
            steps: self.steps[..self.steps.len().saturating_sub(1)].to_vec(),
        }
    }

    /// The steps, for walking a value along the path.
    pub(super) fn steps(&self) -> impl Iterator<Item = Result<&str, usize>> {
        self.steps.iter().map(|step| match step {
            Step::Key(key) => Ok(key.as_str()),
            Step::Index(index) => Err(*index),
        })
    }

    /// The table the last key is in, as a person writes it (`[transport]`,
    /// `[[providers]]`, `[presets.groq]`); `None` for the top level.
    pub fn table(&self) -> Option<String> {
        let parent = self.parent();
        match parent.steps.last()? {
            Step::Index(_) => Some(format!("[[{}]]", parent.parent())),
            Step::Key(_) => Some(format!("[{parent}]")),
        }
    }

    /// Where the last key of the path is written in `text` (the key itself,
    /// or the array element for a path ending with an index), if the text
    /// parses and has it.
    pub fn span_in(&self, text: &str) -> Option<Range<usize>> {
        let root = DeTable::parse(text).ok()?;
        let (last, parents) = self.steps.split_last()?;
        let mut value: Option<&DeValue<'_>> = None;
        let mut table: &DeTable<'_> = root.get_ref();
        for step in parents {
            let next = match (step, value) {
                (Step::Key(key), None) => find_key(table, key)?.1.get_ref(),
                (Step::Key(key), Some(DeValue::Table(inner))) => find_key(inner, key)?.1.get_ref(),
                (Step::Index(index), Some(DeValue::Array(array))) => array.get(*index)?.get_ref(),
                _ => return None,
            };
            if let DeValue::Table(inner) = next {
                table = inner;
                value = None;
            } else {
                value = Some(next);
            }
        }
        match (last, value) {
            (Step::Key(key), None) => Some(find_key(table, key)?.0),
            (Step::Index(index), Some(DeValue::Array(array))) => Some(array.get(*index)?.span()),
            _ => None,
        }
    }

    /// Line and column of [`span_in`](Self::span_in)'s place.
    pub fn locate(&self, text: &str) -> Option<(usize, usize)> {
        self.span_in(text).map(|span| line_column(text, span.start))
    }
}

/// The key's span and its value in `table`.
fn find_key<'t, 'i>(
    table: &'t DeTable<'i>,
    key: &str,
) -> Option<(Range<usize>, &'t toml::Spanned<DeValue<'i>>)> {
    table
        .iter()
        .find(|(name, _)| name.get_ref().as_ref() == key)
        .map(|(name, value)| (name.span(), value))
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.steps.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => write!(f, "{key}")?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_character_columns() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // After the two-byte é, byte 9 of the text is the line's third
        // character.
        assert_eq!(line_column(text, 9), (2, 3));
        assert_eq!(line_column(text, 999), (3, 1));
        assert_eq!(line_column("ab\ncé d", 7), (2, 4));
        assert_eq!(line_column("", 5), (1, 1));
        // Inside the é: the é itself.
        assert_eq!(line_column(text, 8), (2, 2));
    }

    #[test]
    fn keys_are_found_in_tables_inline_tables_and_arrays_of_tables() {
        let text = "top = 1\n[t]\ninner = { deep = 2 }\n[[list]]\nx = 1\n[[list]]\nx = 2\n";
        assert_eq!(KeyPath::keys(&["top"]).locate(text), Some((1, 1)));
        assert_eq!(
            KeyPath::keys(&["t", "inner", "deep"]).locate(text),
            Some((3, 11))
        );
        assert_eq!(KeyPath::keys(&["missing"]).locate(text), None);
        let second = KeyPath::keys(&["list"]).index(1);
        assert_eq!(second.key("x").locate(text), Some((7, 1)));
        assert_eq!(second.locate(text), Some((6, 1)));
        assert_eq!(second.key("x").to_string(), "list[1].x");
    }

    #[test]
    fn dotted_keys_are_found() {
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
    fn the_table_of_a_key_is_named_as_it_is_written() {
        let in_array = KeyPath::keys(&["providers"]).index(1).key("model");
        assert_eq!(in_array.to_string(), "providers[1].model");
        assert_eq!(in_array.table().as_deref(), Some("[[providers]]"));
        assert_eq!(in_array.last_key(), Some("model"));
        assert_eq!(
            KeyPath::keys(&["transport", "tpc"]).table().as_deref(),
            Some("[transport]")
        );
        assert_eq!(
            KeyPath::keys(&["presets", "groq", "kye"])
                .table()
                .as_deref(),
            Some("[presets.groq]")
        );
        assert_eq!(KeyPath::keys(&["tols"]).table(), None);
    }
}
