//! Engine health: an engine that is rate-limiting or blocking us is not an
//! engine with no results, and the model must be told which is which.
//!
//! Each search records every engine's [`Status`]. A rate limit (HTTP 429,
//! 202) or a block (HTTP 403, a CAPTCHA or anomaly page, a page without
//! its results container) suspends the engine: it is not asked again
//! until the suspension ends — `[health] rate_limited_secs` or
//! `blocked_secs`, doubled for each further refusal in a row, capped at
//! `max_secs`. An answer (with results or without) ends it. Timeouts and
//! other errors are reported but do not suspend: they are usually ours or
//! the network's, not the engine's verdict on us.
//!
//! The table is kept in `$CRABTALK_HOME/search/health.json` ([`state`]),
//! rewritten atomically whenever an engine's standing changes, so the CLI
//! (`crabtalk-search engines`) and `crabup doctor` show what the service
//! last saw, and a restart keeps a suspension.

pub(crate) mod state;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{EngineId, HealthConfig};

/// What an engine did the last time it was asked (or why it was not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Answered with results.
    Ok,
    /// Answered: nothing found.
    NoResults,
    /// Asked us to slow down (HTTP 429 or 202).
    RateLimited,
    /// Refused us (HTTP 403, a CAPTCHA or anomaly page, a page that is not
    /// a results page).
    Blocked,
    /// Did not answer in time.
    Timeout,
    /// Failed some other way (network, HTTP 5xx, a body that does not parse).
    Error,
    /// Not asked: suspended after a refusal.
    Suspended,
    /// Not asked: turned off (or missing its key or URL).
    Disabled,
    /// Not asked: the call named other engines.
    NotRequested,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NoResults => "no_results",
            Status::RateLimited => "rate_limited",
            Status::Blocked => "blocked",
            Status::Timeout => "timeout",
            Status::Error => "error",
            Status::Suspended => "suspended",
            Status::Disabled => "disabled",
            Status::NotRequested => "not_requested",
        }
    }

    /// The engine answered (with or without results).
    pub fn answered(self) -> bool {
        matches!(self, Status::Ok | Status::NoResults)
    }

    /// The engine refused us: it is suspended for it.
    pub fn refused(self) -> bool {
        matches!(self, Status::RateLimited | Status::Blocked)
    }
}

/// One engine's standing, as kept on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EngineHealth {
    /// What it did the last time it was asked.
    pub status: Status,
    /// The reason, for anything but `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// When it was last asked.
    pub checked_at: DateTime<Utc>,
    /// Not asked before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_until: Option<DateTime<Utc>>,
    /// Refusals in a row (each doubles the suspension).
    #[serde(default)]
    pub refusals: u32,
}

/// Every engine's standing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HealthTable {
    #[serde(default)]
    pub engines: BTreeMap<String, EngineHealth>,
}

impl HealthTable {
    /// `id`'s standing, if it was ever asked.
    pub(crate) fn get(&self, id: EngineId) -> Option<&EngineHealth> {
        self.engines.get(id.name())
    }

    /// Until when `id` is suspended, if it is at `now`.
    pub(crate) fn suspended_until(
        &self,
        id: EngineId,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        self.get(id)
            .and_then(|health| health.suspended_until)
            .filter(|until| *until > now)
    }

    /// Records that `id` was asked at `now` and did `status`; returns
    /// whether its standing changed in a way worth writing down (another
    /// status, a new suspension), so an engine answering search after
    /// search does not rewrite the file each time.
    pub(crate) fn record(
        &mut self,
        id: EngineId,
        status: Status,
        detail: Option<String>,
        now: DateTime<Utc>,
        backoff: &HealthConfig,
    ) -> bool {
        let previous = self.engines.get(id.name()).cloned();
        let refusals = match (&previous, status) {
            (_, status) if status.answered() => 0,
            (Some(prev), status) if status.refused() => prev.refusals.saturating_add(1),
            (None, status) if status.refused() => 1,
            (Some(prev), _) => prev.refusals,
            (None, _) => 0,
        };
        let suspended_until = if status.refused() {
            Some(now + suspension(status, refusals, backoff))
        } else if status.answered() {
            None
        } else {
            previous.as_ref().and_then(|prev| prev.suspended_until)
        };
        let changed = previous.as_ref().is_none_or(|prev| {
            prev.status != status
                || prev.suspended_until != suspended_until
                || prev.detail != detail
        });
        self.engines.insert(
            id.name().to_owned(),
            EngineHealth {
                status,
                detail,
                checked_at: now,
                suspended_until,
                refusals,
            },
        );
        changed
    }
}

/// How long an engine is left alone after its `refusals`-th refusal in a
/// row that was `status`.
pub(crate) fn suspension(
    status: Status,
    refusals: u32,
    backoff: &HealthConfig,
) -> chrono::Duration {
    let base = match status {
        Status::Blocked => backoff.blocked_secs,
        _ => backoff.rate_limited_secs,
    };
    let doublings = refusals.saturating_sub(1).min(20);
    let secs = base.saturating_mul(1u64 << doublings).min(backoff.max_secs);
    chrono::Duration::from_std(Duration::from_secs(secs)).unwrap_or(chrono::Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn refusals_suspend_longer_for_blocks_and_double_up_to_the_cap() {
        let backoff = HealthConfig {
            rate_limited_secs: 60,
            blocked_secs: 600,
            max_secs: 1_000,
        };
        let mut table = HealthTable::default();
        assert!(table.record(
            EngineId::Bing,
            Status::RateLimited,
            Some("HTTP 429".into()),
            at(0),
            &backoff
        ));
        assert_eq!(table.suspended_until(EngineId::Bing, at(1)), Some(at(60)));
        assert_eq!(table.suspended_until(EngineId::Bing, at(60)), None);
        table.record(EngineId::Bing, Status::RateLimited, None, at(60), &backoff);
        assert_eq!(table.suspended_until(EngineId::Bing, at(61)), Some(at(180)));
        table.record(EngineId::Mojeek, Status::Blocked, None, at(0), &backoff);
        assert_eq!(
            table.suspended_until(EngineId::Mojeek, at(0)),
            Some(at(600))
        );
        table.record(EngineId::Mojeek, Status::Blocked, None, at(600), &backoff);
        assert_eq!(
            table.suspended_until(EngineId::Mojeek, at(600)),
            Some(at(1_600)),
            "capped"
        );
        // An answer ends it and resets the count.
        table.record(
            EngineId::Mojeek,
            Status::NoResults,
            None,
            at(2_000),
            &backoff,
        );
        assert_eq!(table.get(EngineId::Mojeek).unwrap().refusals, 0);
        table.record(EngineId::Mojeek, Status::Blocked, None, at(3_000), &backoff);
        assert_eq!(
            table.suspended_until(EngineId::Mojeek, at(3_000)),
            Some(at(3_600))
        );
    }

    #[test]
    fn timeouts_do_not_suspend_and_repeated_answers_are_not_changes() {
        let backoff = HealthConfig::default();
        let mut table = HealthTable::default();
        assert!(table.record(EngineId::Wikipedia, Status::Ok, None, at(0), &backoff));
        assert!(!table.record(EngineId::Wikipedia, Status::Ok, None, at(5), &backoff));
        assert!(table.record(
            EngineId::Wikipedia,
            Status::Timeout,
            Some("5000 ms".into()),
            at(9),
            &backoff
        ));
        assert_eq!(table.suspended_until(EngineId::Wikipedia, at(9)), None);
    }
}
