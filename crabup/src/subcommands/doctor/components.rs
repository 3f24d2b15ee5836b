//! `crabup doctor`'s look at each installed component (cron, search,
//! telegram), and the daemon's log:
//!
//! - its config parses, read by the component's own loader: the installed
//!   `crabtalk-cron list --json` and `crabtalk-search engines --json`
//!   (which also tell failing entries and engine health), and the
//!   gateway's own [`TelegramConfig`] type, which crabup links;
//! - its service runs, its port file is live and `GET /health` answers as
//!   itself (the `ps` row);
//! - the last warnings and errors in `logs/<name>.log`.

use std::path::Path;
use std::process::Command;

use crabtalk_telegram::TelegramConfig;

use super::{Report, Verdict};
use crate::context::Context;
use crate::names;
use crate::subcommands::{HealthStatus, PsRow};

/// How much of the end of a log is searched for errors.
const LOG_LINES: usize = 400;

/// How many of the errors found are shown.
const ERRORS_SHOWN: usize = 3;

/// A log line shown at most this long; a longer one loses its middle, so
/// the fix a warning ends with (`chmod 700 <path>`) is shown whole.
const LINE_CHARS: usize = 240;

/// How much of the start of a cut line is kept (the rest is its end).
const LINE_HEAD_CHARS: usize = 80;

/// Every check of every installed component; the daemon's log too.
pub(super) fn check(ctx: &Context, rows: &[PsRow], report: &mut Report) {
    for known in names::TABLE.iter().filter(|known| known.service) {
        let installed = names::service_for(known.short)
            .ok()
            .and_then(|service| ctx.binary(&service))
            .is_some();
        match known.short {
            "cron" => cron_check(ctx, report),
            "search" => search_check(ctx, report),
            "telegram" => telegram_check(ctx, installed, report),
            _ => {}
        }
        if !installed {
            continue;
        }
        if known.short != "daemon"
            && let Some(row) = rows.iter().find(|row| row.name == known.short)
        {
            service_check(row, report);
        }
        log_check(ctx, known.short, report);
    }
}

/// The service's state, port file and health, from its `ps` row.
fn service_check(row: &PsRow, report: &mut Report) {
    let what = format!("{} service", row.name);
    let name = &row.name;
    let running = row.state.starts_with("running");
    let where_ = match (row.pid, row.port) {
        (Some(pid), Some(port)) => format!("pid {pid}, port {port}"),
        (Some(pid), None) => format!("pid {pid}, no port announced"),
        (None, Some(port)) => format!("port {port}"),
        (None, None) => "no pid, no port".to_owned(),
    };
    if running && row.health.is_ok() {
        report.line(
            Verdict::Ok,
            &what,
            format!(
                "{} ({where_}), port file live, health {}",
                row.state, row.health
            ),
        );
    } else if running && row.health.status == HealthStatus::Degraded {
        report.line(
            Verdict::Warn,
            &what,
            format!("{} ({where_}), {}", row.state, row.health),
        );
    } else if running {
        report.line(
            Verdict::Fail,
            &what,
            format!(
                "{} ({where_}), port file {}, health: {}; `crabup {name} restart`, and `crabup {name} logs` shows why",
                row.state, row.port_file, row.health
            ),
        );
    } else if row.state == "restarting" {
        report.line(
            Verdict::Warn,
            &what,
            format!(
                "restarting ({}); `crabup {name} logs` shows why it failed",
                row.detail
                    .as_deref()
                    .unwrap_or("its supervisor starts it again")
            ),
        );
    } else if row.state == "failed" || row.state == "stale" {
        report.line(
            Verdict::Fail,
            &what,
            format!(
                "{} (port file {}{}); `crabup {name} start` recovers it, `crabup {name} logs` shows why",
                row.state,
                row.port_file,
                row.detail.as_deref().map(|d| format!("; {d}")).unwrap_or_default()
            ),
        );
    } else {
        report.line(
            Verdict::Warn,
            &what,
            format!("{}; `crabup {name} start` runs it", row.state),
        );
    }
}

/// The last warnings and errors at the end of the service's log.
fn log_check(ctx: &Context, name: &str, report: &mut Report) {
    let Ok(service) = names::service_for(name) else {
        return;
    };
    let path = service.log_file(&ctx.home);
    let Ok(lines) = crabtalk_command::logs::last_lines(&path, LOG_LINES) else {
        return;
    };
    let troubles: Vec<&String> = lines.iter().filter(|line| is_trouble(line)).collect();
    let what = format!("{name} log");
    if troubles.is_empty() {
        report.line(
            Verdict::Ok,
            &what,
            format!(
                "no warnings or errors in the last {} lines of {}",
                lines.len(),
                path.display()
            ),
        );
        return;
    }
    let shown: Vec<String> = troubles
        .iter()
        .rev()
        .take(ERRORS_SHOWN)
        .rev()
        .map(|line| format!("\n       {}", clip(line)))
        .collect();
    report.line(
        Verdict::Warn,
        &what,
        format!(
            "{} warning/error line{} in the last {} lines of {}; the latest:{}",
            troubles.len(),
            if troubles.len() == 1 { "" } else { "s" },
            lines.len(),
            path.display(),
            shown.concat()
        ),
    );
}

/// A tracing line at WARN or ERROR (`<time>  WARN target: message`).
fn is_trouble(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let _time = words.next();
    matches!(words.next(), Some("WARN" | "ERROR"))
}

/// `line` within [`LINE_CHARS`]: its start and its end, the middle cut.
fn clip(line: &str) -> String {
    let chars = line.chars().count();
    if chars <= LINE_CHARS {
        return line.to_owned();
    }
    let head: String = line.chars().take(LINE_HEAD_CHARS).collect();
    let tail: String = line
        .chars()
        .skip(chars - (LINE_CHARS - LINE_HEAD_CHARS))
        .collect();
    format!("{head} … {tail}")
}

/// `telegram.toml`, when the gateway is installed or the file exists:
/// read and checked with the gateway's own config type.
fn telegram_check(ctx: &Context, installed: bool, report: &mut Report) {
    let path = TelegramConfig::path(&ctx.home);
    if !path.is_file() {
        if installed {
            report.line(
                Verdict::Warn,
                "telegram.toml",
                format!(
                    "{} does not exist; `crabup telegram start` in a terminal sets the bot up",
                    path.display()
                ),
            );
        }
        return;
    }
    if !installed {
        report.line(
            Verdict::Warn,
            "telegram",
            format!(
                "{} exists but crabtalk-telegram is not installed; `crabup pull telegram`",
                path.display()
            ),
        );
    }
    match TelegramConfig::load_checked(&ctx.home) {
        Err(err) => report.line(Verdict::Fail, "telegram.toml", err.to_string()),
        Ok(config) => {
            let token = match config.token() {
                Ok(_) => "token set".to_owned(),
                Err(why) => why.to_string(),
            };
            let access = match (config.allow.len(), config.pairing) {
                (0, false) => "nobody may talk to the bot (empty allow, no pairing)".to_owned(),
                (0, true) => "pairing on, nobody allowed yet".to_owned(),
                (n, pairing) => format!(
                    "{n} user{} allowed{}",
                    if n == 1 { "" } else { "s" },
                    if pairing { ", pairing on" } else { "" }
                ),
            };
            let verdict = if config.has_token() {
                Verdict::Ok
            } else {
                Verdict::Fail
            };
            report.line(
                verdict,
                "telegram.toml",
                format!("parses; {token}; {access}"),
            );
        }
    }
}

/// What a component's own command says about its files: the array under
/// `key` of `crabtalk-<name> <command> --json`, run with this home — the
/// installed binary knows its format better than crabup. `None` when it
/// could not be asked or refused the file; the report then says why
/// (`<name>.toml` failing with the component's own message).
fn ask_component(
    ctx: &Context,
    report: &mut Report,
    name: &str,
    config: Option<&Path>,
    command: &str,
    key: &str,
) -> Option<Vec<serde_json::Value>> {
    let binary = names::service_for(name).ok().and_then(|s| ctx.binary(&s));
    let Some(binary) = binary else {
        if let Some(path) = config {
            report.line(
                Verdict::Warn,
                name,
                format!(
                    "{} exists but crabtalk-{name} is not installed; `crabup pull {name}`",
                    path.display()
                ),
            );
        }
        return None;
    };
    let output = Command::new(&binary)
        .args([command, "--json"])
        .env("CRABTALK_HOME", ctx.home.root())
        .stdin(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(err) => {
            report.line(
                Verdict::Warn,
                name,
                format!("cannot run {}: {err}", binary.display()),
            );
            return None;
        }
    };
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        let file = config
            .and_then(Path::file_name)
            .map(|file| file.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("{name}.toml"));
        report.line(Verdict::Fail, &file, why);
        return None;
    }
    Some(
        serde_json::from_slice::<serde_json::Value>(&output.stdout)
            .ok()
            .and_then(|v| v.get(key).and_then(|e| e.as_array()).cloned())
            .unwrap_or_default(),
    )
}

/// `crons.toml`, when there is one: it must parse (checked by the
/// installed `crabtalk-cron list --json`, which knows the format), and
/// entries that keep failing are named.
fn cron_check(ctx: &Context, report: &mut Report) {
    let Ok(path) = ctx.home.component_config("crons.toml") else {
        return;
    };
    if !path.is_file() {
        return;
    }
    let Some(entries) = ask_component(ctx, report, "cron", Some(&path), "list", "entries") else {
        return;
    };
    let failing: Vec<String> = entries
        .iter()
        .filter(|entry| entry["health"] == "failing")
        .map(|entry| {
            let id = entry["id"].as_str().unwrap_or("?");
            match entry["last_error"].as_str() {
                Some(error) => format!("{id} ({error})"),
                None => id.to_owned(),
            }
        })
        .collect();
    if failing.is_empty() {
        report.line(
            Verdict::Ok,
            "crons.toml",
            format!("{} entries parse, none failing", entries.len()),
        );
    } else {
        report.line(
            Verdict::Warn,
            "cron",
            format!(
                "failing entries (3+ errors in a row): {}; `crabtalk-cron runs <id>` shows why",
                failing.join(", ")
            ),
        );
    }
}

/// The search component, when `search.toml` exists or it is installed:
/// the file must parse, and each engine's last health is shown (from the
/// installed `crabtalk-search engines --json`, which reads both).
fn search_check(ctx: &Context, report: &mut Report) {
    let config = ctx
        .home
        .component_config("search.toml")
        .ok()
        .filter(|path| path.is_file());
    let Some(engines) = ask_component(
        ctx,
        report,
        "search",
        config.as_deref(),
        "engines",
        "engines",
    ) else {
        return;
    };
    let on: Vec<&serde_json::Value> = engines
        .iter()
        .filter(|engine| engine["enabled"] == true)
        .collect();
    let described: Vec<String> = on
        .iter()
        .map(|engine| {
            let name = engine["engine"].as_str().unwrap_or("?");
            let health = engine["health"].as_str().unwrap_or("unknown");
            match engine["suspended_until"].as_str() {
                Some(until) => format!("{name} {health} (suspended until {until})"),
                None => format!("{name} {health}"),
            }
        })
        .collect();
    let source = if config.is_some() {
        "search.toml parses"
    } else {
        "no search.toml (defaults)"
    };
    let troubled = on.iter().any(|engine| {
        engine["suspended_until"].is_string()
            || matches!(
                engine["health"].as_str(),
                Some("rate_limited" | "blocked" | "timeout" | "error")
            )
    });
    if on.is_empty() {
        report.line(
            Verdict::Warn,
            "search",
            format!("{source}, but no engine is enabled; see `crabtalk-search engines`"),
        );
    } else if troubled {
        report.line(
            Verdict::Warn,
            "search",
            format!(
                "{source}; engines' last health: {}; `crabtalk-search engines` shows details",
                described.join(", ")
            ),
        );
    } else {
        report.line(
            Verdict::Ok,
            "search",
            format!("{source}; engines' last health: {}", described.join(", ")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_keeps_its_end_where_the_fix_is() {
        let path = "/home/someone/projects/crabtalk/sandbox/.crabtalk-home";
        let line = format!(
            "2026-01-01T00:00:00.000000Z  WARN crabtalkd::private: {path} has mode 755: other \
             users can get at it, and it holds the daemon's conversations, memory and secrets; \
             fix it with: chmod 700 {path}"
        );
        assert!(line.chars().count() > LINE_CHARS);
        let shown = clip(&line);
        assert!(shown.chars().count() <= LINE_CHARS + 3, "{shown}");
        assert!(
            shown.starts_with("2026-01-01T00:00:00.000000Z  WARN"),
            "{shown}"
        );
        assert!(shown.ends_with(&format!("chmod 700 {path}")), "{shown}");
        assert_eq!(clip("short"), "short");
    }
}
