//! Crontab expressions: what a wall clock must read for a slot.
//!
//! Five fields (`minute hour day-of-month month day-of-week`, as in
//! crontab(5)), six with a leading `second` field, or one of the macros
//! `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`),
//! `@hourly`. The day fields combine as crontab(5) says: when both are
//! restricted (neither starts with `*`), a day matching either fires;
//! otherwise both must match.
//!
//! This module knows wall clocks only ([`NaiveDateTime`]); time zones and
//! their DST changes are applied by [`Schedule`](super::Schedule).

use std::fmt;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use super::field::{Field, FieldError, FieldKind};

/// How far ahead a wall-clock match is looked for: the Gregorian
/// calendar repeats every 400 years (146,097 days, a whole number of
/// weeks), so an expression with no match in that span never matches.
/// The 28-year cycle is not enough: `0 0 29 2 */7` (29 February on a
/// Sunday) has no match from 2096 to 2128, because 2100 is no leap year.
/// Months that do not match are skipped whole, so even a search through
/// the full span costs a few thousand steps for a rare date.
pub(super) const HORIZON_DAYS: i64 = 146_097 + 7;

/// Why an expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    #[error(
        "`{text}` has {count} fields; write 5 (minute hour day-of-month month day-of-week), 6 (with a leading second) or a macro (@hourly, @daily, @weekly, @monthly, @yearly)"
    )]
    FieldCount { text: String, count: usize },
    #[error(
        "unknown macro `{text}`; allowed: @hourly, @daily (@midnight), @weekly, @monthly, @yearly (@annually)"
    )]
    Macro { text: String },
    #[error(transparent)]
    Field(#[from] FieldError),
    #[error("`{text}` never fires: no date matches its day and month fields")]
    Never { text: String },
}

/// A parsed crontab expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    text: String,
    second: Field,
    minute: Field,
    hour: Field,
    day: Field,
    month: Field,
    weekday: Field,
}

impl CronExpr {
    pub fn parse(text: &str) -> Result<Self, ExprError> {
        let trimmed = text.trim();
        let expanded = if trimmed.starts_with('@') {
            expand_macro(trimmed)?
        } else {
            trimmed
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match fields.len() {
            5 => (Field::single(0), &fields[..]),
            6 => (Field::parse(FieldKind::Second, fields[0])?, &fields[1..]),
            count => {
                return Err(ExprError::FieldCount {
                    text: trimmed.to_owned(),
                    count,
                });
            }
        };
        let expr = Self {
            text: trimmed.to_owned(),
            second,
            minute: Field::parse(FieldKind::Minute, rest[0])?,
            hour: Field::parse(FieldKind::Hour, rest[1])?,
            day: Field::parse(FieldKind::DayOfMonth, rest[2])?,
            month: Field::parse(FieldKind::Month, rest[3])?,
            weekday: Field::parse(FieldKind::DayOfWeek, rest[4])?,
        };
        let start = NaiveDate::from_ymd_opt(2000, 1, 1)
            .expect("a valid date")
            .and_time(NaiveTime::MIN);
        if expr.next_date_at_or_after(start.date()).is_none() {
            return Err(ExprError::Never {
                text: trimmed.to_owned(),
            });
        }
        Ok(expr)
    }

    /// The expression as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether slots follow real elapsed time rather than a wall-clock
    /// time: the expression fires at least hourly, because its second or
    /// minute field starts with `*`, or its hour field names every hour —
    /// however it is written (`*`, `*/1`, `0-23`): the meaning decides, not
    /// the spelling. Such a schedule fires in both passes of a repeated
    /// hour and skips wall times that do not exist; every other schedule
    /// is a fixed time of day (see [`Schedule`](super::Schedule)).
    pub fn follows_elapsed_time(&self) -> bool {
        self.second.is_star() || self.minute.is_star() || self.hour.len() == 24
    }

    /// Whether the wall clock `at` matches every field.
    pub fn matches(&self, at: NaiveDateTime) -> bool {
        self.second.contains(at.second())
            && self.minute.contains(at.minute())
            && self.hour.contains(at.hour())
            && self.matches_date(at.date())
    }

    /// Whether `date` is a day the expression fires on.
    pub fn matches_date(&self, date: NaiveDate) -> bool {
        if !self.month.contains(date.month()) {
            return false;
        }
        let by_day = self.day.contains(date.day());
        let by_weekday = self.weekday.contains(date.weekday().num_days_from_sunday());
        if self.day.is_star() || self.weekday.is_star() {
            by_day && by_weekday
        } else {
            by_day || by_weekday
        }
    }

    /// The first matching wall clock at or after `from` (whole seconds).
    pub fn next_at_or_after(&self, from: NaiveDateTime) -> Option<NaiveDateTime> {
        let from = from.with_nanosecond(0)?;
        let mut date = from.date();
        let mut earliest = Some(from.time());
        loop {
            date = self.next_date_at_or_after(date)?;
            let from_time = if date == from.date() {
                earliest.take()
            } else {
                None
            };
            if let Some(time) = self.first_time(from_time.unwrap_or(NaiveTime::MIN)) {
                return Some(date.and_time(time));
            }
            date = date.succ_opt()?;
        }
    }

    /// The first matching day at or after `from`, within the horizon.
    fn next_date_at_or_after(&self, from: NaiveDate) -> Option<NaiveDate> {
        let limit = from + Duration::days(HORIZON_DAYS);
        let mut date = from;
        while date <= limit {
            if !self.month.contains(date.month()) {
                let (year, month) = match self.month.next_at_or_after(date.month() + 1) {
                    Some(month) if month <= 12 => (date.year(), month),
                    _ => (date.year() + 1, self.month.first()?),
                };
                date = NaiveDate::from_ymd_opt(year, month, 1)?;
                continue;
            }
            if self.matches_date(date) {
                return Some(date);
            }
            date = date.succ_opt()?;
        }
        None
    }

    /// The first matching time of day at or after `from`.
    fn first_time(&self, from: NaiveTime) -> Option<NaiveTime> {
        let mut hour = self.hour.next_at_or_after(from.hour())?;
        loop {
            let same_hour = hour == from.hour();
            let minute_from = if same_hour { from.minute() } else { 0 };
            if let Some(mut minute) = self.minute.next_at_or_after(minute_from) {
                loop {
                    let second_from = if same_hour && minute == from.minute() {
                        from.second()
                    } else {
                        0
                    };
                    if let Some(second) = self.second.next_at_or_after(second_from)
                        && second < 60
                    {
                        return NaiveTime::from_hms_opt(hour, minute, second);
                    }
                    minute = match self.minute.next_at_or_after(minute + 1) {
                        Some(next) if next < 60 => next,
                        _ => break,
                    };
                }
            }
            hour = match self.hour.next_at_or_after(hour + 1) {
                Some(next) if next < 24 => next,
                _ => return None,
            };
        }
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn expand_macro(text: &str) -> Result<&'static str, ExprError> {
    Ok(match text.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => {
            return Err(ExprError::Macro {
                text: text.to_owned(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    fn next(expr: &str, from: &str) -> String {
        CronExpr::parse(expr)
            .unwrap()
            .next_at_or_after(at(from))
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S %a")
            .to_string()
    }

    #[test]
    fn five_fields_have_no_seconds_and_six_fields_lead_with_them() {
        assert_eq!(
            next("*/15 * * * *", "2026-01-01 10:07:30"),
            "2026-01-01 10:15:00 Thu"
        );
        assert_eq!(
            next("*/20 * * * * *", "2026-01-01 10:07:30"),
            "2026-01-01 10:07:40 Thu"
        );
        assert_eq!(
            next("0 0 9 * * *", "2026-01-01 10:00:00"),
            "2026-01-02 09:00:00 Fri"
        );
    }

    #[test]
    fn zero_and_seven_are_sunday_and_one_to_five_is_monday_to_friday() {
        // 2026-03-07 is a Saturday.
        assert_eq!(
            next("0 9 * * 0", "2026-03-07 00:00:00"),
            "2026-03-08 09:00:00 Sun"
        );
        assert_eq!(
            next("0 9 * * 7", "2026-03-07 00:00:00"),
            "2026-03-08 09:00:00 Sun"
        );
        assert_eq!(
            next("0 9 * * 1-5", "2026-03-07 00:00:00"),
            "2026-03-09 09:00:00 Mon"
        );
        assert_eq!(
            next("0 9 * * 1-5", "2026-03-13 09:00:01"),
            "2026-03-16 09:00:00 Mon"
        );
    }

    #[test]
    fn restricted_day_fields_are_ored_and_a_star_day_field_is_anded() {
        // The 13th or any Monday.
        assert_eq!(
            next("0 9 13 * 1", "2026-03-07 00:00:00"),
            "2026-03-09 09:00:00 Mon"
        );
        assert_eq!(
            next("0 9 13 * 1", "2026-03-10 00:00:00"),
            "2026-03-13 09:00:00 Fri"
        );
        // `*/2` starts with `*`: odd days that are Mondays.
        assert_eq!(
            next("0 9 */2 * 1", "2026-03-07 00:00:00"),
            "2026-03-09 09:00:00 Mon"
        );
        assert_eq!(
            next("0 9 */2 * 1", "2026-03-10 00:00:00"),
            "2026-03-23 09:00:00 Mon"
        );
    }

    #[test]
    fn macros_and_rare_dates() {
        assert_eq!(
            next("@yearly", "2026-03-07 00:00:00"),
            "2027-01-01 00:00:00 Fri"
        );
        assert_eq!(
            next("@weekly", "2026-03-07 00:00:00"),
            "2026-03-08 00:00:00 Sun"
        );
        assert_eq!(
            next("@hourly", "2026-03-07 00:00:01"),
            "2026-03-07 01:00:00 Sat"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-03-07 00:00:00"),
            "2028-02-29 00:00:00 Tue"
        );
        assert_eq!(
            next("0 12 31 * *", "2026-04-01 00:00:00"),
            "2026-05-31 12:00:00 Sun"
        );
        // 29 February on a Sunday: none between 2096 and 2128 (2100 is no
        // leap year), past the 28-year cycle.
        assert_eq!(
            next("0 0 29 2 */7", "2089-01-01 00:00:00"),
            "2128-02-29 00:00:00 Sun"
        );
    }

    #[test]
    fn refusals_name_the_problem() {
        assert!(matches!(
            CronExpr::parse("* * * *"),
            Err(ExprError::FieldCount { count: 4, .. })
        ));
        assert!(matches!(
            CronExpr::parse("@reboot"),
            Err(ExprError::Macro { .. })
        ));
        assert!(matches!(
            CronExpr::parse("0 0 30 2 *"),
            Err(ExprError::Never { .. })
        ));
        let err = CronExpr::parse("0 25 * * *").unwrap_err();
        assert!(err.to_string().starts_with("hour field `25`"), "{err}");
    }

    #[test]
    fn elapsed_time_schedules_are_the_at_least_hourly_ones() {
        for expr in [
            "*/15 * * * *",
            "30 * * * *",
            "* 3 * * *",
            "*/10 30 2 * * *",
            "0 0-23 * * *",
            "0 */1 * * *",
            "0 0-23/1 * * *",
            "0 0-11,12-23 * * *",
        ] {
            assert!(
                CronExpr::parse(expr).unwrap().follows_elapsed_time(),
                "{expr}"
            );
        }
        for expr in [
            "30 2 * * *",
            "0 */2 * * *",
            "30 1,13 * * *",
            "0 30 2 * * *",
            "@daily",
        ] {
            assert!(
                !CronExpr::parse(expr).unwrap().follows_elapsed_time(),
                "{expr}"
            );
        }
    }
}
