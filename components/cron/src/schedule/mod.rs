//! When an entry fires: [`Schedule`], a [`Timing`] read in a [`Zone`].
//!
//! A schedule answers one question — the first slot strictly after an
//! instant ([`Schedule::next_after`]) — with the semantics users of
//! crontab(5) expect (see RFC 0050):
//!
//! - 0 and 7 are Sunday; when both day fields are restricted, a day that
//!   matches either fires;
//! - a schedule for a fixed time of day whose wall time does not exist on a
//!   spring-forward day fires at the first instant after the gap (several
//!   such times merge into that one slot), and one whose wall time happens
//!   twice on a fall-back day fires once, at the first;
//! - a schedule that fires at least hourly (its second or minute field
//!   starts with `*`, or its hour field names every hour: `*`, `*/1`,
//!   `0-23`) follows real elapsed time: it fires in both passes of a
//!   repeated hour and simply has no slots in a skipped one;
//! - `every` slots are whole multiples of the period since the Unix epoch,
//!   so they are the same before and after any restart; `at` is one slot.
//!
//! Instants are whole seconds in UTC.

mod duration;
mod expr;
mod field;
mod zone;

use std::fmt;

use chrono::{DateTime, Duration, NaiveDateTime, SubsecRound, Timelike, Utc};

pub use duration::Span;
pub use expr::CronExpr;
pub(crate) use expr::ExprError;
pub(crate) use zone::Resolved;
pub use zone::Zone;

/// Offsets can jump by up to a day (Samoa, 2011): how far back of an
/// instant's wall clock a fixed-time slot after it may be written.
const MAX_JUMP_SECS: i64 = 26 * 3_600;

/// Candidates examined for one answer before giving up (a guard; real
/// expressions need a handful).
const MAX_CANDIDATES: usize = 200_000;

/// What a schedule is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timing {
    /// A crontab expression.
    Cron(CronExpr),
    /// One instant.
    At(DateTime<Utc>),
    /// Every so often, aligned to the Unix epoch.
    Every(Span),
}

/// A timing in a time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    timing: Timing,
    zone: Zone,
}

/// One slot: an instant, and what DST did to it, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub at: DateTime<Utc>,
    pub dst: Option<DstNote>,
}

/// What a DST change did to a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DstNote {
    /// The wall time did not exist (clocks went forward); the slot is the
    /// first instant after the gap.
    Moved { wall: NaiveDateTime },
    /// Several wall times fell in or at the end of a gap; they fire once.
    Merged { walls: Vec<NaiveDateTime> },
    /// The wall time happened twice (clocks went back); it fires at the
    /// first.
    FirstOfTwice { wall: NaiveDateTime },
    /// A schedule that follows elapsed time fires in the second pass of a
    /// repeated hour too.
    SecondPass { wall: NaiveDateTime },
}

impl fmt::Display for DstNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hm = |wall: &NaiveDateTime| wall.format("%H:%M:%S").to_string();
        match self {
            Self::Moved { wall } => write!(
                f,
                "moved by DST: {} does not exist that day (clocks go forward), so it fires at the first moment after the jump",
                hm(wall)
            ),
            Self::Merged { walls } => {
                let list: Vec<String> = walls.iter().map(hm).collect();
                write!(
                    f,
                    "merged by DST: {} fall in or at the end of the hour clocks skip, so they fire once",
                    list.join(", ")
                )
            }
            Self::FirstOfTwice { wall } => write!(
                f,
                "{} happens twice that day (clocks go back); it fires once, the first time",
                hm(wall)
            ),
            Self::SecondPass { wall } => write!(
                f,
                "{} again, in the repeated hour (clocks went back); schedules that fire at least hourly follow elapsed time",
                hm(wall)
            ),
        }
    }
}

impl Schedule {
    pub fn new(timing: Timing, zone: Zone) -> Self {
        Self { timing, zone }
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    pub fn zone(&self) -> Zone {
        self.zone
    }

    /// The first slot strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<Slot> {
        let after = after.trunc_subsecs(0);
        match &self.timing {
            Timing::At(at) => (*at > after).then_some(Slot { at: *at, dst: None }),
            Timing::Every(period) => {
                let secs = period.as_secs() as i64;
                let next = (after.timestamp().div_euclid(secs) + 1) * secs;
                DateTime::from_timestamp(next, 0).map(|at| Slot { at, dst: None })
            }
            Timing::Cron(expr) if expr.follows_elapsed_time() => self.next_elapsed(expr, after),
            Timing::Cron(expr) => self.next_fixed(expr, after),
        }
    }

    /// The next `count` slots after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, count: usize) -> Vec<Slot> {
        let mut slots = Vec::with_capacity(count.min(1024));
        let mut cursor = after;
        while slots.len() < count {
            let Some(slot) = self.next_after(cursor) else {
                break;
            };
            cursor = slot.at;
            slots.push(slot);
        }
        slots
    }

    /// The newest slot at or before `at`, if any (looked for up to 29
    /// years back).
    pub fn last_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let at = at.trunc_subsecs(0);
        if let Timing::At(when) = &self.timing {
            return (*when <= at).then_some(*when);
        }
        for back in [
            60i64,
            3_600,
            86_400,
            32 * 86_400,
            367 * 86_400,
            29 * 367 * 86_400,
        ] {
            let mut cursor = at - Duration::seconds(back) - Duration::seconds(1);
            let mut last = None;
            while let Some(slot) = self.next_after(cursor) {
                if slot.at > at {
                    break;
                }
                last = Some(slot.at);
                cursor = slot.at;
            }
            if last.is_some() {
                return last;
            }
        }
        None
    }

    /// The time between the slot at `slot` and the one after it: the
    /// schedule's period there (none for a one-shot).
    pub fn period_after(&self, slot: DateTime<Utc>) -> Option<Duration> {
        match &self.timing {
            Timing::At(_) => None,
            Timing::Every(span) => Some(span.as_chrono()),
            Timing::Cron(_) => self.next_after(slot).map(|next| next.at - slot),
        }
    }

    /// A fixed-time schedule: every matching wall time names one instant —
    /// itself, the first of two, or the end of the gap it falls in — and
    /// those instants never decrease as the wall time grows, so the first
    /// candidate whose instant is after `after` is the answer.
    fn next_fixed(&self, expr: &CronExpr, after: DateTime<Utc>) -> Option<Slot> {
        let zone = self.zone;
        let now_offset = zone.offset_secs(after) as i64;
        let earlier_offset = zone.offset_secs(after - Duration::seconds(MAX_JUMP_SECS)) as i64;
        let back = (now_offset - earlier_offset).max(0);
        let mut from = zone.wall(after) - Duration::seconds(back);
        let mut found: Option<(DateTime<Utc>, Resolved, NaiveDateTime)> = None;
        let mut merged = Vec::new();
        for _ in 0..MAX_CANDIDATES {
            let Some(wall) = expr.next_at_or_after(from) else {
                break;
            };
            from = wall + Duration::seconds(1);
            let resolved = zone.resolve(wall);
            let at = match resolved {
                Resolved::Single(at) | Resolved::Repeated(at, _) => at,
                Resolved::Skipped { after } => after,
            };
            match &found {
                None if at > after => {
                    found = Some((at, resolved, wall));
                    merged.push(wall);
                }
                None => {}
                Some((first, ..)) if at == *first => merged.push(wall),
                Some(_) => break,
            }
        }
        let (at, resolved, wall) = found?;
        let dst = if merged.len() > 1 {
            Some(DstNote::Merged { walls: merged })
        } else {
            match resolved {
                Resolved::Single(_) => None,
                Resolved::Repeated(..) => Some(DstNote::FirstOfTwice { wall }),
                Resolved::Skipped { .. } => Some(DstNote::Moved { wall }),
            }
        };
        Some(Slot { at, dst })
    }

    /// A schedule that follows elapsed time: the first instant after
    /// `after` whose wall clock matches. Time is walked in windows of
    /// constant offset (at most a day each), inside which wall clock and
    /// instant move together.
    fn next_elapsed(&self, expr: &CronExpr, after: DateTime<Utc>) -> Option<Slot> {
        let zone = self.zone;
        let mut cursor = after + Duration::seconds(1);
        let limit = after + Duration::days(expr::HORIZON_DAYS);
        while cursor < limit {
            let day_later = cursor + Duration::days(1);
            let window_end = zone.change_within(cursor, day_later).unwrap_or(day_later);
            let offset = Duration::seconds(zone.offset_secs(cursor) as i64);
            let wall = expr.next_at_or_after(zone.wall(cursor))?;
            let at = (wall - offset).and_utc();
            if at < window_end {
                let dst = match zone.resolve(wall) {
                    Resolved::Repeated(_, second) if second == at => {
                        Some(DstNote::SecondPass { wall })
                    }
                    _ => None,
                };
                return Some(Slot { at, dst });
            }
            // Nothing in this window. Offsets lie within ±14 h, so no
            // instant from here on has a wall clock earlier than 28 h before
            // this window's end, and a match at wall time `w` is an instant
            // no earlier than `w` − 14 h: skip to there (a rare date years
            // away is then found in a few steps, not one per day).
            let floor = expr.next_at_or_after(zone.wall(window_end) - Duration::hours(28))?;
            let earliest = (floor - Duration::hours(14)).and_utc();
            cursor = window_end.max(earliest);
        }
        None
    }
}

/// Reads an `at` value: RFC 3339 (`2026-03-08T09:00:00+01:00`), or a wall
/// time (`2026-03-08T09:00`, `2026-03-08 09:00:00`) read in `zone` — a
/// time skipped by DST means the first instant after the gap, a repeated
/// one the first time it happens. Fractions of a second are dropped, and a
/// leap second (`:60`) is the second before it, as its Unix time is.
pub fn parse_at(text: &str, zone: Zone) -> Result<DateTime<Utc>, AtError> {
    let trimmed = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(trimmed) {
        // chrono keeps a leap second as a nanosecond count past 10⁹, which
        // `trunc_subsecs` leaves alone.
        let at = at.with_timezone(&Utc);
        return Ok(at.with_nanosecond(0).unwrap_or(at));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(wall) = NaiveDateTime::parse_from_str(trimmed, format) {
            let wall = wall.with_nanosecond(0).unwrap_or(wall);
            return Ok(match zone.resolve(wall) {
                Resolved::Single(at) | Resolved::Repeated(at, _) => at,
                Resolved::Skipped { after } => after,
            });
        }
    }
    Err(AtError {
        text: text.to_owned(),
    })
}

/// An `at` value that is not a date and time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a date and time; allowed: RFC 3339 (\"2026-03-08T09:00:00+01:00\", \"2026-03-08T08:00:00Z\") or a wall time read in the entry's tz (\"2026-03-08T09:00\", \"2026-03-08 09:00:00\")"
)]
pub struct AtError {
    pub text: String,
}

#[cfg(test)]
mod tests;
