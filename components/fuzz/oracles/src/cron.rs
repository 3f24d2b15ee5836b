//! Cron expressions, `every`, `in` and `at`, as users and models type them.
//!
//! Oracles for an expression that parses:
//!
//! - on the wall clock, [`CronExpr::next_at_or_after`] agrees with a plain
//!   walker that tries every minute (every second, for six fields) in a
//!   small range, and each answer matches the expression's fields;
//! - in a time zone, [`Schedule::upcoming`] is strictly increasing, every
//!   slot's wall clock matches the fields unless DST moved the slot (and
//!   says so), and where the expression follows elapsed time (or the zone
//!   has no DST) it agrees with a walker over instants.
//!
//! For `in`: the instant a span from now names, written as crons.toml
//! keeps it (`Zone::show`) and read back (`parse_at`), is the same
//! instant. For `at`: what is read is the instant written.

use chrono::{DateTime, Duration, NaiveDateTime, Timelike, Utc};
use crabtalk_cron::{CronExpr, DstNote, Schedule, Span, Timing, Zone, parse_at};

/// Zones with the changes that matter: DST both ways, a half-hour DST,
/// an odd offset, a skipped day, none at all.
const ZONES: [&str; 6] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Asia/Kathmandu",
];

/// Instants near the changes of those zones, and plain ones.
const STARTS: [i64; 6] = [
    1_774_746_000, // 2026-03-29T01:00:00Z, Berlin springs forward
    1_792_886_400, // 2026-10-25T00:00:00Z, Berlin falls back
    1_772_953_200, // 2026-03-08T07:00:00Z, New York springs forward
    1_325_239_200, // 2011-12-30T10:00:00Z, Apia skips a day
    1_704_067_200, // 2024-01-01T00:00:00Z
    1_709_164_800, // 2024-02-29T00:00:00Z
];

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn zone_of(hash: u64) -> Zone {
    Zone::named(ZONES[(hash % ZONES.len() as u64) as usize]).expect("a known zone")
}

fn start_of(hash: u64) -> DateTime<Utc> {
    let base = STARTS[((hash >> 8) % STARTS.len() as u64) as usize];
    // Up to two days either side, whole seconds.
    let shift = ((hash >> 16) % (4 * 86_400)) as i64 - 2 * 86_400;
    DateTime::from_timestamp(base + shift, 0).expect("in range")
}

pub fn cron_expr(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = CronExpr::parse(text) else {
        return;
    };
    let hash = fnv(data);
    let seconds = text.split_whitespace().count() == 6;
    wall_clock(&expr, start_of(hash).naive_utc(), seconds);
    in_zone(
        &expr,
        zone_of(hash),
        start_of(hash.rotate_left(17)),
        seconds,
    );
}

/// The first wall clock at or after `from` that matches, trying every
/// step up to `horizon`.
fn walk_wall(
    expr: &CronExpr,
    from: NaiveDateTime,
    step: Duration,
    horizon: NaiveDateTime,
) -> Option<NaiveDateTime> {
    let mut at = from;
    while at <= horizon {
        if expr.matches(at) {
            return Some(at);
        }
        at += step;
    }
    None
}

fn wall_clock(expr: &CronExpr, from: NaiveDateTime, seconds: bool) {
    // Five fields fire on whole minutes: walk minutes from the next one.
    let (step, span, mut from) = if seconds {
        (Duration::seconds(1), Duration::hours(3), from)
    } else {
        let up = from.with_second(0).expect("valid") + Duration::minutes(1);
        (Duration::minutes(1), Duration::days(3), up)
    };
    let horizon = from + span;
    let mut last: Option<NaiveDateTime> = None;
    for _ in 0..4 {
        let next = expr.next_at_or_after(from);
        let walked = walk_wall(expr, from, step, horizon);
        match (next, walked) {
            (Some(next), Some(walked)) => assert_eq!(
                next, walked,
                "{expr}: next_at_or_after({from}) is not the first match the walker finds"
            ),
            (None, Some(walked)) => panic!("{expr}: no next after {from}, but {walked} matches"),
            (Some(next), None) => {
                assert!(
                    next > horizon,
                    "{expr}: {next} matches, the walker found nothing"
                );
            }
            (None, None) => {}
        }
        let Some(next) = next else { break };
        assert!(
            expr.matches(next),
            "{expr}: {next} does not match its fields"
        );
        if let Some(last) = last {
            assert!(next > last, "{expr}: {next} after {last}");
        }
        if next > horizon {
            break;
        }
        last = Some(next);
        from = next + step;
    }
}

fn in_zone(expr: &CronExpr, zone: Zone, after: DateTime<Utc>, seconds: bool) {
    let schedule = Schedule::new(Timing::Cron(expr.clone()), zone);
    let slots = schedule.upcoming(after, 4);
    let mut previous = after;
    for slot in &slots {
        assert!(
            slot.at > previous,
            "{expr} in {}: slot {} is not after {previous}",
            zone.name(),
            slot.at
        );
        previous = slot.at;
        let wall = zone.wall(slot.at);
        match &slot.dst {
            None | Some(DstNote::FirstOfTwice { .. } | DstNote::SecondPass { .. }) => assert!(
                expr.matches(wall),
                "{expr} in {}: slot {} reads {wall}, which does not match",
                zone.name(),
                slot.at
            ),
            Some(DstNote::Moved { wall: asked }) => assert!(expr.matches(*asked)),
            Some(DstNote::Merged { walls }) => assert!(walls.iter().all(|w| expr.matches(*w))),
        }
    }
    // Where no DST rule applies, the first slot is the first instant whose
    // wall clock matches.
    let plain = zone.name() == "UTC" || zone.name() == "Asia/Kathmandu";
    if !(plain || expr.follows_elapsed_time()) {
        return;
    }
    let (step, span) = if seconds {
        (Duration::seconds(1), Duration::hours(3))
    } else {
        (Duration::minutes(1), Duration::days(2))
    };
    let mut at = if seconds {
        after + Duration::seconds(1)
    } else {
        after.with_second(0).expect("valid") + Duration::minutes(1)
    };
    let horizon = after + span;
    while at <= horizon {
        if expr.matches(zone.wall(at)) {
            break;
        }
        at += step;
    }
    match slots.first() {
        Some(first) if at <= horizon => assert_eq!(
            first.at,
            at,
            "{expr} in {}: the first slot after {after} is not the first matching instant",
            zone.name()
        ),
        Some(first) => assert!(
            first.at > horizon,
            "{expr}: {} missed by the walker",
            first.at
        ),
        None => assert!(at > horizon, "{expr}: no slot, but {at} matches"),
    }
}

pub fn cron_in_at(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let hash = fnv(data);
    let zone = zone_of(hash);
    let now = start_of(hash.rotate_left(29));
    let (in_text, at_text) = text.split_once('\n').unwrap_or((text, text));
    if let Ok(span) = in_text.parse::<Span>() {
        assert!(span.as_secs() >= 1);
        assert_eq!(
            span.to_string().parse::<Span>(),
            Ok(span),
            "`{in_text}` is not read back from its own writing"
        );
        // What `cron_add` writes for `in`, read back as crons.toml does.
        let at = now + span.as_chrono();
        let written = zone.show(at);
        assert_eq!(
            parse_at(&written, zone),
            Ok(at),
            "`in` = {in_text:?} from {now} was written as {written:?} in {}",
            zone.name()
        );
    }
    if let Ok(at) = parse_at(at_text, zone) {
        assert_eq!(
            at.nanosecond(),
            0,
            "{at_text:?} kept a fraction of a second"
        );
        let trimmed = at_text.trim();
        if let Ok(exact) = DateTime::parse_from_rfc3339(trimmed) {
            assert_eq!(
                at.timestamp(),
                exact.timestamp(),
                "{at_text:?} read as {at}"
            );
        }
        // The written time is read back to the same instant, where it has
        // the four-digit year RFC 3339 asks for. The year to check is the
        // written one: a zone whose offset has seconds (local mean time)
        // is written in UTC, which can be a year before the wall clock's:
        // year 0, 01:30 at +10:36:20, is -0001-12-31T14:53:40Z.
        let shown = zone.show(at);
        let bytes = shown.as_bytes();
        if bytes.len() > 4 && bytes[..4].iter().all(u8::is_ascii_digit) && bytes[4] == b'-' {
            assert_eq!(
                parse_at(&shown, zone),
                Ok(at),
                "{at_text:?} written as {shown:?}"
            );
        }
        let _ = Schedule::new(Timing::At(at), zone).next_after(now);
    }
    // Every span is a schedule too (`every`): slots strictly increase.
    if let Ok(span) = at_text.parse::<Span>() {
        let schedule = Schedule::new(Timing::Every(span), zone);
        let slots = schedule.upcoming(now, 3);
        for pair in slots.windows(2) {
            assert_eq!(pair[1].at - pair[0].at, span.as_chrono());
        }
    }
}
