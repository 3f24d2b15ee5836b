//! `config/telegram.toml` changed while the gateway runs.
//!
//! Who may talk takes effect at once: `allow`, `pairing`, `groups`,
//! `open_groups` and `require_mention` (the whole access table is rebuilt from the file and
//! swapped in). The rest — the token, `api_base_url`, `agent`,
//! `tool_status`, the poll timings — is read at start: a change to any of
//! it is logged and listed in `GET /health` (`crabup ps` shows the gateway
//! degraded) with the command that applies it, until a restart or until
//! the file says again what runs. A file with a problem changes nothing:
//! the gateway keeps what it has and says what is wrong, at the key's
//! `file:line:column`.
//!
//! The file is looked at every [`EVERY`] (its modification time and
//! length): editors write files in many ways, and a look costs one
//! `stat`.

use std::sync::Arc;
use std::time::Duration;

use crabtalk_kit::Problems;

use crate::access::Access;
use crate::config::TelegramConfig;
use crate::gateway::Gateway;

/// How often the file is looked at.
pub(crate) const EVERY: Duration = Duration::from_secs(2);

/// Follows the file until the task is dropped.
pub(crate) async fn watch(gateway: Arc<Gateway>, problems: Problems) {
    let path = TelegramConfig::path(&gateway.home);
    let stamp = || {
        std::fs::metadata(&path)
            .ok()
            .map(|m| (m.modified().ok(), m.len()))
    };
    let mut seen = stamp();
    let mut applied = gateway.config.clone();
    loop {
        tokio::time::sleep(EVERY).await;
        let now = stamp();
        if now == seen {
            continue;
        }
        seen = now;
        let fresh = match TelegramConfig::load_checked(&gateway.home) {
            Ok(fresh) => fresh,
            Err(err) => {
                tracing::warn!("{err}; the gateway keeps the settings it has");
                problems.set(
                    "config",
                    format!("{err}; the gateway keeps the settings it has"),
                );
                continue;
            }
        };
        problems.clear("config");
        if fresh == applied {
            continue;
        }
        // Rebuilt from the whole file, so whatever the table reads is
        // current; said in the log when who may talk changed.
        *gateway.access.write() = Arc::new(Access::new(&gateway.home, &fresh));
        if access_of(&fresh) != access_of(&applied) {
            tracing::info!(
                "{} changed: who may talk is read again (allow {:?}, pairing {}, groups {:?}, \
                 open_groups {:?}, require_mention {})",
                path.display(),
                fresh.allow,
                if fresh.pairing { "on" } else { "off" },
                fresh.groups,
                fresh.open_groups,
                fresh.require_mention
            );
        }
        applied = fresh;
        let pending = needs_restart(&gateway.config, &applied);
        if pending.is_empty() {
            problems.clear("restart");
        } else {
            let text = format!(
                "{} changed {}, which take effect after a restart: crabup telegram restart",
                path.display(),
                pending.join(", ")
            );
            tracing::warn!("{text}");
            problems.set("restart", text);
        }
    }
}

/// The part of the configuration the access table is made of.
fn access_of(config: &TelegramConfig) -> TelegramConfig {
    TelegramConfig {
        allow: config.allow.clone(),
        pairing: config.pairing,
        groups: config.groups.clone(),
        open_groups: config.open_groups.clone(),
        require_mention: config.require_mention,
        ..TelegramConfig::default()
    }
}

/// The keys that differ between what runs and `fresh` and are read only at
/// start.
fn needs_restart(running: &TelegramConfig, fresh: &TelegramConfig) -> Vec<&'static str> {
    let mut keys = Vec::new();
    let mut differs = |key: &'static str, differs: bool| {
        if differs {
            keys.push(key);
        }
    };
    differs("token", running.token != fresh.token);
    differs("token_env", running.token_env != fresh.token_env);
    differs("api_base_url", running.api_base_url != fresh.api_base_url);
    differs("agent", running.agent != fresh.agent);
    differs("tool_status", running.tool_status != fresh.tool_status);
    differs(
        "poll_timeout_secs",
        running.poll_timeout_secs != fresh.poll_timeout_secs,
    );
    differs(
        "poll_restart_secs",
        running.poll_restart_secs != fresh.poll_restart_secs,
    );
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_read_at_start_needs_a_restart() {
        let running = TelegramConfig {
            token: "1:a".into(),
            ..Default::default()
        };
        let access_only = TelegramConfig {
            pairing: true,
            allow: vec![5],
            ..running.clone()
        };
        assert!(needs_restart(&running, &access_only).is_empty());
        assert_ne!(access_of(&running), access_of(&access_only));
        let token = TelegramConfig {
            token: "2:b".into(),
            poll_timeout_secs: 10,
            ..running.clone()
        };
        assert_eq!(
            needs_restart(&running, &token),
            ["token", "poll_timeout_secs"]
        );
    }
}
