//! Time zones (IANA names, from chrono-tz's compiled-in database) and the
//! two questions a schedule asks of one: what does the wall clock read at
//! an instant, and which instant does a wall-clock reading name — one, two
//! (a repeated hour) or none (a skipped one).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

/// An IANA time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(Tz);

/// Why a zone name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{name}` is not an IANA time zone{hint}; allowed: names such as \"Europe/Berlin\", \"America/New_York\", \"Asia/Kolkata\" or \"UTC\""
)]
pub struct ZoneError {
    pub name: String,
    hint: String,
}

/// Why this machine's zone could not be told.
#[derive(Debug, thiserror::Error)]
pub enum MachineZoneError {
    #[error("cannot tell this machine's time zone: {source}")]
    Unknown {
        source: iana_time_zone::GetTimezoneError,
    },
    #[error(transparent)]
    NotIana(#[from] ZoneError),
}

/// Which instant(s) a wall-clock reading names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// The usual case.
    Single(DateTime<Utc>),
    /// The clock went back and reads this twice (earlier, later).
    Repeated(DateTime<Utc>, DateTime<Utc>),
    /// The clock jumped over this reading; the first instant after the
    /// jump.
    Skipped { after: DateTime<Utc> },
}

impl Zone {
    pub const UTC: Zone = Zone(Tz::UTC);

    /// The zone with this IANA name.
    pub fn named(name: &str) -> Result<Self, ZoneError> {
        Tz::from_str(name.trim()).map(Self).map_err(|_| {
            let lower = name.trim().to_ascii_lowercase();
            let close = chrono_tz::TZ_VARIANTS
                .iter()
                .find(|tz| tz.name().to_ascii_lowercase() == lower)
                .map(|tz| format!(" (did you mean \"{}\"?)", tz.name()))
                .unwrap_or_default();
            ZoneError {
                name: name.to_owned(),
                hint: close,
            }
        })
    }

    /// This machine's zone, or UTC when it cannot be told (with the reason).
    pub fn of_this_machine() -> Result<Self, MachineZoneError> {
        let name = iana_time_zone::get_timezone()
            .map_err(|source| MachineZoneError::Unknown { source })?;
        Ok(Self::named(&name)?)
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn tz(self) -> Tz {
        self.0
    }

    /// The wall clock at `at`.
    pub fn wall(self, at: DateTime<Utc>) -> NaiveDateTime {
        at.with_timezone(&self.0).naive_local()
    }

    /// The offset from UTC at `at`, in seconds.
    pub fn offset_secs(self, at: DateTime<Utc>) -> i32 {
        self.0
            .offset_from_utc_datetime(&at.naive_utc())
            .fix()
            .local_minus_utc()
    }

    /// `at` as an RFC 3339 time in this zone, which [`super::parse_at`]
    /// reads back to `at`. RFC 3339 offsets are whole minutes; where the
    /// zone's is not (its local mean time before standard time, such as
    /// Kathmandu's +05:41:16 until 1920), `at` is written in UTC instead,
    /// since the wall clock and a rounded offset would name another second.
    pub fn show(self, at: DateTime<Utc>) -> String {
        if self.offset_secs(at) % 60 != 0 {
            return at.to_rfc3339();
        }
        at.with_timezone(&self.0).to_rfc3339()
    }

    /// Which instant(s) the wall clock `wall` names.
    pub fn resolve(self, wall: NaiveDateTime) -> Resolved {
        match self.0.from_local_datetime(&wall) {
            LocalResult::Single(at) => Resolved::Single(at.with_timezone(&Utc)),
            LocalResult::Ambiguous(a, b) => {
                let (a, b) = (a.with_timezone(&Utc), b.with_timezone(&Utc));
                Resolved::Repeated(a.min(b), a.max(b))
            }
            LocalResult::None => Resolved::Skipped {
                after: self.end_of_gap(wall),
            },
        }
    }

    /// The first instant after the gap that `wall` falls in: the first
    /// valid wall-clock reading after it, found by doubling then halving.
    fn end_of_gap(self, wall: NaiveDateTime) -> DateTime<Utc> {
        let valid = |w: NaiveDateTime| self.0.from_local_datetime(&w).earliest();
        let mut step = 1i64;
        let mut high = wall + Duration::seconds(step);
        // Gaps are at most a day long (Samoa skipped one in 2011).
        while valid(high).is_none() && step < 3 * 86_400 {
            step *= 2;
            high = wall + Duration::seconds(step);
        }
        let mut low = wall;
        while high - low > Duration::seconds(1) {
            let mid = low + Duration::seconds((high - low).num_seconds() / 2);
            if valid(mid).is_some() {
                high = mid;
            } else {
                low = mid;
            }
        }
        valid(high)
            .map(|at| at.with_timezone(&Utc))
            // Not reached with the real database; keep moving forward.
            .unwrap_or_else(|| high.and_utc())
    }

    /// The first instant in `(from, to]` whose offset differs from the
    /// offset at `from`, if the offset at `to` differs.
    pub fn change_within(self, from: DateTime<Utc>, to: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let offset = self.offset_secs(from);
        if self.offset_secs(to) == offset {
            return None;
        }
        let (mut low, mut high) = (from.timestamp(), to.timestamp());
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if self.offset_secs(instant(mid)) == offset {
                low = mid;
            } else {
                high = mid;
            }
        }
        let high = instant(high);
        Some(high)
    }
}

/// The instant `secs` seconds after the Unix epoch.
fn instant(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `cron_in_at` fuzz target (RFC 0090): in a zone whose
    /// offset had seconds, the written time read back 28 seconds off.
    #[test]
    fn a_time_is_shown_as_what_reads_back_to_it_even_with_an_offset_in_seconds() {
        for (name, at) in [
            ("Asia/Kathmandu", "0011-12-30T09:06:32Z"),
            ("Asia/Kathmandu", "1900-06-01T12:00:00Z"),
            ("Africa/Monrovia", "1970-06-01T12:00:00Z"),
            ("Europe/Berlin", "2026-03-29T01:30:00Z"),
        ] {
            let zone = Zone::named(name).unwrap();
            let at = utc(at);
            let shown = zone.show(at);
            assert_eq!(
                super::super::parse_at(&shown, zone),
                Ok(at),
                "{name}: {shown}"
            );
        }
        let berlin = Zone::named("Europe/Berlin").unwrap();
        assert_eq!(
            berlin.show(utc("2026-06-01T10:00:00Z")),
            "2026-06-01T12:00:00+02:00"
        );
    }

    fn wall(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
    }

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_skipped_reading_resolves_to_the_end_of_the_gap() {
        let ny = Zone::named("America/New_York").unwrap();
        assert_eq!(
            ny.resolve(wall("2026-03-08 02:30")),
            Resolved::Skipped {
                after: utc("2026-03-08T07:00:00Z")
            }
        );
        let lord_howe = Zone::named("Australia/Lord_Howe").unwrap();
        // 02:00 LHST (+10:30) jumps to 02:30 LHDT (+11:00).
        assert_eq!(
            lord_howe.resolve(wall("2026-10-04 02:10")),
            Resolved::Skipped {
                after: utc("2026-10-03T15:30:00Z")
            }
        );
    }

    #[test]
    fn a_repeated_reading_names_two_instants() {
        let ny = Zone::named("America/New_York").unwrap();
        assert_eq!(
            ny.resolve(wall("2026-11-01 01:30")),
            Resolved::Repeated(utc("2026-11-01T05:30:00Z"), utc("2026-11-01T06:30:00Z"))
        );
    }

    #[test]
    fn names_are_checked_with_a_hint() {
        assert_eq!(Zone::named("Asia/Kolkata").unwrap().name(), "Asia/Kolkata");
        let err = Zone::named("europe/london").unwrap_err();
        assert!(
            err.to_string().contains("did you mean \"Europe/London\""),
            "{err}"
        );
        let err = Zone::named("Mars/Olympus").unwrap_err();
        assert!(err.to_string().contains("allowed: names such as"), "{err}");
    }

    #[test]
    fn offset_changes_are_found_to_the_second() {
        let london = Zone::named("Europe/London").unwrap();
        assert_eq!(
            london.change_within(utc("2026-03-28T12:00:00Z"), utc("2026-03-29T12:00:00Z")),
            Some(utc("2026-03-29T01:00:00Z"))
        );
        assert_eq!(
            london.change_within(utc("2026-05-01T00:00:00Z"), utc("2026-05-02T00:00:00Z")),
            None
        );
    }
}
