//! `GET /health` next to `/mcp`: the component saying it is alive and
//! which service it is (the report's shape is
//! [`crabtalk_home::Health`]; `crabup ps` asks for it with the owner's
//! token). A caller without the token learns only that something answers:
//! `{"ok":true}`.

use axum::Extension;
use crabtalk_home::{HEALTH_PATH, Health};

use crate::access::Authenticated;

/// Asked at every `GET /health` for the component's current problems
/// (see [`run_mcp_reporting`](crate::mcp::run_mcp_reporting)).
pub type HealthProblems = std::sync::Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// `router` with `GET /health` answering for `service` in this process,
/// with `problems` asked at every request.
pub(crate) fn with_health_route(
    router: axum::Router,
    service: &str,
    problems: Option<HealthProblems>,
) -> axum::Router {
    let health = Health::of_this_process(service);
    router.route(
        HEALTH_PATH,
        axum::routing::get(move |owner: Option<Extension<Authenticated>>| {
            let answer = match owner {
                Some(_) => {
                    let mut health = health.clone();
                    if let Some(problems) = &problems {
                        health.problems = problems();
                    }
                    serde_json::to_value(health).unwrap_or_default()
                }
                None => serde_json::json!({ "ok": true }),
            };
            async move { axum::Json(answer) }
        }),
    )
}
