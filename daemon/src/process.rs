//! The daemon process: take the home's lock, load the runtime, listen, and
//! shut down cleanly.
//!
//! Startup does no network I/O beyond a quick look for a local Ollama:
//! model lists are fetched in the background, so the socket accepts
//! connections within milliseconds. Shutdown (SIGINT, SIGTERM) refuses new
//! turns, cancels running ones so they persist what they have, stops the
//! listeners, and removes the socket and port file; the lock goes with the
//! process.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use crabtalk_home::exit::{EX_CONFIG, FAILURE};
use crabtalk_home::{Home, PortFile};
use crabtalk_proto::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::lock::InstanceLock;
use crate::provider::detect_environment;
use crate::runtime::Runtime;
use crate::runtime::threads::Threads;
use crate::server::{DaemonServer, VERSION};

/// How long running turns get to wind down at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs the daemon for `home` until `shutdown` fires.
pub async fn run(home: Home, shutdown: CancellationToken) -> anyhow::Result<()> {
    prepare_home(&home)?;
    // One process-wide TLS provider (ring) for every HTTPS client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _lock = InstanceLock::acquire(&home.lock_file())?;
    crate::leftovers::remove_interrupted_writes(&home);
    let environment = detect_environment().await;
    let threads = Threads::for_this_machine().context("starting the serving threads")?;
    tracing::debug!("serving on {} thread(s) of their own", threads.len());
    let runtime = Runtime::start(home.clone(), environment, threads.clone())?;
    let server = Arc::new(DaemonServer::new(runtime.clone()));
    let config = runtime.snapshot().config.clone();
    let serving = CancellationToken::new();
    let mut listeners = Vec::new();

    let mut port_file = None;
    if config.transport.tcp != "off" {
        let addr: SocketAddr = config.transport.tcp.parse().context("[transport] tcp")?;
        let token = crate::token::establish(&home, config.transport.token.as_deref())?;
        let tcp = TcpListener::bind(addr, &token).await?;
        let bound = tcp.local_addr()?;
        let file = PortFile::for_this_process(bound.port());
        file.write(&home.daemon_port_file())
            .with_context(|| format!("writing {}", home.daemon_port_file().display()))?;
        port_file = Some(file);
        tracing::info!("listening on {bound}");
        listeners.push(tokio::spawn(tcp.serve_placed(
            server.clone(),
            serving.clone(),
            threads.clone(),
        )));
    }
    // The socket comes last: once it answers, the port file is there too.
    #[cfg(unix)]
    {
        let uds = crabtalk_proto::UdsListener::bind(home.socket_path()).await?;
        tracing::info!("listening on {}", uds.path().display());
        listeners.push(tokio::spawn(uds.serve_placed(
            server.clone(),
            serving.clone(),
            threads.clone(),
        )));
    }
    tracing::info!("crabtalkd {VERSION} ready (home {})", home.root().display());

    let discovering = CancellationToken::new();
    let discovery = tokio::spawn(
        crate::mcp::discovery::Discovery::new(home.run_dir())
            .watch(runtime.mcp.clone(), discovering.clone()),
    );
    let sweeper = tokio::spawn(runtime.clone().evict_idle_conversations());
    // Once settled and quiet, the pages only start-up used go back (RFC 0042).
    tokio::spawn(crate::runtime::release::startup_pages_when_quiet());
    shutdown.cancelled().await;
    tracing::info!("shutting down");
    // Discovery first, so that nothing connects while connections close.
    discovering.cancel();
    let _ = discovery.await;
    runtime.shutdown(SHUTDOWN_GRACE).await;
    // Cancelled calls end their commands as they drop; whatever a call that
    // did not stop in time started ends here.
    tokio::task::spawn_blocking(crate::tools::bash::end_all)
        .await
        .ok();
    serving.cancel();
    for listener in listeners {
        if tokio::time::timeout(SHUTDOWN_GRACE, listener)
            .await
            .is_err()
        {
            tracing::warn!("a listener did not close within {SHUTDOWN_GRACE:?}");
        }
    }
    sweeper.abort();
    if let Some(ours) = port_file {
        remove_port_file_if_ours(&home, &ours);
    }
    tracing::info!("stopped");
    Ok(())
}

/// Creates the home's folders, private to this user whatever the umask
/// (see [`crate::private`]), and warns about existing ones others can get
/// at.
pub(crate) fn prepare_home(home: &Home) -> anyhow::Result<()> {
    crate::private::restrict_umask();
    for dir in [
        home.root().to_owned(),
        home.agents_dir(),
        home.sessions_dir(),
        home.logs_dir(),
        home.run_dir(),
    ] {
        crate::private::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::private::warn_if_shared(home);
    Ok(())
}

fn remove_port_file_if_ours(home: &Home, ours: &PortFile) {
    let path = home.daemon_port_file();
    if PortFile::read(&path).is_ok_and(|found| found.pid == ours.pid) {
        let _ = std::fs::remove_file(&path);
    }
}

/// Files the daemon refused (a reload or a check found problems); the
/// message lists them.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub String);

/// `crabtalkd reload`: asks the running daemon of `home` to reload, and
/// prints what it says: `reloaded` and its notes, or every problem of the
/// files it refused (an error with exit status 78).
pub async fn reload(home: &Home) -> anyhow::Result<()> {
    let client = crabtalk_kit::daemon::connect(home).await?;
    match client.reload(crabtalk_proto::msg::ReloadMsg {}).await {
        Ok(pong) => {
            println!("reloaded");
            for note in pong.notes {
                println!("note: {note}");
            }
            Ok(())
        }
        Err(crabtalk_proto::ClientError::Server(error))
            if error.code == crabtalk_proto::msg::ErrorMsg::BAD_REQUEST =>
        {
            Err(Refused(error.message).into())
        }
        Err(err) => Err(err.into()),
    }
}

/// `crabtalkd check`: the checks of a start or reload, on the files, with
/// no daemon involved.
pub fn check(home: &Home) -> anyhow::Result<()> {
    let check = crate::config::check::HomeCheck::run(home);
    let report = check.report(home);
    match &check.config {
        Ok(config) if check.is_clean() => {
            // A reader that stops early (`| head`) is not an error.
            let _ = writeln!(std::io::stdout(), "{report}\n{}", presets_report(config));
            Ok(())
        }
        _ => Err(Refused(report).into()),
    }
}

/// The presets and whether each has its key, one per line, for `check`
/// (after its one-line summary).
fn presets_report(config: &crate::config::DaemonConfig) -> String {
    let mut presets = crate::provider::preset_report(config);
    presets.sort_by(|a, b| a.name.cmp(&b.name));
    let width = presets.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut out = String::from(
        "presets (a model named <preset>/<model> goes to the preset's provider; keys are read \
         from the environment and the home's env file):",
    );
    for preset in presets {
        let (mark, state) = match &preset.key {
            Ok(source) => ("ready", source.clone()),
            Err(why) => ("no key", why.to_string()),
        };
        let configured = if preset.configured {
            " (set in config.toml)"
        } else {
            ""
        };
        out.push_str(&format!(
            "\n  {:<width$}  {mark:<6}  {}{configured}: {state}",
            preset.name, preset.base_url
        ));
    }
    out
}

/// The exit status for a failed run: 78 ([`EX_CONFIG`]) when the
/// configuration is at fault — service units do not restart on it, since
/// restarting cannot help — and 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    let config_error = err.chain().any(|cause| {
        cause.is::<crate::config::Refusal>()
            || cause.is::<crate::runtime::StartError>()
            || cause.is::<Refused>()
            || matches!(
                cause.downcast_ref::<crabtalk_proto::BindError>(),
                Some(crabtalk_proto::BindError::TokenRequired { .. })
            )
    });
    if config_error { EX_CONFIG } else { FAILURE }
}
