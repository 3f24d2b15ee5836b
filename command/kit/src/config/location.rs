//! Places in a config file: byte offsets to `line:column`, and where a key
//! is set.

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// 1-based line and column (in characters) of a byte offset in `text`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
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

/// One step from a table or array to a value in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The path to a value: `limits.per_minute`, `routes[1].chat`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct KeyPath {
    steps: Vec<Step>,
}

impl KeyPath {
    /// A path of keys only.
    pub(super) fn from_keys(keys: &[&str]) -> Self {
        Self {
            steps: keys
                .iter()
                .map(|key| Step::Key((*key).to_owned()))
                .collect(),
        }
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

    /// Where the last key of the path is written in `text` (the key itself,
    /// or the array element for an index), if the text parses and has it.
    pub(super) fn span_in(&self, text: &str) -> Option<Range<usize>> {
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
    }

    #[test]
    fn keys_are_found_in_tables_inline_tables_and_arrays_of_tables() {
        let text = "top = 1\n[t]\ninner = { deep = 2 }\n[[list]]\nx = 1\n[[list]]\nx = 2\n";
        let at = |keys: &[&str]| {
            KeyPath::from_keys(keys)
                .span_in(text)
                .map(|s| line_column(text, s.start))
        };
        assert_eq!(at(&["top"]), Some((1, 1)));
        assert_eq!(at(&["t", "inner", "deep"]), Some((3, 11)));
        assert_eq!(at(&["missing"]), None);
        let second = KeyPath {
            steps: vec![
                Step::Key("list".into()),
                Step::Index(1),
                Step::Key("x".into()),
            ],
        };
        assert_eq!(
            second.span_in(text).map(|s| line_column(text, s.start)),
            Some((7, 1))
        );
        assert_eq!(second.to_string(), "list[1].x");
    }
}
