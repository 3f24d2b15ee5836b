//! `crabtalk-telegram run`: the gateway — one per home (a lock), its MCP
//! tools on the port in `run/telegram.port`, and, once Telegram confirms
//! the token, the poller and the relay.
//!
//! A configuration that cannot work (no token, a bad value) stops the
//! process with exit 78 (systemd units do not restart on it). A token
//! Telegram refuses, or a Bot API that does not answer, does not: the
//! gateway keeps running, says what is wrong in its log and in `GET
//! /health` (`crabup ps` shows it degraded), and tries again — reading
//! the file again each time, so a corrected token is picked up without a
//! restart.
//!
//! At SIGTERM the poll stops (the offset is persisted after every update
//! anyway), streaming replies are sealed with what they have, and the
//! chats' lanes get [`DRAIN_GRACE`] to deliver them; what is left is
//! abandoned.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use crabtalk_home::Home;
use crabtalk_kit::daemon::DaemonLink;
use crabtalk_kit::{Component, Problems, Shutdown};
use tokio::sync::watch;

use crate::access::Access;
use crate::api::{Api, Throttle};
use crate::config::TelegramConfig;
use crate::gateway::Gateway;
use crate::lock::GatewayLock;
use crate::outbox::Outbox;
use crate::state::chats::ChatBook;
use crate::state::ledger::Ledger;
use crate::state::offset::OffsetStore;
use crate::token::{BotIdentity, TokenError};

/// How long replies get to be delivered at shutdown.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_millis(1500);

/// Runs the gateway until the component is told to stop.
pub async fn run(component: &Component) -> anyhow::Result<()> {
    let home = component.home().clone();
    let _lock = GatewayLock::take(&home)?;
    let config = TelegramConfig::load_checked(&home)?;
    // Token, poll, delivery and reload problems, listed in `GET /health`.
    let problems = component.problems().clone();
    let (publish, gateway) = watch::channel(None);
    let router = crate::tools::server(gateway, problems.clone()).router();
    let shutdown = component.shutdown().clone();
    let daemon = component.daemon();
    let gateway = {
        let shutdown = shutdown.clone();
        async move {
            let result = start(home, config, daemon, shutdown.clone(), problems, publish).await;
            shutdown.trigger();
            result
        }
    };
    let serve = async {
        let served = component.serve_mcp(router).await;
        shutdown.trigger();
        served
    };
    let (served, ran) = tokio::join!(serve, gateway);
    ran?;
    served.context("serving MCP")
}

/// Who the bot is: `getMe` until it answers, or `None` at shutdown.
async fn identify(
    home: &Home,
    config: &mut TelegramConfig,
    api: &mut Api,
    shutdown: &Shutdown,
    problems: &Problems,
) -> Option<BotIdentity> {
    let mut unreachable_delay = Duration::from_secs(1);
    let mut said: Option<String> = None;
    loop {
        let error = match api.get_me().await {
            Ok(me) => {
                problems.clear("token");
                return Some(me);
            }
            Err(err) => err,
        };
        let text = error.to_string();
        let delay = match &error {
            TokenError::Refused(_) => {
                tracing::error!(
                    "{text} (in {}); the gateway waits and tries again every minute",
                    TelegramConfig::path(home).display()
                );
                Duration::from_secs(60)
            }
            _ => {
                if said.as_deref() != Some(text.as_str()) {
                    tracing::warn!("{text}; trying again");
                }
                unreachable_delay = (unreachable_delay * 2).min(Duration::from_secs(30));
                unreachable_delay
            }
        };
        problems.set("token", text.clone());
        said = Some(text);
        tokio::select! {
            () = shutdown.requested() => return None,
            () = file_changes(home, delay) => {}
        }
        // A corrected file is picked up without a restart.
        if let Ok(fresh) = TelegramConfig::load_checked(home)
            && fresh != *config
        {
            tracing::info!("{} changed; using it", TelegramConfig::path(home).display());
            if let (Ok(token), Ok(url)) = (fresh.token(), fresh.api_url()) {
                *api = Api::new(&url, &token, api.throttle().clone());
            }
            *config = fresh;
        }
    }
}

/// Waits `delay`, or less if `config/telegram.toml` changes meanwhile
/// (its modification time, looked at every 2 s).
async fn file_changes(home: &Home, delay: Duration) {
    let path = TelegramConfig::path(home);
    let modified = || std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    let before = modified();
    let deadline = tokio::time::Instant::now() + delay;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2).min(delay)).await;
        if modified() != before {
            return;
        }
    }
}

async fn start(
    home: Home,
    mut config: TelegramConfig,
    daemon: DaemonLink,
    shutdown: Shutdown,
    problems: Problems,
    publish: watch::Sender<Option<Arc<Gateway>>>,
) -> anyhow::Result<()> {
    let token = config.token()?;
    let url = config.api_url()?;
    let mut api = Api::new(&url, &token, Throttle::telegram());
    let Some(me) = identify(&home, &mut config, &mut api, &shutdown, &problems).await else {
        return Ok(());
    };
    tracing::info!(bot = me.id, "connected to Telegram as @{}", me.username);
    if let Err(err) = api.delete_webhook().await {
        tracing::warn!("cannot delete a webhook (getUpdates may answer 409): {err}");
    }
    let chats = Arc::new(ChatBook::open(&home));
    let gateway = Arc::new(Gateway {
        outbox: Outbox::new(api.clone(), chats.clone(), problems.clone()),
        access: parking_lot::RwLock::new(Arc::new(Access::new(&home, &config))),
        inbox: crate::gateway::inbox::Inbox::new(&home),
        ledger: Ledger::open(&home),
        asks: Default::default(),
        skill_commands: Default::default(),
        running: Default::default(),
        live: Default::default(),
        chats,
        home: home.clone(),
        config,
        me: me.clone(),
        api,
        daemon,
        shutdown: shutdown.clone(),
    });
    publish.send_replace(Some(gateway.clone()));
    crate::gateway::slash::register(&gateway).await;
    let relay = tokio::spawn(crate::gateway::relay::run(gateway.clone()));
    let offsets = OffsetStore::open(&home, me.id);
    gateway.inbox.replay(&gateway).await;
    let reload = tokio::spawn(crate::reload::watch(gateway.clone(), problems.clone()));
    crate::gateway::poller::run(gateway.clone(), offsets, problems).await;
    reload.abort();
    tracing::info!("polling stopped; delivering what is under way");
    gateway.seal_all();
    if !gateway.outbox.drain(DRAIN_GRACE).await {
        tracing::warn!("some replies were not delivered within {DRAIN_GRACE:?}; abandoned");
    }
    relay.abort();
    Ok(())
}
