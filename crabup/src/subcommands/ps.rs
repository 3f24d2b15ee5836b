//! `crabup ps`: every crabtalk service in one view.
//!
//! Three sources are merged per service: the service manager (state, pid,
//! restarts, last exit), the port file (port, start time; live or stale by
//! its pid and by connecting), and a health check (the daemon answers
//! `Ping` with its version and protocol; a component answers `GET /health`
//! on its port as the service it should be, with its problems).
//!
//! The table keeps one short line per service; what is wrong, and the
//! command that fixes it, go on lines of their own under it. `--json` is
//! the same, structured. `ps` exits with [`NOT_RUNNING_EXIT`] when a
//! service that should run does not (failed, left stale, being restarted
//! after a crash, or running but not answering); a service someone
//! stopped, or one never installed, is not a failure.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use crabtalk_command::liveness::PortProbe;
use crabtalk_command::manager::process::PidFile;
use crabtalk_command::{Service, ServiceState, health};
use crabtalk_home::{DAEMON_RUN_NAME, Home, validate_service_name};

use crate::NOT_RUNNING_EXIT;
use crate::cli::PsArgs;
use crate::context::Context;
use crate::names;

/// How long the daemon gets to answer `Ping`.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// How much of the end of a log is searched for its last error.
const LOG_LINES: usize = 200;

/// One service as `ps` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PsRow {
    pub name: String,
    pub label: String,
    pub manager: String,
    /// running, restarting, stopped, failed, stale, not installed, or
    /// "running (unmanaged)" when a live port file exists that no manager
    /// started.
    pub state: String,
    /// Whether it should run and does not (what makes `ps` fail).
    pub trouble: bool,
    pub pid: Option<u32>,
    pub port: Option<u16>,
    /// live, stale, missing or invalid.
    pub port_file: String,
    pub started_at: Option<String>,
    pub uptime_secs: Option<i64>,
    /// The version it reports (the daemon's `Ping`, a component's health).
    pub version: Option<String>,
    /// The daemon's wire protocol (components have none).
    pub protocol: Option<String>,
    pub health: HealthView,
    /// How many times its manager restarted it after a failure.
    pub restarts: Option<u32>,
    /// How its last process ended, when known.
    pub last_exit: Option<String>,
    /// The last error it logged, when it is not running as it should.
    pub last_error: Option<String>,
    /// What the manager or the port file add.
    pub detail: Option<String>,
    /// The command that fixes it, when one does.
    pub fix: Option<String>,
}

/// What the health check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct HealthView {
    pub status: HealthStatus,
    /// What a component reports wrong with itself (`degraded`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Why it did not answer, or whom it answered as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The health check's verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HealthStatus {
    Ok,
    /// It answers, and lists problems.
    Degraded,
    /// Its port or socket does not answer as it should.
    NoAnswer,
    /// Another service answers on its port.
    WrongService,
    /// Its port file is stale: it is gone.
    Down,
    /// Nothing to ask (not running).
    #[default]
    Unknown,
}

impl HealthStatus {
    /// The table's word.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Degraded => "degraded",
            Self::NoAnswer => "no answer",
            Self::WrongService => "wrong service",
            Self::Down => "down",
            Self::Unknown => "-",
        }
    }
}

impl HealthView {
    fn of(status: HealthStatus) -> Self {
        Self {
            status,
            ..Self::default()
        }
    }

    pub(crate) fn is_ok(&self) -> bool {
        self.status == HealthStatus::Ok
    }
}

/// `ok`, `degraded: …`, `no answer: …` — the verdict and what it rests on.
impl std::fmt::Display for HealthView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.status.word())?;
        if !self.problems.is_empty() {
            write!(f, ": {}", self.problems.join("; "))?;
        }
        if let Some(error) = &self.error {
            write!(f, ": {error}")?;
        }
        Ok(())
    }
}

/// The services to show: the first-party ones, and any other that left a
/// pid or port file in `run/`.
fn service_names(home: &Home) -> Vec<String> {
    let mut names: Vec<String> = names::TABLE
        .iter()
        .filter(|k| k.service)
        .map(|k| k.short.to_owned())
        .collect();
    let mut extra = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(home.run_dir()) {
        for entry in entries.flatten() {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            let Some(stem) = file
                .strip_suffix(".port")
                .or_else(|| file.strip_suffix(".pid"))
            else {
                continue;
            };
            let name = if stem == DAEMON_RUN_NAME {
                "daemon"
            } else {
                stem
            };
            if validate_service_name(name).is_ok() && !names.iter().any(|n| n == name) {
                extra.insert(name.to_owned());
            }
        }
    }
    names.extend(extra);
    names
}

/// The rows of `crabup ps`.
pub(crate) fn ps_rows(ctx: &Context) -> anyhow::Result<Vec<PsRow>> {
    let manager = ctx.manager()?;
    let mut rows = Vec::new();
    for name in service_names(&ctx.home) {
        let Ok(service) = names::service_for(&name) else {
            continue;
        };
        let spec = ctx.spec(&service);
        let installed = ctx.binary(&service).is_some();
        let status = manager.status(&spec)?;
        let probe = PortProbe::check(&service.port_file(&ctx.home));
        let pid_file = PidFile::read(&service.pid_file(&ctx.home));
        let started_at = pid_file
            .and_then(|f| f.started_at)
            .filter(|_| status.is_running())
            .or_else(|| probe.file().and_then(|f| f.started_at.clone()));
        let state = match (status.state, &probe) {
            (ServiceState::Running, _) => "running",
            (ServiceState::Restarting, _) => "restarting",
            (ServiceState::Failed, _) => "failed",
            (_, PortProbe::Live(_)) => "running (unmanaged)",
            (_, PortProbe::Stale { .. }) => "stale",
            (ServiceState::NotInstalled, _) => "not installed",
            (ServiceState::Stopped, _) if !installed => "not installed",
            (ServiceState::Stopped, _) => "stopped",
        };
        let port_file = match &probe {
            PortProbe::Live(_) => "live",
            PortProbe::Stale { .. } => "stale",
            PortProbe::Missing => "missing",
            PortProbe::Invalid(_) => "invalid",
        };
        let mut detail = status.detail.clone();
        if let PortProbe::Stale { reason, .. } | PortProbe::Invalid(reason) = &probe {
            let note = format!("port file {port_file}: {reason}");
            detail = Some(match detail {
                Some(d) => format!("{d}; {note}"),
                None => note,
            });
        }
        let running = status.is_running() || probe.is_live();
        let (health, version, protocol) = health(&ctx.home, &service, &probe);
        let trouble = match state {
            "failed" | "stale" | "restarting" => true,
            _ if running => matches!(
                health.status,
                HealthStatus::NoAnswer | HealthStatus::WrongService
            ),
            _ => false,
        };
        let fix = fix_for(service.name(), state, &health);
        let last_error = if trouble {
            last_logged_error(&service.log_file(&ctx.home))
        } else {
            None
        };
        rows.push(PsRow {
            name: service.name().to_owned(),
            label: service.label(),
            manager: ctx.manager_kind.to_string(),
            state: state.to_owned(),
            trouble,
            pid: status
                .pid
                .or_else(|| probe.is_live().then(|| probe.file()?.pid).flatten()),
            port: probe.file().map(|f| f.port).filter(|_| probe.is_live()),
            port_file: port_file.to_owned(),
            uptime_secs: started_at.as_deref().filter(|_| running).and_then(uptime),
            started_at: started_at.filter(|_| running),
            version,
            protocol,
            health,
            restarts: status.restarts,
            last_exit: status.last_exit.clone(),
            last_error,
            detail,
            fix,
        });
    }
    Ok(rows)
}

/// The command that gets a service of `state` with `health` going.
fn fix_for(name: &str, state: &str, health: &HealthView) -> Option<String> {
    match state {
        "failed" | "stale" => Some(format!(
            "crabup {name} start   (why it stopped: crabup {name} logs)"
        )),
        "running" | "running (unmanaged)"
            if matches!(
                health.status,
                HealthStatus::NoAnswer | HealthStatus::WrongService
            ) =>
        {
            Some(format!(
                "crabup {name} restart   (what it says: crabup {name} logs)"
            ))
        }
        _ => None,
    }
}

/// The message of the last ERROR line at the end of `log`.
fn last_logged_error(log: &std::path::Path) -> Option<String> {
    let lines = crabtalk_command::logs::last_lines(log, LOG_LINES).ok()?;
    lines.iter().rev().find_map(|line| {
        // `<time> ERROR <target>: <message>`
        let rest = line
            .trim_start()
            .split_once(char::is_whitespace)?
            .1
            .trim_start();
        let (level, message) = rest.split_once(char::is_whitespace)?;
        (level == "ERROR").then(|| message.trim().to_owned())
    })
}

fn uptime(started_at: &str) -> Option<i64> {
    let started = chrono::DateTime::parse_from_rfc3339(started_at).ok()?;
    Some(
        (chrono::Utc::now() - started.with_timezone(&chrono::Utc))
            .num_seconds()
            .max(0),
    )
}

/// The health of `service`, its version and protocol.
fn health(
    home: &Home,
    service: &Service,
    probe: &PortProbe,
) -> (HealthView, Option<String>, Option<String>) {
    if service.is_daemon() {
        if !probe.is_live() && !home.socket_path().exists() {
            return (HealthView::default(), None, None);
        }
        return match ping_daemon(home) {
            Ok(pong) => (
                HealthView::of(HealthStatus::Ok),
                Some(pong.server_version).filter(|v| !v.is_empty()),
                Some(pong.protocol).filter(|p| !p.is_empty()),
            ),
            Err(err) => (
                HealthView {
                    error: Some(format!("{err:#}")),
                    ..HealthView::of(HealthStatus::NoAnswer)
                },
                None,
                None,
            ),
        };
    }
    match probe {
        PortProbe::Live(file) => match health::check(
            file.port,
            crabtalk_home::token::read_token(home).ok().as_deref(),
            health::HEALTH_TIMEOUT,
        ) {
            Ok(report) if report.service == service.name() => {
                let status = if report.problems.is_empty() {
                    HealthStatus::Ok
                } else {
                    HealthStatus::Degraded
                };
                (
                    HealthView {
                        problems: report.problems,
                        ..HealthView::of(status)
                    },
                    Some(report.version),
                    None,
                )
            }
            Ok(report) => (
                HealthView {
                    error: Some(format!("{} answers on its port", report.service)),
                    ..HealthView::of(HealthStatus::WrongService)
                },
                None,
                None,
            ),
            Err(err) => (
                HealthView {
                    error: Some(err.to_string()),
                    ..HealthView::of(HealthStatus::NoAnswer)
                },
                None,
                None,
            ),
        },
        PortProbe::Stale { .. } => (HealthView::of(HealthStatus::Down), None, None),
        _ => (HealthView::default(), None, None),
    }
}

fn ping_daemon(home: &Home) -> anyhow::Result<crabtalk_proto::msg::Pong> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        tokio::time::timeout(PING_TIMEOUT, async {
            let client = crabtalk_kit::daemon::connect(home).await?;
            Ok::<_, anyhow::Error>(client.ping().await?)
        })
        .await
        .map_err(|_| anyhow::anyhow!("timed out after {PING_TIMEOUT:?}"))?
    })
}

fn dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn human_duration(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 86400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        s => format!("{}d{}h", s / 86400, s % 86400 / 3600),
    }
}

pub(super) fn run(ctx: &Context, args: &PsArgs) -> anyhow::Result<ExitCode> {
    let rows = ps_rows(ctx)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print_rows(ctx, &rows);
    }
    Ok(if rows.iter().any(|row| row.trouble) {
        ExitCode::from(NOT_RUNNING_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// The table `crabup ps` prints (also the end of `crabup up`).
pub(super) fn print_table(ctx: &Context) -> anyhow::Result<()> {
    print_rows(ctx, &ps_rows(ctx)?);
    Ok(())
}

fn print_rows(ctx: &Context, rows: &[PsRow]) {
    println!(
        "{:<10} {:<20} {:<8} {:<6} {:<8} {:<9} {:<10} VERSION",
        "NAME", "STATE", "PID", "PORT", "UPTIME", "RESTARTS", "HEALTH"
    );
    for row in rows {
        println!(
            "{:<10} {:<20} {:<8} {:<6} {:<8} {:<9} {:<10} {}",
            row.name,
            row.state,
            dash(row.pid),
            dash(row.port),
            dash(row.uptime_secs.map(human_duration)),
            dash(row.restarts),
            row.health.status.word(),
            row.version.as_deref().unwrap_or("-")
        );
        for note in notes(row) {
            println!("  ↳ {note}");
        }
    }
    println!("(service manager: {})", ctx.manager_kind);
}

/// What goes under a row: what is wrong, then the fix.
fn notes(row: &PsRow) -> Vec<String> {
    let mut notes = Vec::new();
    let failing = row.trouble || !row.health.problems.is_empty();
    if row.trouble {
        if let Some(detail) = &row.detail {
            notes.push(detail.clone());
        }
        if let Some(error) = &row.health.error {
            notes.push(format!("{}: {error}", row.health.status.word()));
        }
        if let Some(error) = &row.last_error {
            notes.push(format!("last error in its log: {error}"));
        }
        if row.state == "restarting" {
            notes.push(format!("why it failed: crabup {} logs", row.name));
        }
    } else if let (Some(exit), Some(restarts @ 1..)) = (&row.last_exit, row.restarts) {
        notes.push(format!(
            "restarted {restarts} time{} by its manager; last exit: {exit}",
            if restarts == 1 { "" } else { "s" }
        ));
    }
    notes.extend(row.health.problems.iter().cloned());
    if failing && let Some(fix) = &row.fix {
        notes.push(format!("fix: {fix}"));
    }
    notes
}
