//! One field of a crontab expression: the set of values it allows.
//!
//! A field is a comma-separated list of items; an item is `*`, a value, a
//! range `a-b`, any of those followed by a step `/n`, or `a/n` (from `a` to
//! the field's end). Months and weekdays also take their English names
//! (`jan`, `mon`, case-insensitive). In the weekday field both 0 and 7 are
//! Sunday, so `5-7` is Friday to Sunday.

use std::fmt;

/// Which field of the expression, with its range and names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl FieldKind {
    /// The smallest and largest value written in the field.
    pub fn bounds(self) -> (u8, u8) {
        match self {
            Self::Second | Self::Minute => (0, 59),
            Self::Hour => (0, 23),
            Self::DayOfMonth => (1, 31),
            Self::Month => (1, 12),
            Self::DayOfWeek => (0, 7),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day-of-month",
            Self::Month => "month",
            Self::DayOfWeek => "day-of-week",
        }
    }

    /// What the field accepts, for error messages.
    pub fn allowed(self) -> String {
        let (low, high) = self.bounds();
        let names = match self {
            Self::Month => " or jan-dec",
            Self::DayOfWeek => " (0 and 7 are Sunday) or sun-sat",
            _ => "",
        };
        format!(
            "{low}-{high}{names}, `*`, lists (`1,15`), ranges (`1-5`) and steps (`*/15`, `0-30/10`)"
        )
    }

    fn value_of_name(self, text: &str) -> Option<u8> {
        let names: &[&str] = match self {
            Self::Month => &MONTHS,
            Self::DayOfWeek => &WEEKDAYS,
            _ => return None,
        };
        let lower = text.to_ascii_lowercase();
        let index = names.iter().position(|name| *name == lower)? as u8;
        Some(if self == Self::Month {
            index + 1
        } else {
            index
        })
    }
}

impl fmt::Display for FieldKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A field that could not be read: which field, the text, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} field `{text}`: {problem}; allowed: {allowed}", allowed = kind.allowed())]
pub struct FieldError {
    pub kind: FieldKind,
    pub text: String,
    pub problem: FieldProblem,
}

/// What is wrong with a field's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    #[error("empty")]
    Empty,
    #[error("step `{step}` in `{item}` is not a number")]
    StepNotANumber { step: String, item: String },
    #[error("step 0 in `{item}` never advances")]
    ZeroStep { item: String },
    #[error("range `{range}` runs backwards; write the smaller value first")]
    Backwards { range: String },
    #[error("`{item}` is missing a value")]
    MissingValue { item: String },
    #[error("{value} is out of range")]
    OutOfRange { value: String },
    #[error("`{text}` is not a {kind}")]
    NotAName { text: String, kind: FieldKind },
}

/// The values a field allows, as a bit set (bit `v` set = value `v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Field {
    bits: u64,
    /// Whether the text starts with `*` (crontab(5)'s "unrestricted", which
    /// decides how the two day fields combine and how DST is handled).
    star: bool,
}

impl Field {
    /// Reads `text` as a field of `kind`.
    pub(super) fn parse(kind: FieldKind, text: &str) -> Result<Self, FieldError> {
        let error = |problem: FieldProblem| FieldError {
            kind,
            text: text.to_owned(),
            problem,
        };
        if text.is_empty() {
            return Err(error(FieldProblem::Empty));
        }
        let mut bits = 0u64;
        for item in text.split(',') {
            bits |= parse_item(kind, item).map_err(error)?;
        }
        if kind == FieldKind::DayOfWeek && bits & (1 << 7) != 0 {
            // 7 is Sunday too.
            bits = (bits & !(1 << 7)) | 1;
        }
        Ok(Self {
            bits,
            star: text.starts_with('*'),
        })
    }

    /// The field that allows exactly `value`.
    pub(super) fn single(value: u8) -> Self {
        Self {
            bits: 1 << value,
            star: false,
        }
    }

    pub(super) fn contains(self, value: u32) -> bool {
        value < 64 && self.bits & (1 << value) != 0
    }

    /// The smallest allowed value ≥ `from`.
    pub(super) fn next_at_or_after(self, from: u32) -> Option<u32> {
        if from >= 64 {
            return None;
        }
        let rest = self.bits >> from;
        (rest != 0).then(|| from + rest.trailing_zeros())
    }

    /// The smallest allowed value.
    pub(super) fn first(self) -> Option<u32> {
        self.next_at_or_after(0)
    }

    pub(super) fn is_star(self) -> bool {
        self.star
    }

    pub(super) fn len(self) -> u32 {
        self.bits.count_ones()
    }
}

fn parse_item(kind: FieldKind, item: &str) -> Result<u64, FieldProblem> {
    let (low_bound, high_bound) = kind.bounds();
    let (range, step) = match item.split_once('/') {
        Some((range, step)) => {
            let step: u8 = step.parse().map_err(|_| FieldProblem::StepNotANumber {
                step: step.to_owned(),
                item: item.to_owned(),
            })?;
            if step == 0 {
                return Err(FieldProblem::ZeroStep {
                    item: item.to_owned(),
                });
            }
            (range, Some(step))
        }
        None => (item, None),
    };
    let (low, high) = if range == "*" {
        (low_bound, high_bound)
    } else if let Some((a, b)) = range.split_once('-') {
        let (a, b) = (value(kind, a, item)?, value(kind, b, item)?);
        if a > b {
            return Err(FieldProblem::Backwards {
                range: range.to_owned(),
            });
        }
        (a, b)
    } else {
        let start = value(kind, range, item)?;
        // `a/n` runs from `a` to the end of the field.
        (start, if step.is_some() { high_bound } else { start })
    };
    let mut bits = 0u64;
    let mut v = low;
    loop {
        bits |= 1 << v;
        match v.checked_add(step.unwrap_or(1)) {
            Some(next) if next <= high => v = next,
            _ => break,
        }
    }
    Ok(bits)
}

fn value(kind: FieldKind, text: &str, item: &str) -> Result<u8, FieldProblem> {
    if text.is_empty() {
        return Err(FieldProblem::MissingValue {
            item: item.to_owned(),
        });
    }
    let (low, high) = kind.bounds();
    let parsed = if text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u32>()
            .ok()
            .filter(|v| (low as u32..=high as u32).contains(v))
            .map(|v| v as u8)
            .ok_or_else(|| FieldProblem::OutOfRange {
                value: text.to_owned(),
            })?
    } else {
        kind.value_of_name(text)
            .ok_or_else(|| FieldProblem::NotAName {
                text: text.to_owned(),
                kind,
            })?
    };
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(kind: FieldKind, text: &str) -> Vec<u32> {
        let field = Field::parse(kind, text).unwrap();
        (0..64).filter(|v| field.contains(*v)).collect()
    }

    #[test]
    fn items_lists_ranges_steps_and_names() {
        assert_eq!(values(FieldKind::Minute, "*/15"), [0, 15, 30, 45]);
        assert_eq!(values(FieldKind::Minute, "5/20"), [5, 25, 45]);
        assert_eq!(values(FieldKind::Hour, "1-5,22"), [1, 2, 3, 4, 5, 22]);
        assert_eq!(values(FieldKind::Hour, "0-10/5"), [0, 5, 10]);
        assert_eq!(values(FieldKind::Month, "jan,MAR-may"), [1, 3, 4, 5]);
        assert_eq!(values(FieldKind::DayOfWeek, "mon-fri"), [1, 2, 3, 4, 5]);
        assert_eq!(values(FieldKind::DayOfWeek, "1-5"), [1, 2, 3, 4, 5]);
        assert_eq!(values(FieldKind::DayOfWeek, "7"), [0]);
        assert_eq!(values(FieldKind::DayOfWeek, "5-7"), [0, 5, 6]);
        assert_eq!(values(FieldKind::DayOfWeek, "*"), [0, 1, 2, 3, 4, 5, 6]);
        assert!(Field::parse(FieldKind::DayOfWeek, "*/2").unwrap().is_star());
        assert!(!Field::parse(FieldKind::DayOfWeek, "1").unwrap().is_star());
    }

    #[test]
    fn bad_fields_say_which_value_and_what_is_allowed() {
        let err = Field::parse(FieldKind::Minute, "61").unwrap_err();
        assert_eq!(
            err.to_string(),
            "minute field `61`: 61 is out of range; allowed: 0-59, `*`, lists (`1,15`), ranges (`1-5`) and steps (`*/15`, `0-30/10`)"
        );
        for (kind, text) in [
            (FieldKind::Hour, "24"),
            (FieldKind::DayOfMonth, "0"),
            (FieldKind::Month, "13"),
            (FieldKind::DayOfWeek, "8"),
            (FieldKind::Minute, "*/0"),
            (FieldKind::Minute, "5-1"),
            (FieldKind::Minute, "a"),
            (FieldKind::Month, "mon"),
            (FieldKind::Minute, "1,,2"),
            (FieldKind::Minute, ""),
            (FieldKind::Minute, "-5"),
            (FieldKind::Minute, "*/x"),
        ] {
            let err = Field::parse(kind, text).unwrap_err();
            assert_eq!(err.kind, kind);
            assert!(err.to_string().contains("allowed:"), "{err}");
        }
    }

    #[test]
    fn each_bad_field_names_its_problem() {
        let owned = |s: &str| s.to_owned();
        for (kind, text, problem) in [
            (FieldKind::Minute, "", FieldProblem::Empty),
            (
                FieldKind::Minute,
                "*/x",
                FieldProblem::StepNotANumber {
                    step: owned("x"),
                    item: owned("*/x"),
                },
            ),
            (
                FieldKind::Minute,
                "*/0",
                FieldProblem::ZeroStep { item: owned("*/0") },
            ),
            (
                FieldKind::Minute,
                "5-1",
                FieldProblem::Backwards {
                    range: owned("5-1"),
                },
            ),
            (
                FieldKind::Minute,
                "1,,2",
                FieldProblem::MissingValue { item: owned("") },
            ),
            (
                FieldKind::Minute,
                "-5",
                FieldProblem::MissingValue { item: owned("-5") },
            ),
            (
                FieldKind::Hour,
                "24",
                FieldProblem::OutOfRange { value: owned("24") },
            ),
            (
                FieldKind::Month,
                "mon",
                FieldProblem::NotAName {
                    text: owned("mon"),
                    kind: FieldKind::Month,
                },
            ),
        ] {
            assert_eq!(
                Field::parse(kind, text).unwrap_err().problem,
                problem,
                "{text}"
            );
        }
        assert_eq!(
            Field::parse(FieldKind::Month, "mon")
                .unwrap_err()
                .to_string(),
            "month field `mon`: `mon` is not a month; allowed: 1-12 or jan-dec, `*`, lists (`1,15`), ranges (`1-5`) and steps (`*/15`, `0-30/10`)"
        );
    }

    #[test]
    fn next_value_at_or_after() {
        let field = Field::parse(FieldKind::Minute, "10,40").unwrap();
        assert_eq!(field.next_at_or_after(0), Some(10));
        assert_eq!(field.next_at_or_after(10), Some(10));
        assert_eq!(field.next_at_or_after(11), Some(40));
        assert_eq!(field.next_at_or_after(41), None);
        assert_eq!(field.next_at_or_after(70), None);
    }
}
