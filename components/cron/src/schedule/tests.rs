//! Slot tables written by hand from the rules in the module doc (and RFC
//! 0050), and property tests against a brute-force reading of the same
//! rules.

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use proptest::prelude::*;

use super::*;

/// `(zone, schedule, after, expected)`: `schedule` is a crontab expression,
/// `every <span>` or `at <time>`; each expected slot is the local time with
/// its offset and, when DST touched it, `moved`, `merged`, `once` or
/// `again`.
const TABLE: &[(&str, &str, &str, &[&str])] = &[
    // An hour field that names every hour follows elapsed time however it
    // is written: 01:30 in both passes of New York's repeated hour.
    (
        "America/New_York",
        "30 0-23 * * *",
        "2026-11-01T00:45:00-04:00",
        &[
            "2026-11-01 01:30:00-04:00",
            "2026-11-01 01:30:00-05:00 again",
            "2026-11-01 02:30:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "30 */1 * * *",
        "2026-11-01T00:45:00-04:00",
        &[
            "2026-11-01 01:30:00-04:00",
            "2026-11-01 01:30:00-05:00 again",
        ],
    ),
    // A fixed hour list that misses one hour is a time of day: once.
    (
        "America/New_York",
        "30 0-22 * * *",
        "2026-11-01T00:45:00-04:00",
        &[
            "2026-11-01 01:30:00-04:00 once",
            "2026-11-01 02:30:00-05:00",
        ],
    ),
    // 29 February on a Sunday: 2128, past the 28-year cycle (2100 is no
    // leap year), for a time of day and for an elapsed-time schedule.
    (
        "UTC",
        "0 0 29 2 */7",
        "2089-01-01T00:00:00Z",
        &["2128-02-29 00:00:00+00:00"],
    ),
    (
        "Europe/Berlin",
        "*/30 * 29 2 */7",
        "2089-01-01T00:00:00Z",
        &["2128-02-29 00:00:00+01:00", "2128-02-29 00:30:00+01:00"],
    ),
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT.
    (
        "America/New_York",
        "30 2 * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 moved",
            "2026-03-09 02:30:00-04:00",
            "2026-03-10 02:30:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "0 2 * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 moved",
            "2026-03-09 02:00:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "0,30 2 * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 merged",
            "2026-03-09 02:00:00-04:00",
            "2026-03-09 02:30:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "0 2,3 * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 merged",
            "2026-03-09 02:00:00-04:00",
            "2026-03-09 03:00:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "*/30 * * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 00:30:00-05:00",
            "2026-03-08 01:00:00-05:00",
            "2026-03-08 01:30:00-05:00",
            "2026-03-08 03:00:00-04:00",
            "2026-03-08 03:30:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "0 * * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 01:00:00-05:00",
            "2026-03-08 03:00:00-04:00",
            "2026-03-08 04:00:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "30 * * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 00:30:00-05:00",
            "2026-03-08 01:30:00-05:00",
            "2026-03-08 03:30:00-04:00",
            "2026-03-08 04:30:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "59 1 * * *",
        "2026-03-08T00:00:00-05:00",
        &["2026-03-08 01:59:00-05:00", "2026-03-09 01:59:00-04:00"],
    ),
    (
        "America/New_York",
        "0 3 * * *",
        "2026-03-08T00:00:00-05:00",
        &["2026-03-08 03:00:00-04:00", "2026-03-09 03:00:00-04:00"],
    ),
    (
        "America/New_York",
        "0 */2 * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 moved",
            "2026-03-08 04:00:00-04:00",
            "2026-03-08 06:00:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "0 30 2 * * *",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 moved",
            "2026-03-09 02:30:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "*/20 * * * * *",
        "2026-03-08T01:59:30-05:00",
        &[
            "2026-03-08 01:59:40-05:00",
            "2026-03-08 03:00:00-04:00",
            "2026-03-08 03:00:20-04:00",
        ],
    ),
    (
        "America/New_York",
        "15 2 * * 0",
        "2026-03-08T00:00:00-05:00",
        &[
            "2026-03-08 03:00:00-04:00 moved",
            "2026-03-15 02:15:00-04:00",
        ],
    ),
    (
        "America/New_York",
        "* 2 * * *",
        "2026-03-08T01:58:00-05:00",
        &["2026-03-09 02:00:00-04:00", "2026-03-09 02:01:00-04:00"],
    ),
    (
        "America/New_York",
        "at 2026-03-08T02:30",
        "2026-03-01T00:00:00-05:00",
        &["2026-03-08 03:00:00-04:00"],
    ),
    // New York, 2026-11-01: 02:00 EDT becomes 01:00 EST.
    (
        "America/New_York",
        "30 1 * * *",
        "2026-11-01T00:00:00-04:00",
        &[
            "2026-11-01 01:30:00-04:00 once",
            "2026-11-02 01:30:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "*/30 * * * *",
        "2026-11-01T00:00:00-04:00",
        &[
            "2026-11-01 00:30:00-04:00",
            "2026-11-01 01:00:00-04:00",
            "2026-11-01 01:30:00-04:00",
            "2026-11-01 01:00:00-05:00 again",
            "2026-11-01 01:30:00-05:00 again",
            "2026-11-01 02:00:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "0 * * * *",
        "2026-11-01T00:00:00-04:00",
        &[
            "2026-11-01 01:00:00-04:00",
            "2026-11-01 01:00:00-05:00 again",
            "2026-11-01 02:00:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "30 1,13 * * *",
        "2026-11-01T00:00:00-04:00",
        &[
            "2026-11-01 01:30:00-04:00 once",
            "2026-11-01 13:30:00-05:00",
            "2026-11-02 01:30:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "0 1-2 * * *",
        "2026-11-01T00:00:00-04:00",
        &[
            "2026-11-01 01:00:00-04:00 once",
            "2026-11-01 02:00:00-05:00",
            "2026-11-02 01:00:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "*/15 1 * * *",
        "2026-11-01T01:40:00-04:00",
        &[
            "2026-11-01 01:45:00-04:00",
            "2026-11-01 01:00:00-05:00 again",
            "2026-11-01 01:15:00-05:00 again",
            "2026-11-01 01:30:00-05:00 again",
            "2026-11-01 01:45:00-05:00 again",
            "2026-11-02 01:00:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "0 2 * * *",
        "2026-11-01T00:00:00-04:00",
        &["2026-11-01 02:00:00-05:00", "2026-11-02 02:00:00-05:00"],
    ),
    (
        "America/New_York",
        "59 1 * * *",
        "2026-11-01T01:59:30-05:00",
        &["2026-11-02 01:59:00-05:00"],
    ),
    // London: 2026-03-29 01:00 GMT becomes 02:00 BST; 2026-10-25 02:00 BST
    // becomes 01:00 GMT.
    (
        "Europe/London",
        "30 1 * * *",
        "2026-03-29T00:00:00+00:00",
        &[
            "2026-03-29 02:00:00+01:00 moved",
            "2026-03-30 01:30:00+01:00",
        ],
    ),
    (
        "Europe/London",
        "0 * * * *",
        "2026-03-29T00:00:00+00:00",
        &["2026-03-29 02:00:00+01:00", "2026-03-29 03:00:00+01:00"],
    ),
    (
        "Europe/London",
        "30 1 * * *",
        "2026-10-25T00:00:00+01:00",
        &[
            "2026-10-25 01:30:00+01:00 once",
            "2026-10-26 01:30:00+00:00",
        ],
    ),
    (
        "Europe/London",
        "0 9 * * 1-5",
        "2026-10-23T10:00:00+01:00",
        &["2026-10-26 09:00:00+00:00", "2026-10-27 09:00:00+00:00"],
    ),
    (
        "Europe/London",
        "@daily",
        "2026-03-28T12:00:00+00:00",
        &["2026-03-29 00:00:00+00:00", "2026-03-30 00:00:00+01:00"],
    ),
    (
        "Europe/London",
        "0 0 13 * 5",
        "2026-03-01T00:00:00+00:00",
        &[
            "2026-03-06 00:00:00+00:00",
            "2026-03-13 00:00:00+00:00",
            "2026-03-20 00:00:00+00:00",
            "2026-03-27 00:00:00+00:00",
            "2026-04-03 00:00:00+01:00",
            "2026-04-10 00:00:00+01:00",
            "2026-04-13 00:00:00+01:00",
        ],
    ),
    // Lord Howe: 2026-04-05 02:00 (+11) becomes 01:30 (+10:30); 2026-10-04
    // 02:00 (+10:30) becomes 02:30 (+11).
    (
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-05T00:00:00+11:00",
        &[
            "2026-04-05 01:45:00+11:00 once",
            "2026-04-06 01:45:00+10:30",
        ],
    ),
    (
        "Australia/Lord_Howe",
        "*/15 * * * *",
        "2026-04-05T01:20:00+11:00",
        &[
            "2026-04-05 01:30:00+11:00",
            "2026-04-05 01:45:00+11:00",
            "2026-04-05 01:30:00+10:30 again",
            "2026-04-05 01:45:00+10:30 again",
            "2026-04-05 02:00:00+10:30",
        ],
    ),
    (
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2026-10-04T00:00:00+10:30",
        &[
            "2026-10-04 02:30:00+11:00 moved",
            "2026-10-05 02:15:00+11:00",
        ],
    ),
    (
        "Australia/Lord_Howe",
        "0 * * * *",
        "2026-10-04T00:30:00+10:30",
        &["2026-10-04 01:00:00+10:30", "2026-10-04 03:00:00+11:00"],
    ),
    (
        "Australia/Lord_Howe",
        "0,15,30 2 * * *",
        "2026-10-04T00:00:00+10:30",
        &[
            "2026-10-04 02:30:00+11:00 merged",
            "2026-10-05 02:00:00+11:00",
            "2026-10-05 02:15:00+11:00",
        ],
    ),
    // Kolkata: +05:30 all year.
    (
        "Asia/Kolkata",
        "30 9 * * 1-5",
        "2026-03-06T10:00:00+05:30",
        &["2026-03-09 09:30:00+05:30", "2026-03-10 09:30:00+05:30"],
    ),
    (
        "Asia/Kolkata",
        "0 18 * * *",
        "2026-03-08T00:00:00+05:30",
        &["2026-03-08 18:00:00+05:30", "2026-03-09 18:00:00+05:30"],
    ),
    (
        "Asia/Kolkata",
        "@hourly",
        "2026-01-01T00:10:00+05:30",
        &["2026-01-01 01:00:00+05:30", "2026-01-01 02:00:00+05:30"],
    ),
    (
        "Asia/Kolkata",
        "every 90s",
        "2026-01-01T05:30:00+05:30",
        &["2026-01-01 05:31:30+05:30", "2026-01-01 05:33:00+05:30"],
    ),
    (
        "Asia/Kolkata",
        "every 2h",
        "2026-01-01T06:00:00+05:30",
        &["2026-01-01 07:30:00+05:30", "2026-01-01 09:30:00+05:30"],
    ),
    (
        "Asia/Kolkata",
        "0 0 29 2 *",
        "2026-01-01T00:00:00+05:30",
        &["2028-02-29 00:00:00+05:30", "2032-02-29 00:00:00+05:30"],
    ),
    (
        "Asia/Kolkata",
        "0 0 9 * * 7",
        "2026-03-07T00:00:00+05:30",
        &["2026-03-08 09:00:00+05:30", "2026-03-15 09:00:00+05:30"],
    ),
];

fn schedule(zone: &str, text: &str) -> Schedule {
    let zone = Zone::named(zone).unwrap();
    let timing = if let Some(span) = text.strip_prefix("every ") {
        Timing::Every(span.parse().unwrap())
    } else if let Some(at) = text.strip_prefix("at ") {
        Timing::At(parse_at(at, zone).unwrap())
    } else {
        Timing::Cron(CronExpr::parse(text).unwrap())
    };
    Schedule::new(timing, zone)
}

fn utc(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn show(schedule: &Schedule, slot: &Slot) -> String {
    let local = slot.at.with_timezone(&schedule.zone().tz());
    let mut text = local.format("%Y-%m-%d %H:%M:%S%:z").to_string();
    let tag = match slot.dst {
        None => "",
        Some(DstNote::Moved { .. }) => " moved",
        Some(DstNote::Merged { .. }) => " merged",
        Some(DstNote::FirstOfTwice { .. }) => " once",
        Some(DstNote::SecondPass { .. }) => " again",
    };
    text.push_str(tag);
    text
}

#[test]
fn hand_written_slot_tables() {
    assert!(TABLE.len() >= 30);
    let mut failures = Vec::new();
    for (zone, text, after, expected) in TABLE {
        let schedule = schedule(zone, text);
        let got: Vec<String> = schedule
            .upcoming(utc(after), expected.len() + 1)
            .iter()
            .map(|slot| show(&schedule, slot))
            .collect();
        let extra_allowed = got.len() > expected.len();
        let got_prefix = &got[..expected.len().min(got.len())];
        if got_prefix != *expected || (text.starts_with("at ") && extra_allowed) {
            failures.push(format!(
                "{zone} `{text}` after {after}:\n  want {expected:?}\n  got  {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn merged_slots_name_every_wall_time() {
    let schedule = schedule("America/New_York", "0,30 2 * * *");
    let slot = schedule
        .next_after(utc("2026-03-08T00:00:00-05:00"))
        .unwrap();
    let note = slot.dst.unwrap().to_string();
    assert_eq!(
        note,
        "merged by DST: 02:00:00, 02:30:00 fall in or at the end of the hour clocks skip, so they fire once"
    );
}

#[test]
fn the_newest_slot_at_or_before_an_instant() {
    let daily = schedule("Europe/London", "0 9 * * *");
    assert_eq!(
        daily.last_at_or_before(utc("2026-06-10T12:00:00+01:00")),
        Some(utc("2026-06-10T09:00:00+01:00"))
    );
    assert_eq!(
        daily.last_at_or_before(utc("2026-06-10T09:00:00+01:00")),
        Some(utc("2026-06-10T09:00:00+01:00"))
    );
    assert_eq!(
        daily.last_at_or_before(utc("2026-06-10T08:59:59+01:00")),
        Some(utc("2026-06-09T09:00:00+01:00"))
    );
    let leap = schedule("UTC", "0 0 29 2 *");
    assert_eq!(
        leap.last_at_or_before(utc("2027-01-01T00:00:00Z")),
        Some(utc("2024-02-29T00:00:00Z"))
    );
}

#[test]
fn at_values_are_rfc3339_or_wall_times_in_the_zone() {
    let ny = Zone::named("America/New_York").unwrap();
    assert_eq!(
        parse_at("2026-05-01T09:00:00Z", ny).unwrap(),
        utc("2026-05-01T09:00:00Z")
    );
    assert_eq!(
        parse_at("2026-05-01 09:00", ny).unwrap(),
        utc("2026-05-01T13:00:00Z")
    );
    // Twice that night: the first.
    assert_eq!(
        parse_at("2026-11-01T01:30", ny).unwrap(),
        utc("2026-11-01T05:30:00Z")
    );
    let err = parse_at("tomorrow at 9", ny).unwrap_err();
    assert!(err.to_string().contains("allowed: RFC 3339"), "{err}");
}

#[test]
fn a_leap_second_reads_as_the_second_before_it() {
    // Found by the fuzz target cron_in_at (seed `leap-second`): `:60` came
    // back with chrono's leap-second nanoseconds, a second and a bit.
    let ny = Zone::named("America/New_York").unwrap();
    for (text, expected) in [
        ("2026-03-08T02:30:60-05:00", "2026-03-08T07:30:59Z"),
        ("2026-03-08T02:30:60.5-05:00", "2026-03-08T07:30:59Z"),
        ("2026-05-01 09:00:60", "2026-05-01T13:00:59Z"),
    ] {
        let at = parse_at(text, ny).unwrap();
        assert_eq!(at, utc(expected), "{text}");
        assert_eq!(at.nanosecond(), 0, "{text}");
    }
}

// ─── properties ─────────────────────────────────────────────────────────────

const ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "UTC",
];

/// Instants near the DST changes of 2026 in the zones above.
const AROUND: &[&str] = &[
    "2026-03-07T12:00:00Z",
    "2026-10-31T12:00:00Z",
    "2026-03-28T12:00:00Z",
    "2026-10-24T12:00:00Z",
    "2026-04-04T00:00:00Z",
    "2026-10-03T00:00:00Z",
    "2026-06-01T00:00:00Z",
];

fn field(max: u8, names: Option<&'static [&'static str]>) -> impl Strategy<Value = String> {
    let value = move || 0..=max;
    prop_oneof![
        Just("*".to_owned()),
        value().prop_map(|v| v.to_string()),
        (1..=max.max(1)).prop_map(|step| format!("*/{step}")),
        (value(), value()).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        (value(), value()).prop_map(|(a, b)| format!("{a},{b}")),
        (value(), 1..=max.max(1)).prop_map(|(a, s)| format!("{a}/{s}")),
        match names {
            Some(names) => proptest::sample::select(names)
                .prop_map(str::to_owned)
                .boxed(),
            None => value().prop_map(|v| v.to_string()).boxed(),
        },
    ]
}

fn day_field() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_owned()),
        (1u8..=28).prop_map(|d| d.to_string()),
        (1u8..=31, 1u8..=31).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        (1u8..=10).prop_map(|s| format!("*/{s}")),
    ]
}

fn expression() -> impl Strategy<Value = String> {
    (
        field(59, None),
        field(23, None),
        day_field(),
        prop_oneof![
            Just("*".to_owned()),
            (1u8..=12).prop_map(|m| m.to_string()),
            Just("mar-nov".to_owned())
        ],
        field(7, Some(&["mon", "fri", "sun", "mon-fri"])),
    )
        .prop_map(|(m, h, d, mo, w)| format!("{m} {h} {d} {mo} {w}"))
}

/// Every slot in `(from, to]` by brute force over each minute, from the
/// rules alone: a schedule that follows elapsed time fires at every
/// instant whose wall clock matches; a fixed-time one at the first
/// instant of each matching wall time, and at the end of a gap in which a
/// matching wall time falls.
fn brute_force(
    schedule: &Schedule,
    expr: &CronExpr,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<DateTime<Utc>> {
    let zone = schedule.zone();
    let mut slots = std::collections::BTreeSet::new();
    let mut at = from + Duration::minutes(1) - Duration::seconds(from.timestamp().rem_euclid(60));
    while at <= to {
        let wall = zone.wall(at);
        if expr.matches(wall) {
            let first = match zone.resolve(wall) {
                Resolved::Repeated(first, _) => first,
                _ => at,
            };
            if expr.follows_elapsed_time() || first == at {
                slots.insert(at);
            }
        }
        at += Duration::minutes(1);
    }
    if !expr.follows_elapsed_time() {
        let mut wall: NaiveDateTime = zone.wall(from) - Duration::hours(3);
        let end = zone.wall(to) + Duration::hours(3);
        while wall <= end {
            if let Resolved::Skipped { after } = zone.resolve(wall)
                && expr.matches(wall)
                && after > from
                && after <= to
            {
                slots.insert(after);
            }
            wall += Duration::minutes(1);
        }
    }
    slots.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn slots_match_increase_and_agree_with_brute_force(
        text in expression(),
        zone in proptest::sample::select(ZONES),
        around in proptest::sample::select(AROUND),
        shift_minutes in 0i64..1440,
    ) {
        let Ok(expr) = CronExpr::parse(&text) else { return Ok(()); };
        let schedule = Schedule::new(Timing::Cron(expr.clone()), Zone::named(zone).unwrap());
        let from = utc(around) + Duration::minutes(shift_minutes);
        let to = from + Duration::hours(36);
        let mut got = Vec::new();
        let mut cursor = from;
        while let Some(slot) = schedule.next_after(cursor) {
            prop_assert!(slot.at > cursor, "slots strictly increase");
            if slot.at > to { break; }
            let wall = schedule.zone().wall(slot.at);
            match &slot.dst {
                None | Some(DstNote::FirstOfTwice { .. }) | Some(DstNote::SecondPass { .. }) => {
                    prop_assert!(expr.matches(wall), "{} does not match {text}", wall);
                }
                Some(DstNote::Moved { wall }) => prop_assert!(expr.matches(*wall)),
                Some(DstNote::Merged { walls }) => {
                    prop_assert!(walls.iter().all(|w| expr.matches(*w)));
                }
            }
            got.push(slot.at);
            cursor = slot.at;
        }
        prop_assert_eq!(got, brute_force(&schedule, &expr, from, to), "{} in {}", text, zone);
    }

    #[test]
    fn every_slots_are_evenly_spaced(secs in 1u64..200_000, start in 0i64..2_000_000_000) {
        let schedule = Schedule::new(Timing::Every(Span::from_secs(secs)), Zone::UTC);
        let from = DateTime::from_timestamp(start, 0).unwrap();
        let slots = schedule.upcoming(from, 3);
        prop_assert!(slots[0].at > from && slots[0].at - from <= Duration::seconds(secs as i64));
        prop_assert_eq!(slots[1].at - slots[0].at, Duration::seconds(secs as i64));
        prop_assert_eq!(slots[0].at.timestamp() % secs as i64, 0);
    }
}
