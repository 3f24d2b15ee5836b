//! `crabup <name> start|stop|restart|status|logs|unit`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use crabtalk_command::liveness::PortProbe;
use crabtalk_command::logs::{Follower, last_lines};
use crabtalk_command::manager::{
    READY_TIMEOUT, Readiness, Restarted, Started, Stopped, wait_until_ready,
};
use crabtalk_command::{ManagerKind, Service, ServiceManager, ServiceState, UnitSpec};

use crate::cli::ServiceAction;
use crate::config_check::{self, ConfigVerdict};
use crate::context::Context;
use crate::setup::{Prompt, ensure_ready};
use crate::{NOT_RUNNING_EXIT, names};

pub(super) fn run(ctx: &Context, name: &str, action: &ServiceAction) -> anyhow::Result<ExitCode> {
    let service = names::service_for(name)?;
    match action {
        ServiceAction::Start => start(ctx, &service),
        ServiceAction::Stop => stop(ctx, &service),
        ServiceAction::Restart => restart(ctx, &service),
        ServiceAction::Status => return status(ctx, &service),
        ServiceAction::Logs { lines, follow } => logs(ctx, &service, *lines, *follow),
        ServiceAction::Unit { manager } => unit(ctx, &service, manager.map(Into::into)),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// The unit of an installed service, or an error saying how to install it.
fn installed_spec(ctx: &Context, service: &Service) -> anyhow::Result<UnitSpec> {
    if ctx.binary(service).is_none() {
        let pull = names::lookup(service.name()).map_or_else(
            || service.binary().to_owned(),
            |known| known.short.to_owned(),
        );
        bail!(
            "{} is not installed (no {} in {} or on PATH); install it with `crabup pull {pull}`",
            service.name(),
            service.binary(),
            ctx.cargo.bin_dir().display()
        );
    }
    Ok(ctx.spec(service))
}

fn start(ctx: &Context, service: &Service) -> anyhow::Result<()> {
    let spec = installed_spec(ctx, service)?;
    let manager = ctx.manager()?;
    let status = manager.status(&spec)?;
    if status.is_running() {
        // Nothing is restarted, but a file the service would now refuse is
        // said at once, not at its next restart.
        config_accepted(ctx, service, &spec, Action::Start)?;
        println!(
            "{} is already running{}",
            service.name(),
            pid_note(status.pid)
        );
        return Ok(());
    }
    if status.state == ServiceState::Restarting {
        println!(
            "{} failed and its supervisor starts it again{}; `crabup {} logs` says why it failed",
            service.name(),
            status
                .detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default(),
            service.name()
        );
        return Ok(());
    }
    ready_to_start(ctx, service, &spec, Action::Start)?;
    match manager.start(&spec)? {
        Started::AlreadyRunning { pid } => {
            println!("{} is already running{}", service.name(), pid_note(pid));
        }
        Started::Started { .. } => report_ready(ctx, &*manager, &spec, "started")?,
    }
    Ok(())
}

/// Before `service` is started or restarted: its configuration, read by
/// its own `check`, and what it cannot run without (first-run setup).
/// When the service is not running and its file is refused because it is
/// missing — or, on a terminal, for any reason first-run setup may fix
/// (telegram's token) — the setup comes first, then the check again; a
/// running service is never stopped for a file its check refuses.
fn ready_to_start(
    ctx: &Context,
    service: &Service,
    spec: &UnitSpec,
    action: Action,
) -> anyhow::Result<()> {
    let config = names::lookup(service.name())
        .and_then(|known| known.config)
        .and_then(|file| ctx.home.component_config(file).ok());
    let file_missing = config.as_ref().is_some_and(|path| !path.exists());
    let setup_may_fix = file_missing
        || (config.is_some()
            && std::io::stdin().is_terminal()
            && !ctx.manager()?.status(spec)?.is_running());
    match config_verdict(ctx, service, spec) {
        ConfigVerdict::Refused(_) if setup_may_fix => {
            first_run_setup(ctx, service)?;
            config_accepted(ctx, service, spec, action)
        }
        verdict => {
            refuse_on(ctx, service, spec, action, verdict)?;
            first_run_setup(ctx, service)
        }
    }
}

/// Whatever `service` cannot run without, asked for on the terminal when
/// there is one; done before anything is installed or (re)started, so a
/// service that lacks its config is never left restart-looping.
fn first_run_setup(ctx: &Context, service: &Service) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() {
        return ensure_ready(&ctx.home, ctx.manager_kind, service, None);
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stderr();
    ensure_ready(
        &ctx.home,
        ctx.manager_kind,
        service,
        Some(Prompt {
            input: &mut input,
            output: &mut output,
            input_is_terminal: true,
        }),
    )
}

/// What is being done to a service, for the words of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Start,
    Restart,
}

/// What the service's own `check` says of its configuration.
fn config_verdict(ctx: &Context, service: &Service, spec: &UnitSpec) -> ConfigVerdict {
    config_check::check(service, &spec.program, &ctx.home)
}

/// Asks the service's own `check` whether it would take its
/// configuration, and refuses to go on when it would not, so a running
/// service is never stopped for one that refuses to start. The problems
/// come first in the error, then what was (not) done.
fn config_accepted(
    ctx: &Context,
    service: &Service,
    spec: &UnitSpec,
    action: Action,
) -> anyhow::Result<()> {
    let verdict = config_verdict(ctx, service, spec);
    refuse_on(ctx, service, spec, action, verdict)
}

fn refuse_on(
    ctx: &Context,
    service: &Service,
    spec: &UnitSpec,
    action: Action,
    verdict: ConfigVerdict,
) -> anyhow::Result<()> {
    let problems = match verdict {
        ConfigVerdict::Fine(_) => return Ok(()),
        ConfigVerdict::Unavailable(why) => {
            eprintln!("note: the configuration was not checked first: {why}");
            return Ok(());
        }
        ConfigVerdict::Refused(problems) => problems,
    };
    let name = service.name();
    let binary = service.binary();
    let who = if service.is_daemon() {
        "The daemon".to_owned()
    } else {
        name.to_owned()
    };
    let running = ctx.manager()?.status(spec)?;
    let state = if running.is_running() {
        format!("it keeps running as it is{}", pid_note(running.pid))
    } else {
        "it is not running".to_owned()
    };
    let (verb, again) = match action {
        Action::Start if running.is_running() => ("restarted", "start"),
        Action::Start => ("started", "start"),
        Action::Restart => ("restarted", "restart"),
    };
    let check = if service.is_daemon() {
        "crabtalkd check".to_owned()
    } else {
        format!("{binary} check")
    };
    let (config, files) = if service.is_daemon() {
        ("this configuration", "the files above")
    } else {
        ("its configuration", "the file above")
    };
    if action == Action::Start && running.is_running() {
        bail!(
            "{problems}\n{who} is running{}, but {binary} would refuse {config} now: its next restart would not start. Nothing was changed; {state}. Fix {files} (`{check}` checks again).",
            pid_note(running.pid)
        )
    }
    bail!(
        "{problems}\n{who} was not {verb}: {binary} would refuse {config}; {state}. Fix {files} (`{check}` checks again), then run `crabup {name} {again}` again."
    )
}

/// Waits for the service to announce itself and says how it went.
fn report_ready(
    ctx: &Context,
    manager: &dyn ServiceManager,
    spec: &UnitSpec,
    verb: &str,
) -> anyhow::Result<()> {
    let name = spec.service.name();
    match wait_until_ready(manager, spec, &ctx.home, ready_timeout())? {
        Readiness::Ready { port } => {
            let pid = manager.status(spec)?.pid;
            let port = port.map(|p| format!(" on port {p}")).unwrap_or_default();
            println!("{name} {verb}{}{port} ({})", pid_note(pid), manager.kind());
            Ok(())
        }
        Readiness::TimedOut => {
            println!(
                "{name} {verb}{} ({}), but it has not announced a port yet; see `crabup {name} logs`",
                pid_note(manager.status(spec)?.pid),
                manager.kind()
            );
            Ok(())
        }
        Readiness::NotRunning(status) => {
            let tail = last_lines(&spec.log_file, 10)
                .unwrap_or_default()
                .join("\n");
            bail!(
                "{name} stopped right after it started ({}{}); the end of {}:\n{tail}",
                status.state,
                status.detail.map(|d| format!(": {d}")).unwrap_or_default(),
                spec.log_file.display()
            )
        }
    }
}

/// How long `start` waits for a service to announce itself:
/// `CRABUP_READY_TIMEOUT_SECS`, else [`READY_TIMEOUT`].
fn ready_timeout() -> std::time::Duration {
    std::env::var("CRABUP_READY_TIMEOUT_SECS")
        .ok()
        .and_then(|secs| secs.parse().ok())
        .map_or(READY_TIMEOUT, std::time::Duration::from_secs)
}

fn pid_note(pid: Option<u32>) -> String {
    pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
}

fn stop(ctx: &Context, service: &Service) -> anyhow::Result<()> {
    let spec = ctx.spec(service);
    match ctx.manager()?.stop(&spec)? {
        Stopped::Stopped { pid } => println!("{} stopped{}", service.name(), pid_note(pid)),
        Stopped::NotRunning => println!("{} is not running", service.name()),
    }
    Ok(())
}

fn restart(ctx: &Context, service: &Service) -> anyhow::Result<()> {
    let spec = installed_spec(ctx, service)?;
    let manager = ctx.manager()?;
    // A running service keeps running when its config is broken or went
    // missing.
    ready_to_start(ctx, service, &spec, Action::Restart)?;
    let Restarted { old_pid, .. } = manager.restart(&spec)?;
    let verb = match old_pid {
        Some(old) => format!("restarted (was pid {old})"),
        None => "was not running; started".to_owned(),
    };
    report_ready(ctx, &*manager, &spec, &verb)
}

fn status(ctx: &Context, service: &Service) -> anyhow::Result<ExitCode> {
    let spec = ctx.spec(service);
    let manager = ctx.manager()?;
    let status = manager.status(&spec)?;
    let probe = PortProbe::check(&service.port_file(&ctx.home));
    println!("{} ({})", service.name(), service.label());
    println!("  state:    {}{}", status.state, pid_note(status.pid));
    if let Some(detail) = &status.detail {
        println!("  detail:   {detail}");
    }
    match &probe {
        PortProbe::Live(file) => println!("  port:     {} (live)", file.port),
        PortProbe::Stale { file, reason } => {
            println!("  port:     {} (stale: {reason})", file.port)
        }
        PortProbe::Invalid(reason) => println!("  port:     invalid port file: {reason}"),
        PortProbe::Missing => println!("  port:     -"),
    }
    println!("  manager:  {}", manager.kind());
    if let Some(unit) = manager.unit_path(&spec) {
        let exists = if unit.exists() { "" } else { " (not written)" };
        println!("  unit:     {}{exists}", unit.display());
    }
    println!("  binary:   {}", spec.program.display());
    println!("  log:      {}", spec.log_file.display());
    Ok(if status.is_running() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_RUNNING_EXIT)
    })
}

fn logs(ctx: &Context, service: &Service, lines: usize, follow: bool) -> anyhow::Result<()> {
    let path = service.log_file(&ctx.home);
    let mut out = std::io::stdout().lock();
    let mut follower = if follow {
        // Opened before the tail is read, so no line falls between the two.
        Some(Follower::from_end(&path)?)
    } else {
        None
    };
    match last_lines(&path, lines) {
        Ok(tail) => {
            for line in tail {
                writeln!(out, "{line}")?;
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && follow => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "{} has no log yet ({} does not exist)",
                service.name(),
                path.display()
            )
        }
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    }
    out.flush()?;
    if let Some(follower) = &mut follower {
        match follower.follow(&mut out, &|| false) {
            // The reader went away (`crabup daemon logs -f | head`).
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other?,
        }
    }
    Ok(())
}

fn unit(ctx: &Context, service: &Service, kind: Option<ManagerKind>) -> anyhow::Result<()> {
    let kind = kind.unwrap_or(ctx.manager_kind);
    let spec = ctx.spec(service);
    match kind.unit_format() {
        Some(format) => print!("{}", spec.render(format)?),
        None => {
            println!(
                "# The process backend has no unit file. `crabup {} start` runs",
                service.name()
            );
            println!("{}", spec.command_line().join(" "));
            println!("# detached (its own session), in {},", spec.home.display());
            println!("# with CRABTALK_HOME={}", spec.home.display());
            println!("# and PATH={},", spec.path_env);
            println!("# variables from {},", spec.env_file.display());
            println!("# output appended to {},", spec.log_file.display());
            println!(
                "# pid recorded in {}.",
                service.pid_file(&ctx.home).display()
            );
        }
    }
    Ok(())
}
