//! `GET /health` next to `/mcp`: the component saying it is alive and
//! which service it is (the report's shape is
//! [`crabtalk_home::Health`]; `crabup ps` asks for it with the owner's
//! token). A caller without the token learns only that something answers:
//! `{"ok":true}`.

use axum::Extension;
use crabtalk_home::{HEALTH_PATH, Health};

use crate::Problems;
use crate::access::Authenticated;

/// `router` with `GET /health` answering for `service` in this process,
/// with the list of `problems` at every request.
pub(crate) fn with_health_route(
    router: axum::Router,
    service: &str,
    problems: Option<Problems>,
) -> axum::Router {
    let health = Health::of_this_process(service);
    router.route(
        HEALTH_PATH,
        axum::routing::get(move |owner: Option<Extension<Authenticated>>| {
            let answer = match owner {
                Some(_) => {
                    let mut health = health.clone();
                    if let Some(problems) = &problems {
                        health.problems = problems.list();
                    }
                    serde_json::to_value(health).unwrap_or_default()
                }
                None => serde_json::json!({ "ok": true }),
            };
            async move { axum::Json(answer) }
        }),
    )
}
