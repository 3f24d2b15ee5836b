//! What each CLI command does: through [`Admin`] (the same code the MCP
//! tools use) and, for `run <id>`, through the running service when there
//! is one.

use std::sync::Arc;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use crabtalk_home::{Home, PortFile};
use crabtalk_kit::FileLock;
use crabtalk_kit::config::ConfigError;
use crabtalk_kit::{Component, Shutdown};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::admin::{Admin, AdminError, Caller, EntryFields, EntryView, SlotView, slot_views};
use crate::cli::{AddArgs, Command};
use crate::config::LoadError;
use crate::engine::SystemClock;
use crate::runlog::RunRecord;
use crate::schedule::{CronExpr, Schedule, Timing, Zone, parse_at};
use crate::service::{lock_path, machine_zone};

/// Runs one command other than the service.
pub async fn run(component: &Component, command: Command) -> anyhow::Result<()> {
    let home = component.home();
    let admin = Admin::new(home, machine_zone());
    let now = Utc::now();
    // The command line is the machine's user: every entry is theirs.
    let owner = Caller::default();
    match command {
        Command::Run { id: None, .. } => unreachable!("the service is started by main"),
        Command::Run { id: Some(id), json } => {
            let record = run_now(component, &id).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&record)?);
            } else {
                print_runs(&[record]);
            }
        }
        Command::Add(args) => {
            let json = args.json;
            let view = admin
                .add(&fields_of(args), &owner, now)
                .map_err(admin_error)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&view)?);
            } else {
                println!("added {} ({}, tz {})", view.id, view.schedule, view.tz);
                print_slots(&view.next);
            }
        }
        Command::List { json } => {
            let views = admin.list(&owner, now).map_err(admin_error)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "entries": views }))?
                );
            } else {
                print_list(&views);
            }
        }
        Command::Rm { id } => {
            admin.remove(&id, &owner).map_err(admin_error)?;
            println!("removed {id}");
        }
        Command::Enable { id } => {
            admin
                .set_enabled(&id, true, &owner, now)
                .map_err(admin_error)?;
            println!("enabled {id}");
        }
        Command::Disable { id } => {
            admin
                .set_enabled(&id, false, &owner, now)
                .map_err(admin_error)?;
            println!("disabled {id}");
        }
        Command::Runs { id, n, json } => {
            let runs = admin.runs(id.as_deref(), n, &owner).map_err(admin_error)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "runs": runs }))?
                );
            } else {
                print_runs(&runs);
            }
        }
        Command::Next {
            target,
            tz,
            from,
            count,
            json,
        } => {
            let from = match from {
                Some(text) => DateTime::parse_from_rfc3339(&text)
                    .map(|at| at.with_timezone(&Utc))
                    .with_context(|| format!("--from {text:?} is not an RFC 3339 time (e.g. 2026-03-08T00:00:00-05:00)"))?,
                None => now,
            };
            let schedule = target_schedule(&admin, &target, tz.as_deref())?;
            let slots = slot_views(&schedule, from, count);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &json!({ "tz": schedule.zone().name(), "slots": slots })
                    )?
                );
            } else {
                println!("in {} and UTC:", schedule.zone());
                print_slots(&slots);
            }
        }
    }
    Ok(())
}

/// A config error (exit 78) for a file that does not parse; else as is.
fn admin_error(err: AdminError) -> anyhow::Error {
    match err {
        AdminError::Load(LoadError::Invalid {
            path,
            line,
            column,
            message,
        }) => ConfigError::At {
            path,
            line,
            column,
            message,
        }
        .into(),
        other => other.into(),
    }
}

fn fields_of(args: Box<AddArgs>) -> EntryFields {
    let args = *args;
    EntryFields {
        id: args.id,
        cron: args.cron,
        at: args.at,
        every: args.every,
        in_: args.in_,
        tz: args.tz,
        skill: args.skill,
        args: args.args,
        message: args.message,
        agent: args.agent,
        sender: args.sender,
        quiet_start: args.quiet_start,
        quiet_end: args.quiet_end,
        missed: args.missed,
        missed_within: args.missed_within,
        enabled: args.disabled.then_some(false),
        deliver: args.deliver,
        timeout: args.timeout,
    }
}

/// The schedule `next` shows: an entry's, or one written on the line.
fn target_schedule(admin: &Admin, target: &str, tz: Option<&str>) -> anyhow::Result<Schedule> {
    let zone = match tz {
        Some(name) => Zone::named(name)?,
        None => admin.machine_zone(),
    };
    if crate::config::valid_id(target)
        && let Ok(entries) = admin.crons().load(admin.machine_zone())
        && let Some(entry) = entries.into_iter().find(|e| e.id == target)
    {
        let zone = if tz.is_some() {
            zone
        } else {
            entry.schedule.zone()
        };
        return Ok(Schedule::new(entry.schedule.timing().clone(), zone));
    }
    let timing = if let Some(span) = target.strip_prefix("every ") {
        Timing::Every(span.parse()?)
    } else if let Some(at) = target.strip_prefix("at ") {
        Timing::At(parse_at(at, zone)?)
    } else {
        Timing::Cron(
            CronExpr::parse(target)
                .map_err(|err| anyhow::anyhow!("{err} (and no entry has the id {target:?})"))?,
        )
    };
    Ok(Schedule::new(timing, zone))
}

/// Runs entry `id` now: through the service if it runs, else here (this
/// process holds the service lock for that one run).
async fn run_now(component: &Component, id: &str) -> anyhow::Result<RunRecord> {
    let home = component.home();
    let Some(_lock) = FileLock::try_exclusive(&lock_path(home))? else {
        return through_service(home, id).await;
    };
    let (engine, handle) = crate::service::engine(
        home,
        Arc::new(SystemClock),
        machine_zone(),
        component.daemon(),
    );
    let stop = Shutdown::new();
    let task = tokio::spawn(engine.run(stop.requested()));
    let record = handle.run_now_and_wait(id).await;
    stop.trigger();
    let _ = task.await;
    Ok(record?)
}

async fn through_service(home: &Home, id: &str) -> anyhow::Result<RunRecord> {
    let port_file = home.port_file("cron")?;
    let port = PortFile::read(&port_file)
        .with_context(|| {
            format!(
                "the cron service holds its lock but {} cannot be read",
                port_file.display()
            )
        })?
        .port;
    let client =
        ().serve(crabtalk_kit::loopback::owner_transport(home, port)?)
            .await
            .context("cannot reach the running cron service")?;
    let params = CallToolRequestParams::new("cron_run").with_arguments(
        json!({ "id": id, "wait": true })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let result = client.call_tool(params).await;
    let _ = client.cancel().await;
    let result = result.context("cron_run failed")?;
    if result.is_error == Some(true) {
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        bail!("{}", text.join("\n"));
    }
    let record = result
        .structured_content
        .and_then(|value| value.get("run").cloned())
        .context("the service answered cron_run without a run record")?;
    Ok(serde_json::from_value::<RunRecord>(record)?)
}

fn print_slots(slots: &[SlotView]) {
    for slot in slots {
        println!("  {}  ({})", slot.local, slot.utc);
        if let Some(dst) = &slot.dst {
            println!("      {dst}");
        }
    }
    if slots.is_empty() {
        println!("  (no upcoming slots)");
    }
}

fn print_list(views: &[EntryView]) {
    if views.is_empty() {
        println!("no entries; add one with `crabtalk-cron add`");
    }
    for view in views {
        let state = if view.enabled {
            view.health.clone()
        } else {
            format!("disabled, {}", view.health)
        };
        println!(
            "{}  [{state}]  {} (tz {})  → {} as {}/{}",
            view.id, view.schedule, view.tz, view.runs, view.agent, view.sender
        );
        if let Some(error) = &view.last_error {
            println!("    last error: {error}");
        }
        if let Some(next) = view.next.first() {
            println!("    next: {} ({})", next.local, next.utc);
        }
    }
}

fn print_runs(runs: &[RunRecord]) {
    if runs.is_empty() {
        println!("no runs recorded");
    }
    for run in runs {
        let mut line = format!(
            "{}  {}  {}",
            run.scheduled.to_rfc3339(),
            run.entry,
            run.status.as_str()
        );
        if run.by != "schedule" {
            line.push_str(&format!(" ({})", run.by));
        }
        if let Some(error) = &run.error {
            line.push_str(&format!(": {error}"));
        }
        if let Some(reply) = &run.reply {
            line.push_str(&format!(" — {}", reply.replace('\n', " ")));
        }
        if let Some(delivery) = &run.delivery {
            line.push_str(&format!(" [{} {}", delivery.status, delivery.to));
            if !delivery.message_ids.is_empty() {
                line.push_str(&format!(" ids {:?}", delivery.message_ids));
            }
            if let Some(error) = &delivery.error {
                line.push_str(&format!(": {error}"));
            }
            line.push(']');
        }
        println!("{line}");
    }
}
