//! Changes to `crons.toml`, made with `toml_edit` so that everything else
//! in the file — comments, blank lines, key order, other entries — stays.

use std::path::PathBuf;

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::entry::{Entry, KEYS};
use super::load::LoadError;

/// A value written for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    Text(String),
    Flag(bool),
}

impl From<&str> for FieldValue {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for FieldValue {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<bool> for FieldValue {
    fn from(flag: bool) -> Self {
        Self::Flag(flag)
    }
}

/// One change to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new entry with these keys (written in the canonical order).
    Add {
        fields: Vec<(&'static str, FieldValue)>,
    },
    /// Removes the entry `id`.
    Remove { id: String },
    /// Sets (`Some`) or removes (`None`) keys of the entry `id`. Setting
    /// one schedule key removes the other two; `skill` removes `message`
    /// and the other way round.
    Update {
        id: String,
        fields: Vec<(&'static str, Option<FieldValue>)>,
    },
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{0}")]
    Unreadable(LoadError),
    #[error(
        "{0}\n(the file was left as it is: cron never rewrites a file it cannot parse; fix it first)"
    )]
    Unparsable(LoadError),
    #[error("no entry `{id}`; `crabtalk-cron list` shows the ids")]
    NotFound { id: String },
    #[error("an entry `{id}` exists already; choose another id or update that one")]
    Exists { id: String },
    #[error("{0}")]
    Refused(String),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

const SCHEDULE_KEYS: [&str; 3] = ["cron", "at", "every"];

impl Change {
    pub(super) fn apply(
        &self,
        document: &mut DocumentMut,
        before: &[Entry],
    ) -> Result<(), EditError> {
        match self {
            Self::Add { fields } => {
                let id = fields
                    .iter()
                    .find(|(key, _)| *key == "id")
                    .and_then(|(_, v)| match v {
                        FieldValue::Text(id) => Some(id.clone()),
                        FieldValue::Flag(_) => None,
                    })
                    .unwrap_or_default();
                if before.iter().any(|entry| entry.id == id) {
                    return Err(EditError::Exists { id });
                }
                let mut table = Table::new();
                for key in KEYS {
                    if let Some((_, field)) = fields.iter().find(|(k, _)| k == key) {
                        table.insert(key, item(field));
                    }
                }
                match document.get_mut("cron") {
                    Some(Item::ArrayOfTables(tables)) => tables.push(table),
                    Some(_) => {
                        return Err(EditError::Refused(
                            "`cron` is not a list of [[cron]] tables".into(),
                        ));
                    }
                    None => {
                        // Comments of a file without entries stay above them.
                        let trailing = document.trailing().as_str().unwrap_or("").to_owned();
                        if !trailing.trim().is_empty() {
                            table.decor_mut().set_prefix(trailing);
                            document.set_trailing("");
                        }
                        let mut tables = ArrayOfTables::new();
                        tables.push(table);
                        document.insert("cron", Item::ArrayOfTables(tables));
                    }
                }
            }
            Self::Remove { id } => {
                let not_found = || EditError::NotFound { id: id.clone() };
                let tables = tables_mut(document).ok_or_else(not_found)?;
                let index = position(tables, id).ok_or_else(not_found)?;
                // The first entry's leading comments are the file's header:
                // they stay, on whatever comes first now.
                let header = (index == 0)
                    .then(|| {
                        tables
                            .get(0)
                            .and_then(|t| t.decor().prefix())
                            .and_then(|p| p.as_str())
                            .map(str::to_owned)
                    })
                    .flatten()
                    .filter(|prefix| prefix.contains('#'));
                tables.remove(index);
                match (header, tables.get_mut(0)) {
                    (Some(header), Some(first)) => {
                        let own = first
                            .decor()
                            .prefix()
                            .and_then(|p| p.as_str())
                            .unwrap_or("")
                            .to_owned();
                        first.decor_mut().set_prefix(format!("{header}{own}"));
                    }
                    (Some(header), None) => {
                        let trailing = document.trailing().as_str().unwrap_or("").to_owned();
                        document.set_trailing(format!("{header}{trailing}"));
                    }
                    _ => {}
                }
                let tables = tables_mut(document).expect("still there");
                if tables.is_empty() {
                    document.remove("cron");
                }
            }
            Self::Update { id, fields } => {
                let tables =
                    tables_mut(document).ok_or_else(|| EditError::NotFound { id: id.clone() })?;
                let index =
                    position(tables, id).ok_or_else(|| EditError::NotFound { id: id.clone() })?;
                let table = tables.get_mut(index).expect("index from position");
                for (key, field) in fields {
                    let clears: &[&str] = match *key {
                        "cron" | "at" | "every" => &SCHEDULE_KEYS,
                        "skill" => &["message"],
                        "message" => &["skill", "args"],
                        _ => &[],
                    };
                    if field.is_some() {
                        for other in clears.iter().filter(|other| *other != key) {
                            table.remove(other);
                        }
                    }
                    match field {
                        Some(field) => match table.get_mut(key) {
                            // Keeps the key's place and its comments.
                            Some(existing @ Item::Value(_)) => {
                                let decor = existing.as_value().map(|v| v.decor().clone());
                                *existing = item(field);
                                if let (Some(decor), Some(v)) = (decor, existing.as_value_mut()) {
                                    *v.decor_mut() = decor;
                                }
                            }
                            _ => {
                                table.insert(key, item(field));
                            }
                        },
                        None => {
                            table.remove(key);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn item(field: &FieldValue) -> Item {
    match field {
        FieldValue::Text(text) => value(text.as_str()),
        FieldValue::Flag(flag) => value(*flag),
    }
}

fn tables_mut(document: &mut DocumentMut) -> Option<&mut ArrayOfTables> {
    document
        .get_mut("cron")
        .and_then(Item::as_array_of_tables_mut)
}

fn position(tables: &ArrayOfTables, id: &str) -> Option<usize> {
    tables
        .iter()
        .position(|table| table.get("id").and_then(Item::as_str) == Some(id))
}
