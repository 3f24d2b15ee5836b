//! `crabtalk-search check`: `search.toml` read as `run` reads it (the
//! kit's `check`, which `crabup search start|restart` runs first).

use crabtalk_kit::Component;

use crate::config::Settings;

/// The settings of the component's home: `search.toml` (optional) and the
/// environment (API keys). What `run` starts from, and what `check` reads.
pub(crate) fn settings(component: &Component) -> anyhow::Result<Settings> {
    let config = crate::config::load(&component.config_path())?;
    Ok(Settings::resolve(&config, |name| std::env::var(name).ok()))
}

/// The summary of a `search.toml` the service would take: which engines
/// it would ask, and why the others are off.
pub(crate) fn check(component: &Component) -> anyhow::Result<String> {
    let settings = settings(component)?;
    let path = component.config_path();
    let source = if path.exists() {
        format!("{}: the service would take it", path.display())
    } else {
        format!("no {} (optional): defaults", path.display())
    };
    let on: Vec<&str> = settings
        .engines
        .iter()
        .filter(|e| e.enabled)
        .map(|e| e.id.name())
        .collect();
    let off: Vec<String> = settings
        .engines
        .iter()
        .filter(|e| !e.enabled)
        .map(|e| match &e.off_because {
            Some(why) => format!("{} ({why})", e.id.name()),
            None => e.id.name().to_owned(),
        })
        .collect();
    let mut summary = format!(
        "{source}; engines on: {}",
        if on.is_empty() {
            "none".to_owned()
        } else {
            on.join(", ")
        }
    );
    if !off.is_empty() {
        summary.push_str(&format!("; off: {}", off.join(", ")));
    }
    Ok(summary)
}
