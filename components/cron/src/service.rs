//! `crabtalk-cron run`: the service — one per home (a lock in `cron/`),
//! the engine, and the MCP tools on the port announced in
//! `run/cron.port`.

use std::sync::Arc;

use anyhow::Context;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use crabtalk_home::Home;
use crabtalk_kit::Component;
use crabtalk_kit::daemon::DaemonLink;
use crabtalk_kit::mcp::{HealthProblems, mcp_router};
use serde_json::Value;

use crate::admin::Admin;
use crate::config::{CronsFile, WatchMode};
use crate::engine::{Clock, Engine, EngineHandle, Files, SystemClock};
use crate::fire::daemon::DaemonFirer;
use crate::lock::FileLock;
use crate::runlog::RunLog;
use crate::schedule::Zone;
use crate::state::StateFile;
use crate::tools::CronTools;

/// The largest MCP request body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Another service holds the home.
#[derive(Debug, thiserror::Error)]
#[error("another crabtalk-cron{} already runs for {home}; stop it first with `crabup cron stop`", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
pub struct AlreadyRunning {
    pub home: String,
    pub pid: Option<u32>,
}

/// The lock that makes the service one per home.
pub fn lock_path(home: &Home) -> std::path::PathBuf {
    crate::data_dir(home).join("service.lock")
}

/// Takes the service lock, or says who holds it.
pub fn take_lock(home: &Home) -> anyhow::Result<FileLock> {
    let path = lock_path(home);
    match FileLock::try_exclusive(&path)
        .with_context(|| format!("cannot open {}", path.display()))?
    {
        Some(lock) => Ok(lock),
        None => Err(AlreadyRunning {
            home: home.root().display().to_string(),
            pid: FileLock::holder(&path),
        }
        .into()),
    }
}

/// This machine's zone, or UTC with a warning.
pub fn machine_zone() -> Zone {
    Zone::of_this_machine().unwrap_or_else(|err| {
        tracing::warn!("{err}; entries without tz use UTC");
        Zone::UTC
    })
}

/// The engine of `home`, firing through `daemon`.
pub fn engine(
    home: &Home,
    clock: Arc<dyn Clock>,
    zone: Zone,
    daemon: DaemonLink,
) -> (Engine, EngineHandle) {
    let files = Files {
        crons: CronsFile::of(home),
        runs: RunLog::of(home),
        state: StateFile::of(home),
    };
    let firer = Arc::new(DaemonFirer::new(home.clone(), daemon, clock.clone()));
    Engine::new(clock, firer, files, zone, WatchMode::from_env())
}

/// Runs the service until the component is told to stop.
pub async fn run(component: &Component) -> anyhow::Result<()> {
    let home = component.home();
    let _lock = take_lock(home)?;
    let zone = machine_zone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (engine, handle) = engine(home, clock.clone(), zone, component.daemon());
    let admin = Arc::new(Admin::new(home, zone));
    let problems: HealthProblems = {
        let admin = admin.clone();
        Arc::new(move || admin.problems())
    };
    let tools = CronTools::new(admin, handle, clock);
    let router =
        mcp_router(move || tools.clone()).layer(axum::middleware::from_fn(string_arguments));
    let engine = tokio::spawn(engine.run(component.shutdown().requested()));
    let served = component.serve_mcp_reporting(router, problems).await;
    // Whatever ended serving, the engine stops too (after its drain).
    component.shutdown().trigger();
    let _ = engine.await;
    served.context("serving MCP")
}

/// Accepts `tools/call` requests whose `arguments` is a JSON string
/// holding the object (some models and clients send that) by replacing it
/// with the object before the MCP layer reads the request.
async fn string_arguments(request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large",
            )
                .into_response();
        }
    };
    let body = match fix_string_arguments(&bytes) {
        Some(fixed) => {
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            Body::from(fixed)
        }
        None => Body::from(bytes),
    };
    next.run(Request::from_parts(parts, body)).await
}

/// The request with string `arguments` parsed, if it had any.
pub fn fix_string_arguments(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let arguments = message.get_mut("params")?.get_mut("arguments")?;
    let text = arguments.as_str()?;
    let parsed: Value = serde_json::from_str(text).ok().filter(Value::is_object)?;
    *arguments = parsed;
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_arguments_become_objects_and_everything_else_is_left() {
        let fixed = fix_string_arguments(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"cron_list","arguments":"{\"a\":1}"}}"#).unwrap();
        let value: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(value["params"]["arguments"]["a"], 1);
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":{"a":1}}}"#)
                .is_none()
        );
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":"not json"}}"#)
                .is_none()
        );
        assert!(fix_string_arguments(br#"{"method":"tools/list"}"#).is_none());
        assert!(fix_string_arguments(b"garbage").is_none());
    }
}
