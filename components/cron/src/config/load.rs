//! Reading `crons.toml`: every problem is refused with its file, line and
//! column, the key, the value and what is allowed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toml_edit::{Item, Table, Value};

use super::entry::{
    Action, DEFAULT_SENDER, DEFAULT_TIMEOUT, Deliver, Entry, KEYS, Missed, Quiet, Written, valid_id,
};
use crate::schedule::{CronExpr, Schedule, Span, Timing, Zone, parse_at};

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
    let document = toml_edit::Document::parse(text).map_err(|err| {
        invalid(Problem::new(
            err.span(),
            format!("not valid TOML: {}", err.message().trim()),
        ))
    })?;
    entries_of(document.as_table(), machine_zone).map_err(invalid)
}

fn entries_of(root: &Table, machine_zone: Zone) -> Result<Vec<Entry>, Problem> {
    for (key, item) in root.iter() {
        if key != "cron" {
            return Err(Problem::new(
                item.span().or_else(|| root.key(key).and_then(|k| k.span())),
                format!("unknown top-level key `{key}`; crons.toml holds only [[cron]] entries"),
            ));
        }
    }
    let Some(item) = root.get("cron") else {
        return Ok(Vec::new());
    };
    let Some(tables) = item.as_array_of_tables() else {
        return Err(Problem::new(
            item.span(),
            "`cron` must be written as [[cron]] tables, one per entry",
        ));
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut entries = Vec::with_capacity(tables.len());
    for (index, table) in tables.iter().enumerate() {
        let entry = entry_of(table, index, machine_zone)?;
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

fn value_span(table: &Table, key: &str) -> Place {
    table.get(key).and_then(Item::span).or(table.span())
}

/// The string at `key`, if present; anything else there is refused.
fn string(table: &Table, key: &str) -> Result<Option<(String, Place)>, Problem> {
    match table.get(key) {
        None => Ok(None),
        Some(Item::Value(Value::String(s))) => Ok(Some((s.value().clone(), s.span()))),
        Some(other) => Err(Problem::new(
            other.span(),
            format!(
                "`{key}` must be a string (in quotes), not {}",
                other.type_name()
            ),
        )),
    }
}

fn field_error(key: &str, value: &str, problem: impl std::fmt::Display) -> String {
    format!("`{key}` = {value:?}: {problem}")
}

fn entry_of(table: &Table, index: usize, machine_zone: Zone) -> Result<Entry, Problem> {
    let position = format!("entry {}", index + 1);
    for (key, item) in table.iter() {
        if !KEYS.contains(&key) {
            return Err(Problem::new(
                table.key(key).and_then(|k| k.span()).or(item.span()),
                format!(
                    "unknown key `{key}` in {position}; allowed: {}",
                    KEYS.join(", ")
                ),
            ));
        }
    }
    let (id, id_span) = string(table, "id")?.ok_or_else(|| {
        Problem::new(
            table.span(),
            format!("{position} has no `id`; add id = \"a-short-name\""),
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
                table.span(),
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
    let timing = match key {
        "cron" => CronExpr::parse(&value)
            .map(Timing::Cron)
            .map_err(|err| err.to_string()),
        "at" => parse_at(&value, zone)
            .map(Timing::At)
            .map_err(|err| err.to_string()),
        _ => value
            .parse::<Span>()
            .map(Timing::Every)
            .map_err(|err| err.to_string()),
    }
    .map_err(|err| Problem::new(span.clone(), field_error(key, &value, err)))?;

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
                table.span(),
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
        Some(Item::Value(Value::Boolean(b))) => *b.value(),
        Some(other) => {
            return Err(Problem::new(
                other.span(),
                format!("`enabled` must be true or false, not {}", other.type_name()),
            ));
        }
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
    })
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
