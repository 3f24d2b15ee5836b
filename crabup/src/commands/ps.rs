//! `crabup ps`: every crabtalk service in one view.
//!
//! Three sources are merged per service: the service manager (state, pid),
//! the port file (port, start time; live or stale by its pid and by
//! connecting), and a health check (the daemon answers `Ping`; a component
//! answers `GET /health` on its port as the service it should be).

use std::collections::BTreeSet;
use std::time::Duration;

use crabtalk_command::liveness::PortProbe;
use crabtalk_command::manager::process::PidFile;
use crabtalk_command::{Service, ServiceState, health};
use crabtalk_home::{DAEMON_RUN_NAME, Home, validate_service_name};

use crate::cli::PsArgs;
use crate::context::Context;
use crate::names;

/// How long the daemon gets to answer `Ping`.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// One service as `ps` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PsRow {
    pub name: String,
    pub label: String,
    pub manager: String,
    /// running, stopped, failed, stale, not installed, or "running
    /// (unmanaged)" when a live port file exists that no manager started.
    pub state: String,
    pub pid: Option<u32>,
    pub port: Option<u16>,
    /// live, stale, missing or invalid.
    pub port_file: String,
    pub started_at: Option<String>,
    pub uptime_secs: Option<i64>,
    pub health: String,
    pub detail: Option<String>,
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
pub fn ps_rows(ctx: &Context) -> anyhow::Result<Vec<PsRow>> {
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
        rows.push(PsRow {
            name: service.name().to_owned(),
            label: service.label(),
            manager: ctx.manager_kind.to_string(),
            state: state.to_owned(),
            pid: status
                .pid
                .or_else(|| probe.is_live().then(|| probe.file()?.pid).flatten()),
            port: probe.file().map(|f| f.port).filter(|_| probe.is_live()),
            port_file: port_file.to_owned(),
            uptime_secs: started_at.as_deref().filter(|_| running).and_then(uptime),
            started_at: started_at.filter(|_| running),
            health: health(&ctx.home, &service, &probe),
            detail,
        });
    }
    Ok(rows)
}

fn uptime(started_at: &str) -> Option<i64> {
    let started = chrono::DateTime::parse_from_rfc3339(started_at).ok()?;
    Some(
        (chrono::Utc::now() - started.with_timezone(&chrono::Utc))
            .num_seconds()
            .max(0),
    )
}

fn health(home: &Home, service: &Service, probe: &PortProbe) -> String {
    if service.is_daemon() {
        if !probe.is_live() && !home.socket_path().exists() {
            return "-".into();
        }
        return match ping_daemon(home) {
            Ok(pong) => format!("ok ({} {})", pong.server_version, pong.protocol),
            Err(err) => format!("no answer: {err}"),
        };
    }
    match probe {
        PortProbe::Live(file) => match health::check(
            file.port,
            crabtalk_home::token::read_token(home).ok().as_deref(),
            health::HEALTH_TIMEOUT,
        ) {
            Ok(report) if report.service == service.name() && report.problems.is_empty() => {
                format!("ok ({} {})", report.service, report.version)
            }
            Ok(report) if report.service == service.name() => format!(
                "degraded ({} {}): {}",
                report.service,
                report.version,
                report.problems.join("; ")
            ),
            Ok(report) => format!("wrong service: {} answers", report.service),
            Err(err) => format!("no answer: {err}"),
        },
        PortProbe::Stale { .. } => "down".into(),
        _ => "-".into(),
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

pub(super) fn run(ctx: &Context, args: &PsArgs) -> anyhow::Result<()> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(&ps_rows(ctx)?)?);
        return Ok(());
    }
    print_table(ctx)
}

/// The table `crabup ps` prints (also the end of `crabup up`).
pub(super) fn print_table(ctx: &Context) -> anyhow::Result<()> {
    let rows = ps_rows(ctx)?;
    println!(
        "{:<10} {:<20} {:<8} {:<6} {:<8} {:<30} DETAIL",
        "NAME", "STATE", "PID", "PORT", "UPTIME", "HEALTH"
    );
    for row in rows {
        println!(
            "{:<10} {:<20} {:<8} {:<6} {:<8} {:<30} {}",
            row.name,
            row.state,
            dash(row.pid),
            dash(row.port),
            dash(row.uptime_secs.map(human_duration)),
            row.health,
            row.detail.unwrap_or_default()
        );
    }
    println!("(service manager: {})", ctx.manager_kind);
    Ok(())
}
