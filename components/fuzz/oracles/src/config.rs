//! The configuration loaders: text written by hand, read by the daemon
//! (`config.toml`, `agents/<name>.toml`), cron (`crons.toml`), search
//! (`search.toml`) and the Telegram gateway (`telegram.toml`).
//!
//! Oracle: no panic, and every refusal carries a line and a column inside
//! the file — a line the file has, a column at most one past that line's
//! last character — so a person can jump to it. Bytes that are not UTF-8
//! go through the loaders' file reading (a temp file), which must point
//! at the first bad byte like any other problem.

use std::path::Path;

use crabtalk_cron::{CronsFile, LoadError, Zone, parse_entries};
use crabtalk_kit::config::{ConfigError as KitError, ConfigFile};
use crabtalk_telegram::TelegramConfig;
use crabtalkd::config::agent::AgentConfig;
use crabtalkd::config::{DaemonConfig, Refusal as DaemonError};

/// Asserts that `(line, column)` is a place in `text`.
fn assert_inside(bytes: &[u8], line: usize, column: usize, what: &dyn std::fmt::Display) {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(
        (1..=lines.len()).contains(&line),
        "{what}: line {line} is not in a file of {} lines",
        lines.len()
    );
    let width = lines[line - 1].chars().count();
    assert!(
        (1..=width + 1).contains(&column),
        "{what}: column {column} is not in line {line}, {width} characters long"
    );
}

/// The bytes in a temp file named `name`, for the loaders that read one.
fn in_file<T>(name: &str, bytes: &[u8], read: impl FnOnce(&Path) -> T) -> T {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write the temp file");
    read(&path)
}

fn daemon_refusal(bytes: &[u8], err: &DaemonError) {
    assert!(!err.problems.is_empty(), "a refusal with no problem");
    for problem in &err.problems {
        let (line, column) = problem
            .position
            .unwrap_or_else(|| panic!("a refusal without a place: {problem}"));
        assert_inside(bytes, line, column, problem);
    }
}

fn kit_refusal(bytes: &[u8], err: &KitError) {
    match err {
        KitError::At { line, column, .. } => assert_inside(bytes, *line, *column, err),
        other => panic!("a refusal without a place: {other}"),
    }
}

fn cron_refusal(bytes: &[u8], err: &LoadError) {
    match err {
        LoadError::Invalid { line, column, .. } => assert_inside(bytes, *line, *column, err),
        other => panic!("a refusal without a place: {other}"),
    }
}

pub fn daemon_config(data: &[u8]) {
    let result = match std::str::from_utf8(data) {
        Ok(text) => DaemonConfig::parse(Path::new("config.toml"), text),
        Err(_) => in_file("config.toml", data, DaemonConfig::load),
    };
    if let Err(err) = result {
        daemon_refusal(data, &err);
    }
}

pub fn agent_config(data: &[u8]) {
    // Half the time the providers' models are known, as after discovery.
    let served = crabtalkd::config::ServedModels {
        names: ["gpt-4o", "claude"].map(String::from).into(),
        presets: vec!["groq".to_owned()],
    };
    let served = data.len().is_multiple_of(2).then_some(&served);
    let result = match std::str::from_utf8(data) {
        Ok(text) => AgentConfig::parse(Path::new("agents/a.toml"), text, served),
        Err(_) => in_file("a.toml", data, |path| {
            let store = crabtalkd::config::agent::AgentStore::new(path.parent().unwrap());
            store.load("a", served).map(|agent| agent.unwrap().config)
        }),
    };
    if let Err(err) = result {
        daemon_refusal(data, &err);
    }
}

pub fn crons_toml(data: &[u8]) {
    let zone = Zone::named("Europe/Berlin").expect("a known zone");
    let result = match std::str::from_utf8(data) {
        Ok(text) => parse_entries(Path::new("crons.toml"), text, zone),
        Err(_) => in_file("crons.toml", data, |path| CronsFile::at(path).load(zone)),
    };
    match result {
        Ok(entries) => {
            // What was accepted can be asked when it fires next.
            let now = chrono::DateTime::from_timestamp(1_780_000_000, 0).unwrap();
            for entry in &entries {
                let _ = entry.schedule.next_after(now);
            }
        }
        Err(err) => cron_refusal(data, &err),
    }
}

pub fn search_toml(data: &[u8]) {
    let result = match std::str::from_utf8(data) {
        Ok(text) => crabtalk_search::parse_config(Path::new("search.toml"), text),
        Err(_) => in_file("search.toml", data, crabtalk_search::load_config),
    };
    if let Err(err) = result {
        kit_refusal(data, &err);
    }
}

pub fn telegram_toml(data: &[u8]) {
    let file = match std::str::from_utf8(data) {
        Ok(text) => Ok(ConfigFile::new("telegram.toml", text)),
        Err(_) => in_file("telegram.toml", data, |path| {
            ConfigFile::read(path).map(|file| file.expect("the file is there"))
        }),
    };
    let result = file.and_then(|file| {
        let config: TelegramConfig = file.parse()?;
        config.check(&file)
    });
    if let Err(err) = result {
        kit_refusal(data, &err);
    }
}
