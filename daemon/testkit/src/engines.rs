//! Two search engines on 127.0.0.1, answered from crabtalk-search's own
//! test fixtures: Wikipedia's API (`/w/api.php`) and DuckDuckGo's HTML
//! page (`/html/`). For tests and examples that run the whole family.

use axum::http::header::CONTENT_TYPE;

/// A fixture of `components/search/tests/fixtures/`.
pub fn search_fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../components/search/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Starts the two engines; returns their base URL (what search's
/// `base_url` of each engine is set to).
pub async fn fixture_engines() -> String {
    let wikipedia = search_fixture("wikipedia.json");
    let duckduckgo = search_fixture("duckduckgo.html");
    let app = axum::Router::new()
        .route(
            "/w/api.php",
            axum::routing::get(
                move || async move { ([(CONTENT_TYPE, "application/json")], wikipedia) },
            ),
        )
        .route(
            "/html/",
            axum::routing::any(move || async move {
                ([(CONTENT_TYPE, "text/html; charset=utf-8")], duckduckgo)
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}
