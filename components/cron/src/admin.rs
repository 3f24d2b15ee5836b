//! What people and agents do with entries — add, update, remove, pause,
//! resume, list, read runs, preview slots. The CLI and the MCP tools both
//! call these, so the two cannot disagree.

// The doc comments in this module are the `--help` text, where `<name>`
// is a placeholder and `[table]` a TOML table, not HTML or a link.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use chrono::{DateTime, Utc};
use crabtalk_home::Home;
use serde::{Deserialize, Serialize};

use crate::config::{
    Change, CronsFile, EditError, Entry, FieldValue, LoadError, slug_of, valid_id,
};
use crate::runlog::{RunLog, RunRecord, Status};
use crate::schedule::{Schedule, Span, Zone, parse_at};
use crate::state::{State, StateFile};

/// The fields of an entry as given to `add` or `update` (every one
/// optional; `in` is a relative time resolved to `at`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EntryFields {
    /// A unique slug (lowercase letters, digits, '-', '_'); made from the
    /// message or skill when left out.
    #[serde(default)]
    pub id: Option<String>,
    /// A crontab expression: 5 fields "min hour day-of-month month
    /// day-of-week" (0 and 7 are Sunday), 6 with leading seconds, or
    /// @hourly/@daily/@weekly/@monthly/@yearly.
    #[serde(default)]
    pub cron: Option<String>,
    /// One time: RFC 3339, or a wall time like "2026-05-01T09:00" read in tz.
    #[serde(default)]
    pub at: Option<String>,
    /// An interval like "90s", "15m", "2h".
    #[serde(default)]
    pub every: Option<String>,
    /// Once, this long from now, e.g. "20m" (resolved by the server; prefer
    /// it to computing `at` yourself).
    #[serde(default, rename = "in")]
    pub in_: Option<String>,
    /// IANA time zone, e.g. "Europe/Berlin"; default: this machine's zone.
    #[serde(default)]
    pub tz: Option<String>,
    /// A skill to run as "/<skill> <args>".
    #[serde(default)]
    pub skill: Option<String>,
    #[serde(default)]
    pub args: Option<String>,
    /// A message to send instead of a skill.
    #[serde(default)]
    pub message: Option<String>,
    /// The agent; default: the calling conversation's agent (or the
    /// daemon's default agent).
    #[serde(default)]
    pub agent: Option<String>,
    /// The sender, i.e. the conversation; default: the caller's.
    #[serde(default)]
    pub sender: Option<String>,
    /// Quiet hours "HH:MM" in tz; slots inside are skipped.
    #[serde(default)]
    pub quiet_start: Option<String>,
    #[serde(default)]
    pub quiet_end: Option<String>,
    /// After downtime: "skip" (default) or "once" (one catch-up).
    #[serde(default)]
    pub missed: Option<String>,
    #[serde(default)]
    pub missed_within: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    /// "none" (the reply stays in the conversation), "telegram:<chat id>" or
    /// "telegram:<group id>:<topic id>"; default from a Telegram
    /// conversation: its chat.
    #[serde(default)]
    pub deliver: Option<String>,
    /// How long a run may take, e.g. "10m".
    #[serde(default)]
    pub timeout: Option<String>,
}

/// Why an operation was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AdminError {
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot read the run log: {0}")]
    Runs(std::io::Error),
}

/// A slot shown to people and models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SlotView {
    /// In the entry's zone (RFC 3339).
    pub local: String,
    pub utc: String,
    /// What DST did to it, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
}

/// An entry with its state, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EntryView {
    pub id: String,
    /// `cron = "…"`, `at = "…"` or `every = "…"`.
    pub schedule: String,
    pub tz: String,
    /// What it sends: `/skill args` or the message.
    pub runs: String,
    pub agent: String,
    pub sender: String,
    pub enabled: bool,
    pub deliver: String,
    pub missed: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet: Option<String>,
    /// `ok`, `failing` (3 failures in a row), `new` or the last status.
    pub health: String,
    pub failures: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub next: Vec<SlotView>,
}

/// The operations, on the files of one home.
#[derive(Debug, Clone)]
pub(crate) struct Admin {
    crons: CronsFile,
    runs: RunLog,
    state: StateFile,
    machine_zone: Zone,
}

/// Who asks, when an agent asks: defaults for the entry's conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Caller {
    pub agent: Option<String>,
    pub sender: Option<String>,
    /// The gateway sender behind the calling chain (the daemon's
    /// `ai.crabtalk/gateway`), when someone the user let in through a
    /// gateway asked. Such a caller acts only for itself: its entries speak
    /// in its own conversation, deliver only to its own chat, run under
    /// the gateway rule (`origin`), and it sees no other entries.
    pub gateway: Option<String>,
}

impl Caller {
    /// Whether this caller may see and change `entry`.
    pub(crate) fn may_touch(&self, entry: &Entry) -> bool {
        match &self.gateway {
            None => true,
            Some(gateway) => entry.origin.as_deref() == Some(gateway.as_str()),
        }
    }

    /// For a gateway caller: refuses fields that would make an entry act
    /// for someone else.
    fn check_own(&self, fields: &EntryFields) -> Result<(), AdminError> {
        if self.gateway.is_none() {
            return Ok(());
        }
        let own = |key: &str, given: &Option<String>, own: &Option<String>| match (
            given.as_deref(),
            own.as_deref(),
        ) {
            (Some(given), Some(own)) if !given.is_empty() && given != own => {
                Err(AdminError::Invalid(format!(
                    "`{key}` = {given:?}: a conversation that came through a gateway schedules only for itself ({key} {own:?}); leave `{key}` out"
                )))
            }
            _ => Ok(()),
        };
        own("sender", &fields.sender, &self.sender)?;
        own("agent", &fields.agent, &self.agent)?;
        if let Some(deliver) = fields
            .deliver
            .as_deref()
            .filter(|d| !d.is_empty() && *d != "none")
        {
            let allowed = self
                .sender
                .as_deref()
                .and_then(crate::config::Deliver::of_telegram_sender)
                .map(|d| d.to_text());
            if allowed.as_deref() != Some(deliver) {
                return Err(AdminError::Invalid(format!(
                    "`deliver` = {deliver:?}: a conversation that came through a gateway delivers only to its own chat ({}); leave `deliver` out",
                    allowed.as_deref().unwrap_or("none")
                )));
            }
        }
        Ok(())
    }
}

impl Admin {
    pub(crate) fn new(home: &Home, machine_zone: Zone) -> Self {
        Self {
            crons: CronsFile::of(home),
            runs: RunLog::of(home),
            state: StateFile::of(home),
            machine_zone,
        }
    }

    pub(crate) fn crons(&self) -> &CronsFile {
        &self.crons
    }

    pub(crate) fn machine_zone(&self) -> Zone {
        self.machine_zone
    }

    /// Adds an entry: everything is checked before the file is written.
    pub(crate) fn add(
        &self,
        fields: &EntryFields,
        caller: &Caller,
        now: DateTime<Utc>,
    ) -> Result<EntryView, AdminError> {
        caller.check_own(fields)?;
        let zone = match &fields.tz {
            Some(name) => Zone::named(name)
                .map_err(|err| AdminError::Invalid(format!("`tz` = {name:?}: {err}")))?,
            None => self.machine_zone,
        };
        let mut written: Vec<(&'static str, FieldValue)> = Vec::new();
        let schedule = schedule_field(fields, zone, now)?.ok_or_else(|| {
            AdminError::Invalid("no schedule: give exactly one of cron, at, every or in".into())
        })?;
        if schedule.0 == "at" {
            let at =
                parse_at(&schedule.1, zone).map_err(|err| AdminError::Invalid(err.to_string()))?;
            if at <= now {
                return Err(AdminError::Invalid(format!(
                    "`at` = {:?} is not in the future (now is {}); give a later time or use `in`",
                    schedule.1,
                    zone.show(now)
                )));
            }
        }
        let existing = self.crons.load(self.machine_zone)?;
        let id = match &fields.id {
            Some(id) if !valid_id(id) => {
                return Err(AdminError::Invalid(format!(
                    "`id` = {id:?}: allowed: 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
                )));
            }
            Some(id) => id.clone(),
            None => unique_id(
                &slug_of(
                    fields
                        .message
                        .as_deref()
                        .or(fields.skill.as_deref())
                        .unwrap_or("entry"),
                ),
                &existing,
            ),
        };
        written.push(("id", id.clone().into()));
        written.push((schedule.0, schedule.1.into()));
        written.push(("tz", zone.name().into()));
        let agent = fields.agent.clone().or_else(|| caller.agent.clone());
        let sender = fields.sender.clone().or_else(|| caller.sender.clone());
        let text = |key: &'static str,
                    value: &Option<String>,
                    out: &mut Vec<(&'static str, FieldValue)>| {
            if let Some(value) = value {
                out.push((key, value.clone().into()));
            }
        };
        text("skill", &fields.skill, &mut written);
        text("args", &fields.args, &mut written);
        text("message", &fields.message, &mut written);
        text("agent", &agent, &mut written);
        text("sender", &sender, &mut written);
        text("quiet_start", &fields.quiet_start, &mut written);
        text("quiet_end", &fields.quiet_end, &mut written);
        text("missed", &fields.missed, &mut written);
        text("missed_within", &fields.missed_within, &mut written);
        if let Some(enabled) = fields.enabled {
            written.push(("enabled", enabled.into()));
        }
        text("deliver", &fields.deliver, &mut written);
        text("timeout", &fields.timeout, &mut written);
        text("origin", &caller.gateway, &mut written);
        let entries = self
            .crons
            .edit(self.machine_zone, &Change::Add { fields: written })?;
        self.view_of(&entries, &id, now)
    }

    /// Changes the given fields of entry `id`.
    pub(crate) fn update(
        &self,
        id: &str,
        fields: &EntryFields,
        caller: &Caller,
        now: DateTime<Utc>,
    ) -> Result<EntryView, AdminError> {
        if fields.id.as_deref().is_some_and(|new| new != id) {
            return Err(AdminError::Invalid(
                "`id` cannot be changed; remove the entry and add it again".into(),
            ));
        }
        caller.check_own(fields)?;
        let entries = self.crons.load(self.machine_zone)?;
        let current = entries
            .iter()
            .find(|e| e.id == id && caller.may_touch(e))
            .ok_or_else(|| EditError::NotFound { id: id.to_owned() })?;
        let zone = match &fields.tz {
            Some(name) => Zone::named(name)
                .map_err(|err| AdminError::Invalid(format!("`tz` = {name:?}: {err}")))?,
            None => current.schedule.zone(),
        };
        let mut set: Vec<(&'static str, Option<FieldValue>)> = Vec::new();
        if let Some((key, value)) = schedule_field(fields, zone, now)? {
            set.push((key, Some(value.into())));
        }
        let pairs: [(&'static str, &Option<String>); 13] = [
            ("tz", &fields.tz),
            ("skill", &fields.skill),
            ("args", &fields.args),
            ("message", &fields.message),
            ("agent", &fields.agent),
            ("sender", &fields.sender),
            ("quiet_start", &fields.quiet_start),
            ("quiet_end", &fields.quiet_end),
            ("missed", &fields.missed),
            ("missed_within", &fields.missed_within),
            ("deliver", &fields.deliver),
            ("timeout", &fields.timeout),
            ("id", &None),
        ];
        for (key, value) in pairs {
            if let Some(value) = value {
                // An empty string removes the key (back to its default).
                let value = (!value.is_empty()).then(|| value.clone().into());
                set.push((key, value));
            }
        }
        if let Some(enabled) = fields.enabled {
            set.push(("enabled", Some(enabled.into())));
        }
        if set.is_empty() {
            return Err(AdminError::Invalid(
                "nothing to change: give at least one field".into(),
            ));
        }
        let entries = self.crons.edit(
            self.machine_zone,
            &Change::Update {
                id: id.to_owned(),
                fields: set,
            },
        )?;
        self.view_of(&entries, id, now)
    }

    pub(crate) fn remove(&self, id: &str, caller: &Caller) -> Result<(), AdminError> {
        self.check_touch(id, caller)?;
        self.crons
            .edit(self.machine_zone, &Change::Remove { id: id.to_owned() })?;
        Ok(())
    }

    /// Pauses (`false`) or resumes (`true`) entry `id`.
    pub(crate) fn set_enabled(
        &self,
        id: &str,
        enabled: bool,
        caller: &Caller,
        now: DateTime<Utc>,
    ) -> Result<EntryView, AdminError> {
        self.check_touch(id, caller)?;
        let entries = self.crons.edit(
            self.machine_zone,
            &Change::Update {
                id: id.to_owned(),
                fields: vec![("enabled", Some(enabled.into()))],
            },
        )?;
        self.view_of(&entries, id, now)
    }

    /// Every entry `caller` may see, with its state and next three slots.
    pub(crate) fn list(
        &self,
        caller: &Caller,
        now: DateTime<Utc>,
    ) -> Result<Vec<EntryView>, AdminError> {
        let entries = self.crons.load(self.machine_zone)?;
        let state = self.state.load_quietly();
        Ok(entries
            .iter()
            .filter(|entry| caller.may_touch(entry))
            .map(|entry| view(entry, &state, now))
            .collect())
    }

    /// Refuses, as if there were no such entry, an entry `caller` may not
    /// touch.
    pub(crate) fn check_touch(&self, id: &str, caller: &Caller) -> Result<(), AdminError> {
        if caller.gateway.is_none() {
            return Ok(());
        }
        let entries = self.crons.load(self.machine_zone)?;
        entries
            .iter()
            .find(|e| e.id == id && caller.may_touch(e))
            .map(|_| ())
            .ok_or_else(|| EditError::NotFound { id: id.to_owned() }.into())
    }

    /// What `GET /health` reports: failing entries and a `crons.toml`
    /// that does not parse, said by `unparsed` (given the problem,
    /// `file:line:column: …`).
    pub(crate) fn problems_or(&self, unparsed: impl FnOnce(String) -> String) -> Vec<String> {
        let entries = match self.crons.load(self.machine_zone) {
            Ok(entries) => entries,
            Err(err) => return vec![unparsed(err.to_string())],
        };
        let state = self.state.load_quietly();
        let failing: Vec<String> = entries
            .iter()
            .filter(|entry| state.entries.get(&entry.id).is_some_and(|s| s.is_failing()))
            .map(|entry| entry.id.clone())
            .collect();
        if failing.is_empty() {
            Vec::new()
        } else {
            vec![format!(
                "failing entries (3+ errors in a row): {}",
                failing.join(", ")
            )]
        }
    }

    /// The newest `limit` run records of `id` (or all entries `caller`
    /// may see).
    pub(crate) fn runs(
        &self,
        id: Option<&str>,
        limit: usize,
        caller: &Caller,
    ) -> Result<Vec<RunRecord>, AdminError> {
        if caller.gateway.is_none() {
            return self.runs.read(id, limit).map_err(AdminError::Runs);
        }
        if let Some(id) = id {
            self.check_touch(id, caller)?;
            return self.runs.read(Some(id), limit).map_err(AdminError::Runs);
        }
        let mine: std::collections::HashSet<String> = self
            .crons
            .load(self.machine_zone)?
            .into_iter()
            .filter(|entry| caller.may_touch(entry))
            .map(|entry| entry.id)
            .collect();
        let mut runs = self.runs.read(None, usize::MAX).map_err(AdminError::Runs)?;
        runs.retain(|run| mine.contains(&run.entry));
        let skip = runs.len().saturating_sub(limit);
        Ok(runs.split_off(skip))
    }

    fn view_of(
        &self,
        entries: &[Entry],
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<EntryView, AdminError> {
        let entry = entries
            .iter()
            .find(|e| e.id == id)
            .ok_or_else(|| EditError::NotFound { id: id.to_owned() })?;
        Ok(view(entry, &self.state.load_quietly(), now))
    }
}

/// The schedule key and value `fields` set, if any; `in` becomes `at`.
fn schedule_field(
    fields: &EntryFields,
    zone: Zone,
    now: DateTime<Utc>,
) -> Result<Option<(&'static str, String)>, AdminError> {
    let given: Vec<(&'static str, &String)> = [
        ("cron", &fields.cron),
        ("at", &fields.at),
        ("every", &fields.every),
        ("in", &fields.in_),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.as_ref().map(|v| (key, v)))
    .collect();
    match given.as_slice() {
        [] => Ok(None),
        [("in", span)] => {
            let span: Span = span
                .parse()
                .map_err(|err| AdminError::Invalid(format!("`in` = {span:?}: {err}")))?;
            let at = now + span.as_chrono();
            Ok(Some((
                "at",
                zone.show(chrono::SubsecRound::trunc_subsecs(at, 0)),
            )))
        }
        [(key, value)] => Ok(Some((key, (*value).clone()))),
        [first, second, ..] => Err(AdminError::Invalid(format!(
            "both `{}` and `{}` given; give exactly one of cron, at, every or in",
            first.0, second.0
        ))),
    }
}

fn unique_id(base: &str, existing: &[Entry]) -> String {
    let taken = |id: &str| existing.iter().any(|e| e.id == id);
    if !taken(base) {
        return base.to_owned();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !taken(id))
        .expect("a free id")
}

/// The next `count` slots of `schedule` after `after`, for people.
pub(crate) fn slot_views(schedule: &Schedule, after: DateTime<Utc>, count: usize) -> Vec<SlotView> {
    schedule
        .upcoming(after, count)
        .into_iter()
        .map(|slot| SlotView {
            local: schedule.zone().show(slot.at),
            utc: slot.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            dst: slot.dst.map(|note| note.to_string()),
        })
        .collect()
}

fn view(entry: &Entry, state: &State, now: DateTime<Utc>) -> EntryView {
    let entry_state = state.entries.get(&entry.id);
    let after = entry_state.map_or(now, |s| s.cursor().max(now));
    let past_at = matches!(entry.schedule.timing(), crate::schedule::Timing::At(at) if *at <= now)
        && entry_state.and_then(|s| s.last_slot).is_none();
    let health = match entry_state {
        // Its time passed before the engine decided it: the service
        // catches it up or records it missed, and removes it.
        _ if past_at => "past".to_owned(),
        Some(s) if s.is_failing() => "failing".to_owned(),
        Some(s) => s.last_status.map_or("new", Status::as_str).to_owned(),
        None => "new".to_owned(),
    };
    let next = if entry.enabled
        && !(entry.is_one_shot() && entry_state.and_then(|s| s.last_slot).is_some())
    {
        slot_views(&entry.schedule, after, 3)
    } else {
        Vec::new()
    };
    EntryView {
        id: entry.id.clone(),
        schedule: format!("{} = {:?}", entry.written.key, entry.written.value),
        tz: entry.schedule.zone().name().to_owned(),
        runs: entry.action.content(),
        agent: if entry.agent.is_empty() {
            "(default)".into()
        } else {
            entry.agent.clone()
        },
        sender: entry.sender.clone(),
        enabled: entry.enabled,
        deliver: entry.deliver.to_text(),
        missed: entry.missed.as_str().to_owned(),
        quiet: entry
            .quiet
            .map(|q| format!("{}-{}", q.start.format("%H:%M"), q.end.format("%H:%M"))),
        health,
        failures: entry_state.map_or(0, |s| s.failures),
        last_run: entry_state.and_then(|s| s.last_run),
        last_error: entry_state.and_then(|s| s.last_error.clone()),
        next,
    }
}
