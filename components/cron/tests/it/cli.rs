//! The `crabtalk-cron` command line: the real binary in a temp home.

use crate::support;

use support::{cli, text};

fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn help_run_and_verbosity_parse_like_the_library_cli() {
    let dir = home();
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["-v", "run", "--help"],
        &["add", "--help"],
        &["next", "--help"],
    ] {
        let out = cli(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    let help = text(&cli(dir.path(), &["--help"]));
    assert!(help.contains(crabtalk_cron::cli::ABOUT), "{help}");
    for command in [
        "run", "add", "list", "rm", "enable", "disable", "runs", "next",
    ] {
        assert!(help.contains(command), "{command} missing from:\n{help}");
    }
    assert_eq!(cli(dir.path(), &["frobnicate"]).status.code(), Some(2));
    // The unit's command line parses with the library's definition.
    let parsed = crabtalk_cron::cli::command().try_get_matches_from(["crabtalk-cron", "-v", "run"]);
    assert!(parsed.is_ok());
    assert_eq!(crabtalk_cron::cli::service().name(), "cron");
}

#[test]
fn add_checks_everything_writes_the_zone_and_prints_the_next_three_slots() {
    let dir = home();
    let out = cli(
        dir.path(),
        &[
            "add",
            "--id",
            "standup",
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "America/New_York",
            "--message",
            "stand-up",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.starts_with("added standup (cron = \"0 9 * * 1-5\", tz America/New_York)"),
        "{shown}"
    );
    assert_eq!(
        shown.lines().filter(|l| l.contains("T09:00:00-0")).count(),
        3,
        "{shown}"
    );
    // Without --tz the machine's zone is resolved and written (TZ=UTC here).
    let out = cli(
        dir.path(),
        &[
            "add",
            "--every",
            "15m",
            "--skill",
            "check-feeds",
            "--args",
            "tech",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let file = std::fs::read_to_string(dir.path().join("config/crons.toml")).unwrap();
    assert!(
        file.contains("id = \"check-feeds\"\nevery = \"15m\"\ntz = "),
        "{file}"
    );

    for (args, expected) in [
        (
            &["add", "--cron", "61 * * * *", "--message", "m"][..],
            "minute field `61`: 61 is out of range; allowed: 0-59",
        ),
        (
            &[
                "add",
                "--cron",
                "0 9 * * *",
                "--tz",
                "Europe/Berln",
                "--message",
                "m",
            ],
            "`tz` = \"Europe/Berln\"",
        ),
        (
            &["add", "--every", "15", "--message", "m"],
            "`every` = \"15\"",
        ),
        (
            &["add", "--in", "soon", "--message", "m"],
            "`in` = \"soon\"",
        ),
        (
            &["add", "--at", "2001-01-01T00:00:00Z", "--message", "m"],
            "is not in the future",
        ),
        (
            &[
                "add",
                "--every",
                "1h",
                "--message",
                "m",
                "--quiet-start",
                "25:00",
                "--quiet-end",
                "07:00",
            ],
            "`quiet_start` = \"25:00\": allowed: HH:MM",
        ),
        (
            &[
                "add",
                "--every",
                "1h",
                "--message",
                "m",
                "--missed",
                "later",
            ],
            "`missed` = \"later\": allowed: \"skip\" or \"once\"",
        ),
        (
            &[
                "add",
                "--every",
                "1h",
                "--message",
                "m",
                "--deliver",
                "mail:me",
            ],
            "allowed: \"none\" or \"telegram:<chat id>\"",
        ),
        (
            &["add", "--id", "standup", "--every", "1h", "--message", "m"],
            "an entry `standup` exists already",
        ),
        (
            &["add", "--id", "Bad", "--every", "1h", "--message", "m"],
            "`id` = \"Bad\"",
        ),
    ] {
        let out = cli(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains(expected),
            "{args:?}: want …{expected}…, got {}",
            text(&out)
        );
    }
    // Nothing refused reached the file, and nothing in it moved.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config/crons.toml")).unwrap(),
        file
    );
}

#[test]
fn list_enable_disable_rm_and_runs() {
    let dir = home();
    assert!(
        cli(
            dir.path(),
            &[
                "add",
                "--id",
                "a",
                "--every",
                "1h",
                "--tz",
                "UTC",
                "--message",
                "m"
            ]
        )
        .status
        .success()
    );
    let listed = cli(dir.path(), &["list", "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(value["entries"][0]["id"], "a");
    assert_eq!(value["entries"][0]["health"], "new");
    assert_eq!(value["entries"][0]["next"].as_array().unwrap().len(), 3);
    assert!(cli(dir.path(), &["disable", "a"]).status.success());
    assert!(text(&cli(dir.path(), &["list"])).contains("a  [disabled, new]"));
    assert!(cli(dir.path(), &["enable", "a"]).status.success());
    let runs = cli(dir.path(), &["runs", "a", "-n", "3", "--json"]);
    assert!(runs.status.success(), "{}", text(&runs));
    assert!(text(&cli(dir.path(), &["runs"])).contains("no runs recorded"));
    let missing = cli(dir.path(), &["rm", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing).contains("no entry `nope`"),
        "{}",
        text(&missing)
    );
    assert!(cli(dir.path(), &["rm", "a"]).status.success());
    assert!(text(&cli(dir.path(), &["list"])).contains("no entries"));
}

#[test]
fn an_unparsable_file_is_a_config_error_with_its_place_and_is_left_alone() {
    let dir = home();
    support::write_crons(
        dir.path(),
        "[[cron]]\nid = \"a\"\nevery = \"1h\"\nmessage = \"m\"\nbogus = 1\n",
    );
    let out = cli(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(78), "{}", text(&out));
    assert!(
        text(&out).contains(
            "crons.toml:5:1: unknown key `bogus` in [[cron]]; the keys here are id, cron"
        ),
        "{}",
        text(&out)
    );
    let out = cli(dir.path(), &["disable", "a"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("never rewrites a file it cannot parse"),
        "{}",
        text(&out)
    );
    assert!(
        std::fs::read_to_string(dir.path().join("config/crons.toml"))
            .unwrap()
            .contains("bogus = 1")
    );
}

#[test]
fn next_shows_zone_and_utc_and_says_what_dst_did() {
    let dir = home();
    let out = cli(
        dir.path(),
        &[
            "next",
            "30 2 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2026-03-08T00:00:00-05:00",
            "--count",
            "2",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("2026-03-08T03:00:00-04:00  (2026-03-08T07:00:00Z)"),
        "{shown}"
    );
    assert!(
        shown.contains("moved by DST: 02:30:00 does not exist that day"),
        "{shown}"
    );
    assert!(
        shown.contains("2026-03-09T02:30:00-04:00  (2026-03-09T06:30:00Z)"),
        "{shown}"
    );

    let out = cli(
        dir.path(),
        &[
            "next",
            "0,30 2 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2026-03-08T00:00:00-05:00",
            "--count",
            "1",
            "--json",
        ],
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        value["slots"][0]["dst"]
            .as_str()
            .unwrap()
            .starts_with("merged by DST"),
        "{value}"
    );

    let out = cli(
        dir.path(),
        &[
            "next",
            "30 1 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2026-11-01T00:00:00-04:00",
            "--count",
            "1",
        ],
    );
    assert!(
        text(&out).contains("happens twice that day (clocks go back); it fires once"),
        "{}",
        text(&out)
    );

    assert!(
        cli(
            dir.path(),
            &[
                "add",
                "--id",
                "e",
                "--every",
                "90s",
                "--tz",
                "Asia/Kolkata",
                "--message",
                "m"
            ]
        )
        .status
        .success()
    );
    let out = cli(
        dir.path(),
        &[
            "next",
            "e",
            "--from",
            "2026-01-01T00:00:00Z",
            "--count",
            "1",
        ],
    );
    assert!(
        text(&out).contains("2026-01-01T05:31:30+05:30  (2026-01-01T00:01:30Z)"),
        "{}",
        text(&out)
    );
    let bad = cli(dir.path(), &["next", "0 9 * *"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad).contains("has 4 fields"), "{}", text(&bad));
}
