//! Durations as people write them: `90s`, `15m`, `2h`, `1d`, `1h30m`.

use std::fmt;
use std::str::FromStr;

/// A whole number of seconds, at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(u64);

/// The longest span accepted: ten years.
const MAX_SECONDS: u64 = 10 * 366 * 86_400;

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a duration: {problem}; write a number and a unit, e.g. \"90s\", \"15m\", \"2h\", \"1d\" or \"1h30m\""
)]
pub struct SpanError {
    pub text: String,
    pub problem: &'static str,
}

impl Span {
    pub fn from_secs(seconds: u64) -> Self {
        Self(seconds.max(1))
    }

    /// [`Span::from_secs`] for constants; `seconds` must be at least 1.
    pub const fn from_secs_const(seconds: u64) -> Self {
        Self(seconds)
    }

    pub fn as_secs(self) -> u64 {
        self.0
    }

    pub fn as_std(self) -> std::time::Duration {
        std::time::Duration::from_secs(self.0)
    }

    pub fn as_chrono(self) -> chrono::Duration {
        chrono::Duration::seconds(self.0 as i64)
    }
}

impl FromStr for Span {
    type Err = SpanError;

    fn from_str(text: &str) -> Result<Self, SpanError> {
        let error = |problem| SpanError {
            text: text.to_owned(),
            problem,
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(error("it is empty"));
        }
        let compact: String = trimmed.split_whitespace().collect();
        let mut total: u64 = 0;
        let mut rest = compact.as_str();
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(error("each unit needs a number before it"));
            }
            let number: u64 = rest[..digits]
                .parse()
                .map_err(|_| error("the number is too large"))?;
            rest = &rest[digits..];
            let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            let seconds_per = match &rest[..unit_len] {
                "s" | "sec" | "secs" => 1,
                "m" | "min" | "mins" => 60,
                "h" | "hr" | "hrs" => 3_600,
                "d" | "day" | "days" => 86_400,
                "w" | "week" | "weeks" => 7 * 86_400,
                "" => return Err(error("a unit (s, m, h, d or w) is missing")),
                _ => return Err(error("the unit is not one of s, m, h, d, w")),
            };
            rest = &rest[unit_len..];
            total = number
                .checked_mul(seconds_per)
                .and_then(|s| total.checked_add(s))
                .ok_or_else(|| error("it is too long"))?;
        }
        if total == 0 {
            return Err(error("it must be at least one second"));
        }
        if total > MAX_SECONDS {
            return Err(error("it is longer than ten years"));
        }
        Ok(Self(total))
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
            if rest >= size {
                write!(f, "{}{unit}", rest / size)?;
                rest %= size;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_durations_read_and_print() {
        for (text, secs, shown) in [
            ("90s", 90, "1m30s"),
            ("15m", 900, "15m"),
            ("2h", 7_200, "2h"),
            ("1d", 86_400, "1d"),
            ("1h30m", 5_400, "1h30m"),
            (" 20 min ", 1_200, "20m"),
            ("1w", 604_800, "7d"),
        ] {
            let span: Span = text.parse().unwrap();
            assert_eq!(span.as_secs(), secs, "{text}");
            assert_eq!(span.to_string(), shown);
        }
    }

    #[test]
    fn bad_durations_say_what_is_allowed() {
        for text in [
            "",
            "15",
            "m",
            "0s",
            "5y",
            "-5m",
            "1.5h",
            "99999999999999999999s",
            "4000d",
        ] {
            let err = text.parse::<Span>().unwrap_err();
            assert!(
                err.to_string().contains("write a number and a unit"),
                "{err}"
            );
        }
    }
}
