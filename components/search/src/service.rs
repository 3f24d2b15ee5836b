//! `crabtalk-search run`: the service — the tools on the port announced in
//! `run/search.port`, with suspended engines reported in `GET /health`.

use std::sync::Arc;

use anyhow::Context;
use crabtalk_kit::Component;

pub(crate) use crate::check::settings;
use crate::web::Web;

/// Runs the service until the component is told to stop.
pub async fn run(component: &Component) -> anyhow::Result<()> {
    crate::burst::limit_arenas();
    let settings = settings(component)?;
    let enabled: Vec<&str> = settings
        .engines
        .iter()
        .filter(|e| e.enabled)
        .map(|e| e.id.name())
        .collect();
    tracing::info!("engines: {}", enabled.join(", "));
    let web = Arc::new(Web::new(component.home(), settings));
    {
        let web = web.clone();
        component.problems().watch(move || {
            web.engines()
                .into_iter()
                .filter_map(|engine| {
                    let until = engine.suspended_until?;
                    Some(format!(
                        "{} {} (suspended until {})",
                        engine.engine,
                        engine.health,
                        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ))
                })
                .collect()
        });
    }
    let router = crate::tools::server(web).router();
    component.serve_mcp(router).await.context("serving MCP")
}
