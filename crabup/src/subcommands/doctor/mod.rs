//! `crabup doctor`: checks, each with a fix.
//!
//! Besides the machine (cargo, PATH, the service manager) and the run
//! files, it checks the daemon's configuration with `crabtalkd check`,
//! whether each provider's `base_url` answers, every installed component
//! ([`components`]): its config, its process, port file and health, and
//! the last errors in its log; and that the MCP bridge starts ([`bridge`]).

use std::process::{Command, ExitCode};

use crabtalk_command::ManagerKind;
use crabtalk_command::liveness::{PortProbe, pid_alive};
use crabtalk_command::manager::process::PidFile;
use crabtalk_command::manager::{MANAGER_ENV, systemd};

use crate::config_check::{self, ConfigVerdict};
use crate::context::Context;
use crate::providers;
use crate::reach;

mod bridge;
mod components;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Ok,
    Warn,
    Fail,
}

pub(super) struct Report {
    failed: bool,
}

impl Report {
    fn line(&mut self, verdict: Verdict, what: &str, detail: impl AsRef<str>) {
        let mark = match verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => {
                self.failed = true;
                "FAIL"
            }
        };
        println!("[{mark}] {what}: {}", detail.as_ref());
    }
}

pub(super) fn run(ctx: &Context) -> anyhow::Result<ExitCode> {
    let mut report = Report { failed: false };

    match ctx.cargo.program() {
        Some(cargo) => {
            let version = Command::new(&cargo)
                .arg("--version")
                .output()
                .ok()
                .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
                .unwrap_or_default();
            report.line(
                Verdict::Ok,
                "cargo",
                format!("{} ({version})", cargo.display()),
            );
        }
        None => report.line(
            Verdict::Warn,
            "cargo",
            "not found: prebuilt binaries come from the release without it; building from \
             source (--from-source, --path, --git) needs Rust from https://rustup.rs",
        ),
    }

    let bin = ctx.cargo.bin_dir();
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir == bin));
    if on_path {
        report.line(Verdict::Ok, "PATH", format!("{} is on PATH", bin.display()));
    } else {
        report.line(
            Verdict::Warn,
            "PATH",
            format!(
                "{} is not on PATH; add it so installed binaries run by name",
                bin.display()
            ),
        );
    }

    versions_check(ctx, &mut report);

    let forced = std::env::var(MANAGER_ENV).ok().filter(|v| !v.is_empty());
    let how = forced.map_or_else(
        || "detected".to_owned(),
        |v| format!("forced by {MANAGER_ENV}={v}"),
    );
    report.line(
        Verdict::Ok,
        "service manager",
        format!("{} ({how})", ctx.manager_kind),
    );
    if ctx.manager_kind == ManagerKind::Systemd {
        if !systemd::user_manager_available() {
            report.line(
                Verdict::Fail,
                "systemd",
                "the user manager does not answer (`systemctl --user`)",
            );
        }
        match systemd::linger_enabled() {
            Some(true) => report.line(
                Verdict::Ok,
                "linger",
                "enabled: services keep running after logout",
            ),
            Some(false) => report.line(
                Verdict::Warn,
                "linger",
                "disabled: services stop at logout; `loginctl enable-linger $USER` keeps them",
            ),
            None => report.line(Verdict::Warn, "linger", "loginctl could not tell"),
        }
    }

    let mut stale = Vec::new();
    if let Ok(entries) = std::fs::read_dir(ctx.home.run_dir()) {
        for entry in entries.flatten() {
            let path = entry.path();
            match path.extension().and_then(|e| e.to_str()) {
                Some("port") => {
                    if let PortProbe::Stale { reason, .. } | PortProbe::Invalid(reason) =
                        PortProbe::check(&path)
                    {
                        stale.push(format!("{} ({reason})", path.display()));
                    }
                }
                Some("pid") => {
                    // A supervisor waiting to start its service again is
                    // not a leftover.
                    if let Some(file) = PidFile::read(&path)
                        .filter(|f| !pid_alive(f.pid) && !f.supervisor.is_some_and(pid_alive))
                    {
                        stale.push(format!("{} (pid {} is gone)", path.display(), file.pid));
                    }
                }
                _ => {}
            }
        }
    }
    if stale.is_empty() {
        report.line(Verdict::Ok, "run files", "no stale pid or port files");
    } else {
        report.line(
            Verdict::Warn,
            "run files",
            format!(
                "stale (a crash?): {}; `crabup <name> start` recovers, or delete them",
                stale.join(", ")
            ),
        );
    }

    let rows = super::ps_rows(ctx)?;
    match rows.iter().find(|row| row.name == "daemon") {
        Some(row) if row.health.is_ok() => report.line(
            Verdict::Ok,
            "daemon",
            format!(
                "answers ping: {} {}",
                row.version.as_deref().unwrap_or("?"),
                row.protocol.as_deref().unwrap_or("")
            ),
        ),
        Some(row) if row.state.starts_with("running") => report.line(
            Verdict::Fail,
            "daemon",
            format!("running but {}", row.health),
        ),
        _ => report.line(
            Verdict::Warn,
            "daemon",
            "not running; `crabup daemon start`",
        ),
    }

    components::check(ctx, &rows, &mut report);
    bridge::check(ctx, &mut report);

    // The providers of a file the daemon refuses are not worth probing:
    // the configuration line says what to fix first.
    let config_ok = check_config(ctx, &mut report);
    let finding = providers::find(&ctx.home, ctx.manager_kind);
    let described = finding.describe(&ctx.home, ctx.manager_kind);
    if config_ok && finding.found() {
        report.line(Verdict::Ok, "providers", described);
        check_providers(ctx, &mut report);
    } else if config_ok {
        report.line(Verdict::Warn, "providers", described);
    }

    Ok(if report.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Installed family binaries whose version differs from crabup's own: a
/// daemon of another release may not understand the units crabup writes.
fn versions_check(ctx: &Context, report: &mut Report) {
    let ours = crate::installs::Installs::load(ctx.cargo.home()).unwrap_or_default();
    let mut differing: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (binary, record) in &ours.binaries {
        let path = ctx.cargo.bin_dir().join(crate::cargo::exe(binary));
        if ours.current(binary, &path).is_none() {
            continue;
        }
        seen.push(binary.clone());
        if !crate::names::matches_family(&record.version) {
            differing.push(format!("{} {}", record.package, record.version));
        }
    }
    let installed = ctx.cargo.installed().unwrap_or_default();
    differing.extend(
        installed
            .iter()
            .filter(|i| crate::names::is_family_crate(&i.name))
            .filter(|i| !i.bins.iter().all(|bin| seen.contains(bin)))
            .filter(|i| !crate::names::matches_family(&i.version))
            .map(|i| format!("{} {}", i.name, i.version)),
    );
    if differing.is_empty() {
        return;
    }
    report.line(
        Verdict::Warn,
        "versions",
        format!(
            "{} differ from crabup's version {}; `crabup update` installs the matching ones",
            differing.join(", "),
            crate::names::FAMILY_VERSION
        ),
    );
}

/// `crabtalkd check`, when the daemon is installed; whether the
/// configuration is fine (or could not be checked).
fn check_config(ctx: &Context, report: &mut Report) -> bool {
    let Some(binary) = ctx.binary(&crabtalk_command::Service::daemon()) else {
        report.line(
            Verdict::Warn,
            "configuration",
            "not checked: crabtalkd is not installed (`crabup pull daemon`)",
        );
        return true;
    };
    match config_check::check(&crabtalk_command::Service::daemon(), &binary, &ctx.home) {
        ConfigVerdict::Fine(summary) => {
            report.line(Verdict::Ok, "configuration", summary);
            true
        }
        ConfigVerdict::Refused(problems) => {
            report.line(
                Verdict::Fail,
                "configuration",
                format!(
                    "crabtalkd would refuse it (a restart would not start; a reload keeps the old files):\n{}",
                    indent(&problems)
                ),
            );
            false
        }
        ConfigVerdict::Unavailable(why) => {
            report.line(
                Verdict::Warn,
                "configuration",
                format!("not checked: {why}"),
            );
            true
        }
    }
}

/// Each `[[providers]]` entry with a `base_url`: does something answer
/// there?
fn check_providers(ctx: &Context, report: &mut Report) {
    let Ok(text) = std::fs::read_to_string(ctx.home.config_file()) else {
        return;
    };
    let Ok(config) = text.parse::<toml::Table>() else {
        return;
    };
    let Some(providers) = config.get("providers").and_then(|p| p.as_array()) else {
        return;
    };
    for provider in providers {
        let Some(url) = provider.get("base_url").and_then(|u| u.as_str()) else {
            continue;
        };
        let label = provider
            .get("name")
            .or_else(|| provider.get("kind"))
            .and_then(|v| v.as_str())
            .unwrap_or("provider");
        match reach::answers(url) {
            Ok(()) => report.line(
                Verdict::Ok,
                &format!("provider {label}"),
                format!("{url} answers"),
            ),
            Err(why) => report.line(
                Verdict::Fail,
                &format!("provider {label}"),
                format!(
                    "{url} does not answer ({why}); start that server, or fix base_url in {}",
                    ctx.home.config_file().display()
                ),
            ),
        }
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("       {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
