//! `GET /health` next to `/mcp`: the component saying it is alive and
//! which service it is (the report's shape is
//! [`crabtalk_home::Health`]; `crabup ps` asks for it).

use crabtalk_home::{HEALTH_PATH, Health};

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
        axum::routing::get(move || {
            let mut health = health.clone();
            if let Some(problems) = &problems {
                health.problems = problems();
            }
            async move { axum::Json(health) }
        }),
    )
}
