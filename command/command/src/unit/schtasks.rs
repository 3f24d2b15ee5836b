//! Windows Task Scheduler tasks, registered with `schtasks /Create /XML`.
//!
//! A task can neither set environment variables nor redirect output, so its
//! action runs `cmd.exe`, which sets `CRABTALK_HOME` and `PATH`, runs
//! `<binary> run` and appends both streams to the log:
//!
//! ```text
//! cmd.exe /d /v:off /s /c "set "CRABTALK_HOME=…" && set "PATH=…" && "…\crabtalkd.exe" "run" >>"…\logs\daemon.log" 2>&1"
//! ```
//!
//! Values `cmd.exe` cannot carry (double quotes, `%`, control characters)
//! are refused. Task Scheduler cannot read an env file (the binary loads
//! `$CRABTALK_HOME/env` itself); restarts on failure are at its minimum
//! interval, one minute.

use askama::Template;

use super::escape::{self, Escaped};
use super::{HEADER, RenderError, UnitFormat, UnitSpec, field, path_text, rendered};

const FORMAT: UnitFormat = UnitFormat::Schtasks;

/// Task Scheduler's shortest restart interval.
const RESTART_INTERVAL: &str = "PT1M";
/// Restarts after failures before Task Scheduler gives up.
const RESTART_COUNT: u32 = 10;

#[derive(Template)]
#[template(path = "schtasks.xml", escape = "none")]
struct TaskXml {
    header: Escaped,
    label: Escaped,
    description: Escaped,
    restart_interval: Escaped,
    restart_count: Escaped,
    command: Escaped,
    arguments: Escaped,
    working_dir: Escaped,
}

pub(super) fn render(spec: &UnitSpec) -> Result<String, RenderError> {
    let home = path_text(FORMAT, "home", &spec.home)?;
    let log_file = path_text(FORMAT, "log file", &spec.log_file)?;
    let set = |name: &'static str, key: &str, value: &str| {
        field(FORMAT, name, value, |v| {
            escape::cmd_word(&format!("{key}={v}"))
        })
        .map(|word| format!("set {word}"))
    };
    let mut words = Vec::new();
    for word in spec.command_line() {
        words.push(field(FORMAT, "program argument", &word, escape::cmd_word)?);
    }
    let inner = format!(
        "{} && {} && {} >>{} 2>&1",
        set("CRABTALK_HOME", "CRABTALK_HOME", home)?,
        set("PATH", "PATH", &spec.path_env)?,
        words.join(" "),
        field(FORMAT, "log file", log_file, escape::cmd_word)?,
    );
    let arguments = format!("/d /v:off /s /c \"{inner}\"");
    let task = TaskXml {
        header: field(FORMAT, "header", HEADER, escape::xml)?,
        label: field(FORMAT, "label", &spec.service.label(), escape::xml)?,
        description: field(
            FORMAT,
            "description",
            spec.service.description(),
            escape::xml,
        )?,
        restart_interval: Escaped::literal(RESTART_INTERVAL),
        restart_count: Escaped::literal(RESTART_COUNT),
        command: Escaped::literal("cmd.exe"),
        arguments: field(FORMAT, "arguments", &arguments, escape::xml)?,
        working_dir: field(FORMAT, "working directory", home, escape::xml)?,
    };
    Ok(rendered(task.render()))
}
