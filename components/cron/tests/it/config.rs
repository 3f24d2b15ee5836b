//! `crons.toml`: bad input is refused with file:line:col, the key, the
//! value and what is allowed; edits keep every comment, entry and order.

use crabtalk_cron::{Change, CronsFile, EditError, LoadError, Zone};

fn file_with(text: &str) -> (tempfile::TempDir, CronsFile) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crons.toml");
    std::fs::write(&path, text).unwrap();
    (dir, CronsFile::at(path))
}

fn refusal(text: &str) -> String {
    let (_dir, file) = file_with(text);
    match file.load(Zone::UTC) {
        Err(LoadError::Invalid {
            line,
            column,
            message,
            ..
        }) => format!("{line}:{column}: {message}"),
        other => panic!("expected a refusal for {text:?}, got {other:?}"),
    }
}

const GOOD: &str = "# my schedules\n\n[[cron]]\nid = \"standup\" # the morning one\ncron = \"0 9 * * 1-5\"\ntz = \"Europe/Berlin\"\nmessage = \"stand-up time\"\n\n# a second one\n[[cron]]\nid = \"feeds\"\nevery = \"2h\"\ntz = \"UTC\"\nskill = \"check-feeds\"\nargs = \"tech\"\n";

/// Found by the fuzzer (`components/fuzz/corpus/crons_toml/not-utf8`): a file that
/// is not UTF-8 was refused as unreadable, with no line or column.
#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let (_dir, file) = file_with("");
    std::fs::write(
        file.path(),
        b"[[cron]]\nid = \"a\"\nmessage = \"\xc3\x28\"\n",
    )
    .unwrap();
    match file.load(Zone::UTC) {
        Err(LoadError::Invalid {
            line: 3,
            column: 12,
            message,
            ..
        }) => assert_eq!(
            message,
            "byte 0xc3 is not UTF-8 text; save the file as UTF-8"
        ),
        other => panic!("expected a refusal at 3:12, got {other:?}"),
    }
}

#[test]
fn a_good_file_loads_with_defaults() {
    let (_dir, file) = file_with(GOOD);
    let entries = file.load(Zone::UTC).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].id, "standup");
    assert_eq!(entries[0].sender, "cron");
    assert_eq!(entries[0].agent, "");
    assert!(entries[0].enabled);
    assert_eq!(entries[1].action.content(), "/check-feeds tech");
}

#[test]
fn each_bad_value_is_refused_with_its_place_key_value_and_what_is_allowed() {
    let entry = |body: &str| format!("[[cron]]\nid = \"x\"\nmessage = \"hi\"\n{body}\n");
    let cases: &[(&str, &str)] = &[
        (
            &entry("cron = \"61 * * * *\""),
            "4:8: `cron` = \"61 * * * *\": minute field `61`: 61 is out of range; allowed: 0-59",
        ),
        (
            &entry("cron = \"* * * *\""),
            "4:8: `cron` = \"* * * *\": `* * * *` has 4 fields; write 5",
        ),
        (
            &entry("cron = \"@reboot\""),
            "`cron` = \"@reboot\": unknown macro `@reboot`; allowed: @hourly",
        ),
        (
            &entry("cron = \"0 0 9 * * 8\""),
            "day-of-week field `8`: 8 is out of range; allowed: 0-7 (0 and 7 are Sunday)",
        ),
        (&entry("cron = \"0 0 31 2 *\""), "never fires"),
        (
            &entry("every = \"15\""),
            "4:9: `every` = \"15\": `15` is not a duration: a unit (s, m, h, d or w) is missing; write a number and a unit",
        ),
        (&entry("every = \"0s\""), "at least one second"),
        (
            &entry("at = \"next tuesday\""),
            "`at` = \"next tuesday\": `next tuesday` is not a date and time; allowed: RFC 3339",
        ),
        (
            &entry("every = \"1h\"\ntz = \"Europe/Berln\""),
            "5:6: `tz` = \"Europe/Berln\": `Europe/Berln` is not an IANA time zone; allowed: names such as",
        ),
        (
            &entry("every = \"1h\"\nquiet_start = \"7:00\"\nquiet_end = \"08:00\""),
            "`quiet_start` = \"7:00\": allowed: HH:MM on a 24-hour clock",
        ),
        (
            &entry("every = \"1h\"\nquiet_start = \"22:00\""),
            "sets only one of quiet_start and quiet_end",
        ),
        (
            &entry("every = \"1h\"\nquiet_start = \"24:00\"\nquiet_end = \"07:00\""),
            "`quiet_start` = \"24:00\": allowed: HH:MM",
        ),
        (
            &entry("every = \"1h\"\nmissed = \"always\""),
            "`missed` = \"always\": allowed: \"skip\" or \"once\"",
        ),
        (
            &entry("every = \"1h\"\nmissed_within = \"soon\""),
            "`missed_within` = \"soon\"",
        ),
        (
            &entry("every = \"1h\"\ndeliver = \"slack:42\""),
            "`deliver` = \"slack:42\": unknown destination; allowed: \"none\" or \"telegram:<chat id>\"",
        ),
        (
            &entry("every = \"1h\"\nenabled = \"yes\""),
            "`enabled` must be true or false, not string",
        ),
        (
            &entry("every = \"1h\"\nschedule = \"0 * * * *\""),
            "5:1: unknown key `schedule` in [[cron]]; the keys here are id, cron, at, every",
        ),
        (
            &entry("every = \"1h\"\nevry = \"2h\""),
            "5:1: unknown key `evry` in [[cron]]; did you mean `every`?",
        ),
        (
            &entry("every = \"1h\"\nmesage = \"m\""),
            "5:1: unknown key `mesage` in [[cron]]; did you mean `message`?",
        ),
        (
            &entry("every = \"1h\"\ncron = \"0 * * * *\""),
            "has both `cron` and `every`; keep exactly one schedule",
        ),
        (&entry(""), "has no schedule; set exactly one of"),
        (
            "[[cron]]\nid = \"x\"\nevery = \"1h\"\n",
            "runs nothing; set skill",
        ),
        (
            "[[cron]]\nid = \"Bad Id\"\nevery = \"1h\"\nmessage = \"m\"\n",
            "2:6: `id` = \"Bad Id\": allowed: 1-64 lowercase letters",
        ),
        (
            "[[cron]]\nid = \"a\"\nevery = \"1h\"\nmessage = \"m\"\n[[cron]]\nid = \"a\"\nevery = \"1h\"\nmessage = \"m\"\n",
            "6:6: duplicate id `a`",
        ),
        ("title = \"x\"\n", "unknown top-level key `title`"),
        (
            "[[cron]\nid = 1",
            "1:8: not valid TOML: unclosed array table",
        ),
    ];
    for (text, expected) in cases {
        let got = refusal(text);
        assert!(
            got.contains(expected),
            "for {text:?}\n  want …{expected}…\n  got  {got}"
        );
    }
}

#[test]
fn edits_keep_comments_order_and_other_entries() {
    let (_dir, file) = file_with(GOOD);
    file.edit(
        Zone::UTC,
        &Change::Add {
            fields: vec![
                ("id", "new".into()),
                ("every", "15m".into()),
                ("tz", "UTC".into()),
                ("message", "hello".into()),
            ],
        },
    )
    .unwrap();
    file.edit(
        Zone::UTC,
        &Change::Update {
            id: "standup".into(),
            fields: vec![
                ("enabled", Some(false.into())),
                ("cron", Some("30 9 * * 1-5".into())),
            ],
        },
    )
    .unwrap();
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert!(text.starts_with("# my schedules\n\n[[cron]]\nid = \"standup\" # the morning one\ncron = \"30 9 * * 1-5\"\n"), "{text}");
    assert!(
        text.contains("# a second one\n[[cron]]\nid = \"feeds\""),
        "{text}"
    );
    assert!(text.contains("enabled = false"), "{text}");
    assert!(
        text.ends_with(
            "[[cron]]\nid = \"new\"\nevery = \"15m\"\ntz = \"UTC\"\nmessage = \"hello\"\n"
        ),
        "{text}"
    );
    file.edit(Zone::UTC, &Change::Remove { id: "new".into() })
        .unwrap();
    let after_remove = std::fs::read_to_string(file.path()).unwrap();
    assert!(after_remove.contains("# a second one"), "{after_remove}");
    assert_eq!(file.load(Zone::UTC).unwrap().len(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn an_invalid_edit_or_an_unparsable_file_leaves_the_file_untouched() {
    let (_dir, file) = file_with(GOOD);
    let err = file
        .edit(
            Zone::UTC,
            &Change::Update {
                id: "standup".into(),
                fields: vec![("cron", Some("0 25 * * *".into()))],
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("hour field `25`"), "{err}");
    assert_eq!(std::fs::read_to_string(file.path()).unwrap(), GOOD);
    assert!(matches!(
        file.edit(Zone::UTC, &Change::Remove { id: "nope".into() }),
        Err(EditError::NotFound { .. })
    ));
    assert!(matches!(
        file.edit(
            Zone::UTC,
            &Change::Add {
                fields: vec![
                    ("id", "feeds".into()),
                    ("every", "1h".into()),
                    ("message", "m".into())
                ]
            }
        ),
        Err(EditError::Exists { .. })
    ));

    let broken = "[[cron]]\nid = \"a\"\nevery = \"1h\"\nmessage = \"unterminated\n";
    let (_dir, file) = file_with(broken);
    let err = file
        .edit(Zone::UTC, &Change::Remove { id: "a".into() })
        .unwrap_err();
    assert!(matches!(err, EditError::Unparsable(_)), "{err}");
    assert!(
        err.to_string()
            .contains("never rewrites a file it cannot parse"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(file.path()).unwrap(), broken);
}

#[test]
fn a_missing_file_has_no_entries_and_the_first_add_creates_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = CronsFile::at(dir.path().join("config").join("crons.toml"));
    assert!(file.load(Zone::UTC).unwrap().is_empty());
    file.edit(
        Zone::UTC,
        &Change::Add {
            fields: vec![
                ("id", "a".into()),
                ("every", "1h".into()),
                ("message", "m".into()),
            ],
        },
    )
    .unwrap();
    assert_eq!(file.load(Zone::UTC).unwrap()[0].id, "a");
}

mod untrusted_bytes {
    use proptest::prelude::*;

    use super::*;

    fn keyish() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(crabtalk_cron::KEYS).prop_map(str::to_owned),
            "[a-z_]{1,8}",
        ]
    }

    fn valueish() -> impl Strategy<Value = String> {
        prop_oneof![
            "\"[ -~]{0,20}\"".prop_map(|s| s),
            Just("\"0 9 * * 1-5\"".to_owned()),
            Just("\"15m\"".to_owned()),
            Just("\"Europe/London\"".to_owned()),
            Just("\"2026-05-01T09:00\"".to_owned()),
            Just("true".to_owned()),
            "-?[0-9]{1,4}",
            Just("[1, 2]".to_owned()),
            Just("{ a = 1 }".to_owned()),
        ]
    }

    proptest! {
        #[test]
        fn any_bytes_are_refused_or_read_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = crabtalk_cron::parse_entries(std::path::Path::new("crons.toml"), &text, Zone::UTC);
        }

        #[test]
        fn entry_shaped_files_are_refused_with_a_place_inside_the_file_or_read(
            tables in proptest::collection::vec(proptest::collection::vec((keyish(), valueish()), 0..8), 0..4)
        ) {
            let mut text = String::new();
            for table in &tables {
                text.push_str("[[cron]]\n");
                for (key, value) in table {
                    text.push_str(&format!("{key} = {value}\n"));
                }
            }
            match crabtalk_cron::parse_entries(std::path::Path::new("crons.toml"), &text, Zone::UTC) {
                Ok(entries) => prop_assert!(entries.len() <= tables.len()),
                Err(LoadError::Invalid { line, column, message, .. }) => {
                    prop_assert!(line >= 1 && line <= text.lines().count().max(1) + 1, "{line}");
                    prop_assert!(column >= 1);
                    prop_assert!(!message.is_empty());
                }
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
    }
}

#[test]
fn missed_within_defaults_to_half_the_period_within_two_minutes_and_two_hours_and_timeout_to_ten_minutes()
 {
    let text = "[[cron]]\nid = \"minutely\"\nevery = \"1m\"\nmessage = \"m\"\n\n\
                [[cron]]\nid = \"ten\"\nevery = \"10m\"\nmessage = \"t\"\n\n\
                [[cron]]\nid = \"daily\"\ncron = \"@daily\"\ntz = \"UTC\"\nmessage = \"d\"\n\n\
                [[cron]]\nid = \"set\"\nevery = \"10m\"\nmissed_within = \"7m\"\ntimeout = \"30s\"\nmessage = \"s\"\n";
    let (_dir, file) = file_with(text);
    let entries = file.load(Zone::UTC).unwrap();
    // A slot of every entry (a slot's period is to the next slot: from any
    // other instant, @daily's would depend on the time of day).
    let slot = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let within = |i: usize| entries[i].missed_within(slot).as_secs();
    // Half of a minute is below the floor: 2 minutes.
    assert_eq!(within(0), 120);
    // Half of ten minutes.
    assert_eq!(within(1), 300);
    // Half a day is above the ceiling: 2 hours.
    assert_eq!(within(2), 7_200);
    // Set in the file: as written.
    assert_eq!(within(3), 420);
    assert_eq!(entries[0].timeout.as_secs(), 600);
    assert_eq!(entries[3].timeout.as_secs(), 30);
}
