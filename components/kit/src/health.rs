//! `GET /health` next to `/mcp`: the component saying it is alive and
//! which service it is (the report's shape is
//! [`crabtalk_home::Health`]; `crabup ps` asks for it).

use crabtalk_home::{HEALTH_PATH, Health};

/// `router` with `GET /health` answering for `service` in this process.
pub(crate) fn with_health_route(router: axum::Router, service: &str) -> axum::Router {
    let health = Health::of_this_process(service);
    router.route(
        HEALTH_PATH,
        axum::routing::get(move || {
            let health = health.clone();
            async move { axum::Json(health) }
        }),
    )
}
