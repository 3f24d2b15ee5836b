//! One `[[cron]]` entry, checked: its schedule, what it runs, where it
//! speaks, and what happens around its slots.

use chrono::{DateTime, NaiveTime, Timelike, Utc};

use crate::schedule::{Schedule, Span};

/// The keys an entry may have, in the order new entries are written.
pub const KEYS: &[&str] = &[
    "id",
    "cron",
    "at",
    "every",
    "tz",
    "skill",
    "args",
    "message",
    "agent",
    "sender",
    "quiet_start",
    "quiet_end",
    "missed",
    "missed_within",
    "enabled",
    "deliver",
    "timeout",
    "origin",
];

/// The sender an entry speaks as unless it says otherwise.
pub(crate) const DEFAULT_SENDER: &str = "cron";

/// How long a run may take unless the entry says otherwise.
pub(crate) const DEFAULT_TIMEOUT: Span = Span::from_secs_const(600);

/// A checked entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub schedule: Schedule,
    /// The schedule as written (`cron = "…"`, `at = "…"`, `every = "…"`).
    pub written: Written,
    /// Whether `tz` was in the file (else this machine's zone is used).
    pub tz_written: bool,
    pub action: Action,
    /// Empty: the daemon's default agent.
    pub agent: String,
    pub sender: String,
    pub quiet: Option<Quiet>,
    pub missed: Missed,
    /// Set in the file; else [`Entry::missed_within`] derives it.
    pub missed_within: Option<Span>,
    pub enabled: bool,
    pub deliver: Deliver,
    pub timeout: Span,
    /// The gateway sender (`tg:42`) whose chain made this entry through
    /// the MCP tools, if one did: its turns run under the daemon's gateway
    /// rule as that sender's, and only that sender's calls see the entry.
    pub origin: Option<String>,
}

/// The schedule key and value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub key: &'static str,
    pub value: String,
}

/// What a slot runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `/<skill> <args>`.
    Skill { name: String, args: String },
    /// A message, as if the sender had typed it.
    Message(String),
}

impl Action {
    /// The content of the turn.
    pub fn content(&self) -> String {
        match self {
            Self::Skill { name, args } if args.is_empty() => format!("/{name}"),
            Self::Skill { name, args } => format!("/{name} {args}"),
            Self::Message(text) => text.clone(),
        }
    }
}

/// After downtime: fire one catch-up, or only record the slots missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Missed {
    #[default]
    Skip,
    Once,
}

impl Missed {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::Once => "once",
        }
    }
}

/// Why a `deliver` value names no destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeliverError {
    #[error("unknown destination")]
    Unknown,
    #[error(
        "a forum topic is telegram:<group chat id>:<topic id>, both numbers (the group's id is negative)"
    )]
    Topic,
    #[error("the chat must be a numeric chat id or an @channel name")]
    Chat,
}

/// Where the final reply goes besides the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Deliver {
    #[default]
    None,
    /// A Telegram chat: a numeric id or `@channel`.
    Telegram(String),
}

impl Deliver {
    pub fn parse(text: &str) -> Result<Self, DeliverError> {
        if text == "none" {
            return Ok(Self::None);
        }
        let Some(chat) = text.strip_prefix("telegram:") else {
            return Err(DeliverError::Unknown);
        };
        // A forum topic: `telegram:<chat id>:<topic id>`.
        if let Some((group, topic)) = chat.split_once(':') {
            let group_ok = group.strip_prefix('-').is_some_and(|digits| {
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            });
            let topic_ok = topic.parse::<u32>().is_ok_and(|t| t > 0);
            if !group_ok || !topic_ok {
                return Err(DeliverError::Topic);
            }
            return Ok(Self::Telegram(chat.to_owned()));
        }
        let numeric = chat
            .strip_prefix('-')
            .unwrap_or(chat)
            .bytes()
            .all(|b| b.is_ascii_digit());
        let channel = chat.len() > 1
            && chat.starts_with('@')
            && chat[1..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if chat.is_empty() || !(numeric || channel) || chat == "-" {
            return Err(DeliverError::Chat);
        }
        Ok(Self::Telegram(chat.to_owned()))
    }

    /// The destination of the Telegram conversation `sender` (`tg:42`,
    /// `tg:-100123:7`), if it is one.
    pub fn of_telegram_sender(sender: &str) -> Option<Self> {
        let chat = sender.strip_prefix("tg:")?;
        Self::parse(&format!("telegram:{chat}"))
            .ok()
            .filter(|d| !matches!(d, Self::Telegram(c) if c.starts_with('@')))
    }

    pub fn to_text(&self) -> String {
        match self {
            Self::None => "none".into(),
            Self::Telegram(chat) => format!("telegram:{chat}"),
        }
    }
}

/// Quiet hours: `[start, end)` on the entry's wall clock, across midnight
/// when `start > end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quiet {
    pub start: NaiveTime,
    pub end: NaiveTime,
}

impl Quiet {
    pub fn parse_time(text: &str) -> Option<NaiveTime> {
        let (h, m) = text.split_once(':')?;
        if h.len() != 2 || m.len() != 2 {
            return None;
        }
        NaiveTime::from_hms_opt(h.parse().ok()?, m.parse().ok()?, 0)
    }

    /// Whether `at` (a wall-clock time) is inside.
    pub fn contains(&self, at: NaiveTime) -> bool {
        let at = at.with_nanosecond(0).unwrap_or(at);
        if self.start <= self.end {
            self.start <= at && at < self.end
        } else {
            at >= self.start || at < self.end
        }
    }
}

impl Entry {
    /// Whether `slot` falls in the entry's quiet hours.
    pub fn is_quiet(&self, slot: DateTime<Utc>) -> bool {
        self.quiet
            .is_some_and(|quiet| quiet.contains(self.schedule.zone().wall(slot).time()))
    }

    /// How late a missed slot may still be caught up (and how long a slot
    /// may retry a daemon that is down): as set, else half the period,
    /// between 2 minutes and 2 hours.
    pub fn missed_within(&self, slot: DateTime<Utc>) -> Span {
        if let Some(span) = self.missed_within {
            return span;
        }
        let half = self
            .schedule
            .period_after(slot)
            .map_or(7_200, |period| period.num_seconds() / 2);
        Span::from_secs(half.clamp(120, 7_200) as u64)
    }

    /// Whether the entry fires once and is then done.
    pub fn is_one_shot(&self) -> bool {
        self.written.key == "at"
    }
}

/// Whether `id` is a slug: 1-64 of `[a-z0-9_-]`, starting with a letter or
/// digit.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && id.as_bytes()[0].is_ascii_alphanumeric()
}

/// An id made from `text`: its first words, lowercased, joined by `-`.
#[cfg(feature = "service")]
pub(crate) fn slug_of(text: &str) -> String {
    let mut slug = String::new();
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if slug.len() + word.len() + 1 > 32 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() {
        "entry".into()
    } else {
        slug
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_wrap_midnight() {
        let t = |s| Quiet::parse_time(s).unwrap();
        let night = Quiet {
            start: t("22:00"),
            end: t("07:00"),
        };
        assert!(night.contains(t("23:30")));
        assert!(night.contains(t("00:00")));
        assert!(night.contains(t("06:59")));
        assert!(!night.contains(t("07:00")));
        assert!(!night.contains(t("12:00")));
        let lunch = Quiet {
            start: t("12:00"),
            end: t("13:00"),
        };
        assert!(lunch.contains(t("12:30")));
        assert!(!lunch.contains(t("13:00")));
        for bad in ["7:00", "24:00", "12:60", "noon", "12-00"] {
            assert!(Quiet::parse_time(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn destinations() {
        assert_eq!(Deliver::parse("none"), Ok(Deliver::None));
        assert_eq!(
            Deliver::parse("telegram:42"),
            Ok(Deliver::Telegram("42".into()))
        );
        assert_eq!(
            Deliver::parse("telegram:-1001234"),
            Ok(Deliver::Telegram("-1001234".into()))
        );
        assert_eq!(
            Deliver::parse("telegram:@news_room"),
            Ok(Deliver::Telegram("@news_room".into()))
        );
        assert_eq!(
            Deliver::parse("telegram:-1001234:7"),
            Ok(Deliver::Telegram("-1001234:7".into()))
        );
        for (bad, why) in [
            ("telegram:", DeliverError::Chat),
            ("telegram:abc", DeliverError::Chat),
            ("slack:1", DeliverError::Unknown),
            ("telegram:-", DeliverError::Chat),
            ("telegram:@", DeliverError::Chat),
            ("telegram:42:7", DeliverError::Topic),
            ("telegram:-100:0", DeliverError::Topic),
            ("telegram:-100:x", DeliverError::Topic),
            ("telegram:@news:3", DeliverError::Topic),
        ] {
            assert_eq!(Deliver::parse(bad), Err(why), "{bad}");
        }
        assert_eq!(
            Deliver::of_telegram_sender("tg:42"),
            Some(Deliver::Telegram("42".into()))
        );
        assert_eq!(
            Deliver::of_telegram_sender("tg:-100123:7"),
            Some(Deliver::Telegram("-100123:7".into()))
        );
        assert_eq!(Deliver::of_telegram_sender("user"), None);
        assert_eq!(Deliver::of_telegram_sender("tg:@x"), None);
    }

    #[test]
    fn ids() {
        assert!(valid_id("standup"));
        assert!(valid_id("check-build_2"));
        assert!(!valid_id("Standup"));
        assert!(!valid_id("-x"));
        assert!(!valid_id("a b"));
    }

    #[test]
    #[cfg(feature = "service")]
    fn slugs() {
        assert_eq!(slug_of("Remind me to stretch!"), "remind-me-to-stretch");
        assert_eq!(slug_of("!!!"), "entry");
    }
}
