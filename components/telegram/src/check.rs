//! `crabtalk-telegram check`: `telegram.toml` read as `run` reads it (the
//! kit's `check`, which `crabup telegram start|restart` runs first).

use crabtalk_kit::Component;

use crate::config::TelegramConfig;

/// The summary of a `telegram.toml` the gateway would take: its token is
/// set, and who may talk to the bot.
pub(crate) fn check(component: &Component) -> anyhow::Result<String> {
    let config = TelegramConfig::load_checked(component.home())?;
    let who = match (config.allow.len(), config.pairing) {
        (0, false) => "nobody may talk to the bot yet (empty allow, no pairing)".to_owned(),
        (0, true) => "pairing on, nobody allowed yet".to_owned(),
        (n, pairing) => format!(
            "{n} user{} allowed{}",
            if n == 1 { "" } else { "s" },
            if pairing { ", pairing on" } else { "" }
        ),
    };
    Ok(format!(
        "{}: the gateway would take it (token set; {who})",
        TelegramConfig::path(component.home()).display()
    ))
}
