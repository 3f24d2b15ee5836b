//! Reading `crons.toml`: every problem is refused with its file, line and
//! column, the key, the value and what is allowed.
//!
//! The file is read with `toml`'s spanned tables, which keep where every
//! key and value is but nothing else: several times faster than a
//! `toml_edit` document, which also keeps every comment and space and is
//! built only for an edit (`edit.rs`). A change of a 10,000-entry file is
//! read on every reconcile, so this is the engine's hot path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crabtalk_kit::config::{KeyPath, UnknownKey, line_column};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::entry::{
    Action, DEFAULT_SENDER, DEFAULT_TIMEOUT, Deliver, Entry, KEYS, Missed, Quiet, Written, valid_id,
};
use crate::schedule::{CronExpr, ExprError, Schedule, Span, Timing, Zone, parse_at};

/// Why `crons.toml` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

/// Where a value is in the file (a byte range), when known.
type Place = Option<std::ops::Range<usize>>;

/// A problem at a byte offset, before the file name is known.
struct Problem {
    at: usize,
    message: String,
}

impl Problem {
    fn new(at: Place, message: impl Into<String>) -> Self {
        Self {
            at: at.map_or(0, |span| span.start),
            message: message.into(),
        }
    }
}

/// Reads the entries in `text` (the contents of `path`). Entries without
/// `tz` use `machine_zone`.
pub fn parse_entries(path: &Path, text: &str, machine_zone: Zone) -> Result<Vec<Entry>, LoadError> {
    let invalid = |problem: Problem| {
        let (line, column) = line_column(text, problem.at);
        LoadError::Invalid {
            path: path.to_owned(),
            line,
            column,
            message: problem.message,
        }
    };
    let document = DeTable::parse(text).map_err(|err| {
        invalid(Problem::new(
            err.span(),
            format!("not valid TOML: {}", err.message().trim()),
        ))
    })?;
    entries_of(document.get_ref(), machine_zone).map_err(invalid)
}

/// A table of the file, with where it starts and its values by key.
struct Table<'a, 'i> {
    inner: &'a DeTable<'i>,
    span: Place,
    /// The value of each of [`KEYS`], by position: one pass over the table
    /// instead of a map lookup per key.
    slots: [Option<&'a Spanned<DeValue<'i>>>; KEYS.len()],
}

impl<'a, 'i> Table<'a, 'i> {
    fn new(inner: &'a DeTable<'i>, span: Place) -> Self {
        let mut slots = [None; KEYS.len()];
        for (key, value) in inner.iter() {
            if let Some(slot) = KEYS
                .iter()
                .position(|known| *known == key.get_ref().as_ref())
            {
                slots[slot] = Some(value);
            }
        }
        Self { inner, span, slots }
    }

    fn get(&self, key: &str) -> Option<&'a Spanned<DeValue<'i>>> {
        match KEYS.iter().position(|known| *known == key) {
            Some(slot) => self.slots[slot],
            None => self.inner.get(key),
        }
    }

    /// The first key (in the file's order) that is not in `allowed`, with
    /// where it is.
    fn first_unknown(&self, allowed: &[&str]) -> Option<(&'a str, std::ops::Range<usize>)> {
        self.inner
            .iter()
            .filter(|(key, _)| !allowed.contains(&key.get_ref().as_ref()))
            .map(|(key, _)| (key.get_ref().as_ref(), key.span()))
            .min_by_key(|(_, span)| span.start)
    }
}

/// What a value is, in the words of the TOML spec.
fn type_name(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "string",
        DeValue::Integer(_) => "integer",
        DeValue::Float(_) => "float",
        DeValue::Boolean(_) => "boolean",
        DeValue::Datetime(_) => "datetime",
        DeValue::Array(_) => "array",
        DeValue::Table(_) => "table",
    }
}

fn entries_of(root: &DeTable<'_>, machine_zone: Zone) -> Result<Vec<Entry>, Problem> {
    let root_table = Table::new(root, None);
    if let Some((key, span)) = root_table.first_unknown(&["cron"]) {
        return Err(Problem::new(
            Some(span),
            format!("unknown top-level key `{key}`; crons.toml holds only [[cron]] entries"),
        ));
    }
    let Some(item) = root.get("cron") else {
        return Ok(Vec::new());
    };
    let tables: Vec<Table<'_, '_>> = match item.get_ref() {
        DeValue::Array(values) => values
            .iter()
            .map(|value| match value.get_ref() {
                DeValue::Table(inner) => Ok(Table::new(inner, Some(value.span()))),
                _ => Err(Problem::new(
                    Some(value.span()),
                    "`cron` must be written as [[cron]] tables, one per entry",
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(Problem::new(
                Some(item.span()),
                "`cron` must be written as [[cron]] tables, one per entry",
            ));
        }
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut expressions = Expressions::default();
    let mut entries = Vec::with_capacity(tables.len());
    for (index, table) in tables.iter().enumerate() {
        let entry = entry_of(table, index, machine_zone, &mut expressions)?;
        if let Some(first) = seen.insert(entry.id.clone(), index) {
            return Err(Problem::new(
                value_span(table, "id"),
                format!(
                    "duplicate id `{}` (entry {} has it too); ids must be unique",
                    entry.id,
                    first + 1
                ),
            ));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn value_span(table: &Table<'_, '_>, key: &str) -> Place {
    table.get(key).map(Spanned::span).or(table.span.clone())
}

/// The string at `key`, if present; anything else there is refused.
fn string(table: &Table<'_, '_>, key: &str) -> Result<Option<(String, Place)>, Problem> {
    match table.get(key) {
        None => Ok(None),
        Some(value) => match value.get_ref() {
            DeValue::String(text) => Ok(Some((text.to_string(), Some(value.span())))),
            other => Err(Problem::new(
                Some(value.span()),
                format!(
                    "`{key}` must be a string (in quotes), not {}",
                    type_name(other)
                ),
            )),
        },
    }
}

fn field_error(key: &str, value: &str, problem: impl std::fmt::Display) -> String {
    format!("`{key}` = {value:?}: {problem}")
}

/// Crontab expressions already read in this file: a big file repeats a
/// few expressions many times, and each is parsed once.
#[derive(Default)]
struct Expressions(HashMap<String, CronExpr>);

impl Expressions {
    fn parse(&mut self, text: &str) -> Result<CronExpr, ExprError> {
        if let Some(expr) = self.0.get(text) {
            return Ok(expr.clone());
        }
        let expr = CronExpr::parse(text)?;
        self.0.insert(text.to_owned(), expr.clone());
        Ok(expr)
    }
}

fn entry_of(
    table: &Table<'_, '_>,
    index: usize,
    machine_zone: Zone,
    expressions: &mut Expressions,
) -> Result<Entry, Problem> {
    // Said only in refusals: not made for every entry of a big file.
    let position = || format!("entry {}", index + 1);
    if let Some((key, span)) = table.first_unknown(KEYS) {
        let path = KeyPath::keys(&["cron"]).index(index).key(key);
        return Err(Problem::new(
            Some(span),
            UnknownKey::new(path, KEYS).message(),
        ));
    }
    let (id, id_span) = string(table, "id")?.ok_or_else(|| {
        Problem::new(
            table.span.clone(),
            format!("{} has no `id`; add id = \"a-short-name\"", position()),
        )
    })?;
    if !valid_id(&id) {
        return Err(Problem::new(
            id_span,
            field_error(
                "id",
                &id,
                "allowed: 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit",
            ),
        ));
    }
    let named = |what: &str| format!("entry `{id}` {what}");

    let zone_text = string(table, "tz")?;
    let zone = match &zone_text {
        Some((name, span)) => Zone::named(name)
            .map_err(|err| Problem::new(span.clone(), field_error("tz", name, err)))?,
        None => machine_zone,
    };

    let schedules: Vec<(&'static str, String, Place)> = ["cron", "at", "every"]
        .into_iter()
        .filter_map(|key| {
            string(table, key)
                .transpose()
                .map(|r| r.map(|(v, s)| (key, v, s)))
        })
        .collect::<Result<_, _>>()?;
    let (key, value, span) = match schedules.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(Problem::new(
                table.span.clone(),
                named(
                    "has no schedule; set exactly one of cron = \"0 9 * * 1-5\", at = \"2026-05-01T09:00\" or every = \"15m\"",
                ),
            ));
        }
        [first, second, ..] => {
            return Err(Problem::new(
                second.2.clone(),
                named(&format!(
                    "has both `{}` and `{}`; keep exactly one schedule",
                    first.0, second.0
                )),
            ));
        }
    };
    let refused =
        |err: &dyn std::fmt::Display| Problem::new(span.clone(), field_error(key, &value, err));
    let timing = match key {
        "cron" => expressions
            .parse(&value)
            .map(Timing::Cron)
            .map_err(|err| refused(&err)),
        "at" => parse_at(&value, zone)
            .map(Timing::At)
            .map_err(|err| refused(&err)),
        _ => value
            .parse::<Span>()
            .map(Timing::Every)
            .map_err(|err| refused(&err)),
    }?;

    let skill = string(table, "skill")?;
    let message = string(table, "message")?;
    let args = string(table, "args")?;
    let action = match (skill, message) {
        (Some((name, span)), None) => {
            let name = name.trim().trim_start_matches('/').to_owned();
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(Problem::new(
                    span,
                    field_error(
                        "skill",
                        &name,
                        "allowed: a skill name without spaces (put the rest in `args`)",
                    ),
                ));
            }
            Action::Skill {
                name,
                args: args.map(|(a, _)| a.trim().to_owned()).unwrap_or_default(),
            }
        }
        (None, Some((text, span))) => {
            if let Some((_, args_span)) = args {
                return Err(Problem::new(
                    args_span,
                    named("has `args` without `skill`; args go with a skill"),
                ));
            }
            if text.trim().is_empty() {
                return Err(Problem::new(
                    span,
                    field_error("message", &text, "allowed: any text that is not empty"),
                ));
            }
            Action::Message(text)
        }
        (Some(_), Some((_, span))) => {
            return Err(Problem::new(
                span,
                named("has both `skill` and `message`; keep one"),
            ));
        }
        (None, None) => {
            return Err(Problem::new(
                table.span.clone(),
                named(
                    "runs nothing; set skill = \"name\" (with optional args) or message = \"text\"",
                ),
            ));
        }
    };

    let agent = match string(table, "agent")? {
        Some((agent, span)) if agent.trim().is_empty() => {
            return Err(Problem::new(
                span,
                field_error(
                    "agent",
                    &agent,
                    "allowed: an agent name; leave the key out for the daemon's default agent",
                ),
            ));
        }
        Some((agent, _)) => agent,
        None => String::new(),
    };
    let sender = match string(table, "sender")? {
        Some((sender, span)) if sender.trim().is_empty() => {
            return Err(Problem::new(
                span,
                field_error(
                    "sender",
                    &sender,
                    "allowed: a sender name; leave the key out for \"cron\"",
                ),
            ));
        }
        Some((sender, _)) => sender,
        None => DEFAULT_SENDER.to_owned(),
    };

    let quiet_time = |key: &str| -> Result<Option<(chrono::NaiveTime, Place)>, Problem> {
        match string(table, key)? {
            None => Ok(None),
            Some((text, span)) => Quiet::parse_time(&text)
                .map(|t| Some((t, span.clone())))
                .ok_or_else(|| {
                    Problem::new(
                        span,
                        field_error(
                            key,
                            &text,
                            "allowed: HH:MM on a 24-hour clock, e.g. \"22:30\"",
                        ),
                    )
                }),
        }
    };
    let quiet = match (quiet_time("quiet_start")?, quiet_time("quiet_end")?) {
        (None, None) => None,
        (Some((start, span)), Some((end, _))) => {
            if start == end {
                return Err(Problem::new(
                    span,
                    named("has quiet_start equal to quiet_end; the window would be empty"),
                ));
            }
            Some(Quiet { start, end })
        }
        (Some((_, span)), None) | (None, Some((_, span))) => {
            return Err(Problem::new(
                span,
                named(
                    "sets only one of quiet_start and quiet_end; set both (e.g. \"22:00\" and \"07:00\")",
                ),
            ));
        }
    };

    let missed = match string(table, "missed")? {
        None => Missed::default(),
        Some((text, _)) if text == "skip" => Missed::Skip,
        Some((text, _)) if text == "once" => Missed::Once,
        Some((text, span)) => {
            return Err(Problem::new(
                span,
                field_error("missed", &text, "allowed: \"skip\" or \"once\""),
            ));
        }
    };
    let span_of = |key: &str| -> Result<Option<Span>, Problem> {
        match string(table, key)? {
            None => Ok(None),
            Some((text, span)) => text
                .parse::<Span>()
                .map(Some)
                .map_err(|err| Problem::new(span, field_error(key, &text, err))),
        }
    };
    let missed_within = span_of("missed_within")?;
    let timeout = span_of("timeout")?.unwrap_or(DEFAULT_TIMEOUT);
    let enabled = match table.get("enabled") {
        None => true,
        Some(value) => match value.get_ref() {
            DeValue::Boolean(enabled) => *enabled,
            other => {
                return Err(Problem::new(
                    Some(value.span()),
                    format!("`enabled` must be true or false, not {}", type_name(other)),
                ));
            }
        },
    };
    let deliver = match string(table, "deliver")? {
        None => Deliver::None,
        Some((text, span)) => Deliver::parse(&text).map_err(|err| {
            Problem::new(
                span,
                field_error(
                    "deliver",
                    &text,
                    format!("{err}; allowed: \"none\" or \"telegram:<chat id>\""),
                ),
            )
        })?,
    };

    let origin = match string(table, "origin")? {
        Some((origin, span))
            if origin.trim().is_empty() || origin.chars().any(char::is_control) =>
        {
            return Err(Problem::new(
                span,
                field_error(
                    "origin",
                    &origin,
                    "allowed: the gateway sender that made the entry (e.g. \"tg:42\"); leave the key out for an entry of your own",
                ),
            ));
        }
        Some((origin, _)) => Some(origin),
        None => None,
    };

    Ok(Entry {
        id,
        schedule: Schedule::new(timing, zone),
        written: Written { key, value },
        tz_written: zone_text.is_some(),
        action,
        agent,
        sender,
        quiet,
        missed,
        missed_within,
        enabled,
        deliver,
        timeout,
        origin,
    })
}
