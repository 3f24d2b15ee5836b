//! Every engine against a fixture served on 127.0.0.1 in the shape the real
//! service answers (each fixture's header says which): parsed into
//! results, fused, and — for the rate-limit, block and CAPTCHA pages —
//! reported as limited or blocked, suspended, and not asked again until
//! the suspension ends.

use crate::support;

use std::path::Path;
use std::time::Duration;

use crabtalk_search::{EngineId, SearchRequest, Settings, Status, Web};
use support::{Engines, Fixture, Reply, TestHome, fixture};

fn web(home: &TestHome, toml: &str) -> Web {
    let config = crabtalk_search::parse_config(Path::new("search.toml"), toml).unwrap();
    let settings = Settings::resolve(&config, |name| {
        (name == "BRAVE_TEST_KEY").then(|| "test-key".to_owned())
    });
    Web::new(&home.home(), settings)
}

fn only(engine: EngineId) -> SearchRequest {
    SearchRequest {
        query: "rust ownership".into(),
        count: 10,
        lang: None,
        region: None,
        engines: Some(vec![engine]),
    }
}

fn all() -> SearchRequest {
    SearchRequest {
        engines: None,
        ..only(EngineId::Bing)
    }
}

fn urls(answer: &crabtalk_search::SearchAnswer) -> Vec<&str> {
    answer.results.iter().map(|r| r.url.as_str()).collect()
}

fn status_of(answer: &crabtalk_search::SearchAnswer, engine: &str) -> Status {
    answer
        .engines
        .iter()
        .find(|e| e.engine == engine)
        .unwrap()
        .status
}

#[tokio::test]
async fn each_engine_parses_its_fixture() {
    let engines = Engines::start().await;
    let home = TestHome::new("");
    let web = web(&home, &engines.config(""));

    let ddg = web.search(&only(EngineId::DuckDuckGo)).await;
    assert_eq!(status_of(&ddg, "duckduckgo"), Status::Ok);
    assert_eq!(
        urls(&ddg),
        [
            "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html",
            "http://www.rust-lang.org/learn/",
            "https://blog.rust-lang.org/ownership-explained",
            "https://stackoverflow.com/questions/tagged/rust",
            "https://github.com/rust-lang/rust",
        ],
        "the ad is left out, redirect links unwrapped"
    );
    assert_eq!(
        ddg.results[0].title,
        "What is Ownership? - The Rust Programming Language"
    );
    assert_eq!(
        ddg.results[0].snippet,
        "Ownership is a set of rules that govern how a Rust program manages memory."
    );
    assert_eq!(
        ddg.results[3].title,
        "Newest 'rust' Questions - Stack Overflow"
    );
    let asked = &engines.duckduckgo.seen()[0];
    assert_eq!(asked.query["q"], "rust ownership");

    let bing = web.search(&only(EngineId::Bing)).await;
    assert_eq!(
        urls(&bing),
        [
            "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html",
            "https://blog.rust-lang.org/ownership-explained",
            "https://users.rust-lang.org/t/understanding-ownership/1234",
        ]
    );
    assert_eq!(
        bing.results[0].snippet,
        "Ownership is a set of rules that govern how a Rust program manages memory. All programs have to manage the way they use a computer\u{2019}s memory while running."
    );
    assert_eq!(engines.bing.seen()[0].query["q"], "rust ownership");

    let mojeek = web.search(&only(EngineId::Mojeek)).await;
    assert_eq!(
        urls(&mojeek),
        [
            "https://rust-lang.org/learn",
            "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html",
            "https://without-boats.example/ownership",
        ]
    );
    assert_eq!(
        mojeek.results[0].title,
        "Learn Rust - Rust Programming Language"
    );

    let wikipedia = web.search(&only(EngineId::Wikipedia)).await;
    let base = engines.wikipedia.base_url();
    assert_eq!(
        urls(&wikipedia),
        [
            format!("{base}/wiki/Rust_(programming_language)"),
            format!("{base}/wiki/Ownership"),
            format!("{base}/wiki/Affine_type_system"),
        ]
    );
    assert_eq!(
        wikipedia.results[0].snippet,
        "Rust is a general-purpose programming language emphasizing performance, type safety, and concurrency. It enforces memory safety through ownership & borrowing"
    );
    let asked = &engines.wikipedia.seen()[0];
    assert_eq!(asked.query["srsearch"], "rust ownership");
    assert_eq!(asked.query["list"], "search");

    let brave = web.search(&only(EngineId::Brave)).await;
    assert_eq!(
        brave.results[0].title,
        "What is Ownership? - The Rust Programming Language"
    );
    assert_eq!(brave.results.len(), 2);
    assert_eq!(
        engines.brave.seen()[0].headers["x-subscription-token"],
        "test-key"
    );

    let searxng = web.search(&only(EngineId::Searxng)).await;
    assert_eq!(
        urls(&searxng),
        [
            "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html",
            "https://github.com/rust-lang/rust"
        ]
    );
    assert_eq!(engines.searxng.seen()[0].query["format"], "json");
}

#[tokio::test]
async fn all_engines_are_fused_and_each_result_says_who_found_it_where() {
    let engines = Engines::start().await;
    let home = TestHome::new("");
    let web = web(&home, &engines.config(""));
    let answer = web.search(&all()).await;
    for engine in [
        "duckduckgo",
        "bing",
        "mojeek",
        "wikipedia",
        "brave",
        "searxng",
    ] {
        assert_eq!(
            status_of(&answer, engine),
            Status::Ok,
            "{engine}: {answer:?}"
        );
    }
    assert!(answer.note.is_none(), "{answer:?}");
    // Found by all five web engines at ranks 1,1,2,1,1 (wikipedia's URLs are
    // its own): 5 places → 5/1 + 5/1 + 5/2 + 5/1 + 5/1 = 22.5.
    let top = &answer.results[0];
    assert_eq!(
        top.url,
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
    assert!((top.score - 22.5).abs() < 1e-6, "{top:?}");
    let found: Vec<(&str, usize)> = top
        .engines
        .iter()
        .map(|f| (f.engine.as_str(), f.rank))
        .collect();
    assert_eq!(
        found,
        [
            ("duckduckgo", 1),
            ("bing", 1),
            ("mojeek", 2),
            ("brave", 1),
            ("searxng", 1)
        ]
    );
    // rust-lang.org/learn: DDG's http://www. one with utm and Mojeek's https
    // one are one result, shown with the https URL.
    let learn: Vec<_> = answer
        .results
        .iter()
        .filter(|r| r.url.contains("rust-lang.org/learn"))
        .collect();
    assert_eq!(learn.len(), 1);
    assert_eq!(learn[0].url, "https://rust-lang.org/learn");
    assert_eq!(learn[0].title, "Learn Rust - Rust Programming Language");
    // Count is honoured, and the same search gives the same order (from the
    // cache the second time, without asking anyone).
    assert_eq!(answer.results.len(), 10);
    let hits = engines.bing.hits();
    let again = web.search(&all()).await;
    assert!(again.cached);
    assert_eq!(urls(&again), urls(&answer));
    assert_eq!(engines.bing.hits(), hits);
}

/// An engine that answers with `reply` is `status`, suspended, listed so,
/// and not asked while suspended.
async fn refused(engine: EngineId, path: &str, reply: Reply, status: Status, says: &str) {
    let engines = Engines::start().await;
    let server: &Fixture = match engine {
        EngineId::DuckDuckGo => &engines.duckduckgo,
        EngineId::Bing => &engines.bing,
        EngineId::Mojeek => &engines.mojeek,
        EngineId::Wikipedia => &engines.wikipedia,
        EngineId::Brave => &engines.brave,
        EngineId::Searxng => &engines.searxng,
    };
    server.route(path, reply);
    let home = TestHome::new("");
    let web = web(&home, &engines.config("[cache]\nttl_secs = 0\n"));
    let answer = web.search(&all()).await;
    let report = answer
        .engines
        .iter()
        .find(|e| e.engine == engine.name())
        .unwrap();
    assert_eq!(report.status, status, "{engine}: {report:?}");
    assert!(
        report.detail.as_deref().unwrap_or("").contains(says),
        "{engine}: {report:?}"
    );
    assert!(report.suspended_until.is_some(), "{engine}: {report:?}");
    assert!(
        answer
            .note
            .as_deref()
            .unwrap()
            .contains(&format!("{engine} {}", status.name())),
        "{answer:?}"
    );
    // The others still answered.
    assert!(!answer.results.is_empty());
    let asked = server.hits();
    let next = web.search(&all()).await;
    let report = next
        .engines
        .iter()
        .find(|e| e.engine == engine.name())
        .unwrap();
    assert_eq!(report.status, Status::Suspended, "{report:?}");
    assert!(
        report.detail.as_deref().unwrap().contains(status.name()),
        "{report:?}"
    );
    assert_eq!(server.hits(), asked, "a suspended engine is not asked");
    // The standing is on disk for the CLI and crabup doctor.
    let views = web.engines();
    let view = views.iter().find(|v| v.engine == engine.name()).unwrap();
    assert_eq!(view.health, status.name());
    assert!(view.suspended_until.is_some());
    assert!(
        std::fs::read_to_string(home.health_file())
            .unwrap()
            .contains(status.name())
    );
}

#[tokio::test]
async fn duckduckgo_rate_limit_and_anomaly_page_are_refusals() {
    refused(
        EngineId::DuckDuckGo,
        "/html/",
        Reply::with_status(202, "text/html", ""),
        Status::RateLimited,
        "HTTP 202",
    )
    .await;
    refused(
        EngineId::DuckDuckGo,
        "/html/",
        Reply::html(fixture("duckduckgo-anomaly.html")),
        Status::Blocked,
        "bot check",
    )
    .await;
}

#[tokio::test]
async fn bing_captcha_and_429_are_refusals() {
    refused(
        EngineId::Bing,
        "/search",
        Reply::html(fixture("bing-captcha.html")),
        Status::Blocked,
        "CAPTCHA",
    )
    .await;
    refused(
        EngineId::Bing,
        "/search",
        Reply::with_status(429, "text/html", "Too Many Requests"),
        Status::RateLimited,
        "429",
    )
    .await;
}

#[tokio::test]
async fn mojeek_403_and_a_page_without_results_are_blocks() {
    refused(
        EngineId::Mojeek,
        "/search",
        Reply::with_status(403, "text/html", fixture("mojeek-blocked.html")),
        Status::Blocked,
        "HTTP 403",
    )
    .await;
    refused(
        EngineId::Mojeek,
        "/search",
        Reply::html(fixture("consent.html")),
        Status::Blocked,
        "no results list",
    )
    .await;
}

#[tokio::test]
async fn wikipedia_ratelimited_error_is_a_rate_limit() {
    refused(
        EngineId::Wikipedia,
        "/w/api.php",
        Reply::json(fixture("wikipedia-ratelimited.json")),
        Status::RateLimited,
        "ratelimited",
    )
    .await;
}

#[tokio::test]
async fn brave_429_is_a_rate_limit_and_a_refused_key_a_block() {
    refused(
        EngineId::Brave,
        "/res/v1/web/search",
        Reply::with_status(429, "application/json", fixture("brave-ratelimited.json")),
        Status::RateLimited,
        "429",
    )
    .await;
    refused(
        EngineId::Brave,
        "/res/v1/web/search",
        Reply::with_status(401, "application/json", "{}"),
        Status::Blocked,
        "API key",
    )
    .await;
}

#[tokio::test]
async fn searxng_without_json_is_blocked_with_the_fix() {
    refused(
        EngineId::Searxng,
        "/search",
        Reply::with_status(403, "text/html", fixture("searxng-forbidden.html")),
        Status::Blocked,
        "search.formats",
    )
    .await;
}

#[tokio::test]
async fn an_answer_that_does_not_parse_is_an_error_and_suspends_nothing() {
    // What a broken proxy or a cut connection gives: truncated JSON, an
    // empty 200, an HTML page where JSON was asked for. Nothing in them
    // says the engine refused us (the guide's health table: `error`).
    let engines = Engines::start().await;
    engines.searxng.route(
        "/search",
        Reply::html("<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"),
    );
    engines.brave.route(
        "/res/v1/web/search",
        Reply::json(r#"{"type":"search","web":{"resu"#),
    );
    engines.wikipedia.route("/w/api.php", Reply::json(""));
    engines.bing.route("/search", Reply::html("   \n"));
    let home = TestHome::new("");
    let web = web(&home, &engines.config("[cache]\nttl_secs = 0\n"));
    let first = web.search(&all()).await;
    for engine in ["searxng", "brave", "wikipedia", "bing"] {
        let report = first.engines.iter().find(|e| e.engine == engine).unwrap();
        assert_eq!(report.status, Status::Error, "{report:?}");
        assert_eq!(report.suspended_until, None, "{report:?}");
    }
    let detail = |engine: &str| {
        first
            .engines
            .iter()
            .find(|e| e.engine == engine)
            .unwrap()
            .detail
            .clone()
            .unwrap_or_default()
    };
    assert!(
        detail("searxng").contains("not a SearXNG JSON answer"),
        "{first:?}"
    );
    assert!(detail("wikipedia").contains("empty body"), "{first:?}");
    // Not suspended: the next search asks them again.
    let asked = engines.searxng.hits();
    let again = web.search(&all()).await;
    assert_eq!(status_of(&again, "searxng"), Status::Error);
    assert_eq!(engines.searxng.hits(), asked + 1);
    assert!(
        web.engines()
            .iter()
            .all(|view| view.suspended_until.is_none()),
        "{:?}",
        web.engines()
    );
}

#[tokio::test]
async fn an_engine_listing_one_page_twice_gets_one_place_for_it() {
    // SearXNG lists the top page twice (the second time with `%61` for `a`
    // in its path and an upper-case tracking parameter).
    let engines = Engines::start().await;
    let doubled = r#"{"results":[
        {"url":"https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html","title":"What is Ownership?","content":"x"},
        {"url":"https://doc.rust-lang.org/book/ch04-01-wh%61t-is-ownership.html?UTM_SOURCE=searx","title":"What is Ownership?","content":"x"}
    ]}"#;
    engines.searxng.route("/search", Reply::json(doubled));
    let home = TestHome::new("");
    let web = web(&home, &engines.config(""));
    let answer = web.search(&all()).await;
    let top = &answer.results[0];
    assert_eq!(
        top.url,
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
    let found: Vec<(&str, usize)> = top
        .engines
        .iter()
        .map(|f| (f.engine.as_str(), f.rank))
        .collect();
    assert_eq!(
        found,
        [
            ("duckduckgo", 1),
            ("bing", 1),
            ("mojeek", 2),
            ("brave", 1),
            ("searxng", 1)
        ]
    );
    // The same 22.5 as when SearXNG lists it once.
    assert!((top.score - 22.5).abs() < 1e-6, "{top:?}");
    assert_eq!(
        answer
            .results
            .iter()
            .filter(|r| r.url.contains("ownership.html") || r.url.contains("wh%61t"))
            .count(),
        1,
        "{answer:?}"
    );
}

#[tokio::test]
async fn nothing_found_is_no_results_not_a_refusal() {
    let engines = Engines::start().await;
    engines
        .duckduckgo
        .route("/html/", Reply::html(fixture("duckduckgo-no-results.html")));
    engines
        .mojeek
        .route("/search", Reply::html(fixture("mojeek-no-results.html")));
    engines.wikipedia.route(
        "/w/api.php",
        Reply::json(r#"{"batchcomplete":true,"query":{"searchinfo":{"totalhits":0},"search":[]}}"#),
    );
    engines.brave.route(
        "/res/v1/web/search",
        Reply::json(r#"{"type":"search","query":{"original":"zzqqxx"}}"#),
    );
    let home = TestHome::new("");
    let web = web(&home, &engines.config(""));
    let answer = web.search(&all()).await;
    for engine in ["duckduckgo", "mojeek", "wikipedia", "brave"] {
        let report = answer.engines.iter().find(|e| e.engine == engine).unwrap();
        assert_eq!(report.status, Status::NoResults, "{report:?}");
        assert_eq!(report.suspended_until, None);
    }
}

#[tokio::test]
async fn slow_engines_time_out_alone_within_the_deadline() {
    let engines = Engines::start().await;
    engines.bing.route(
        "/search",
        Reply::Delayed {
            delay: Duration::from_secs(30),
            reply: Box::new(Reply::html(fixture("bing.html"))),
        },
    );
    let home = TestHome::new("");
    let toml = engines
        .config("")
        .replace("[engines.bing]\n", "[engines.bing]\ntimeout_ms = 400\n");
    let web = web(&home, &toml);
    let started = std::time::Instant::now();
    let answer = web.search(&all()).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let bing = answer.engines.iter().find(|e| e.engine == "bing").unwrap();
    assert_eq!(bing.status, Status::Timeout);
    assert!(
        bing.detail.as_deref().unwrap().contains("400 ms"),
        "{bing:?}"
    );
    assert_eq!(bing.suspended_until, None, "a timeout is not a refusal");
    assert_eq!(status_of(&answer, "duckduckgo"), Status::Ok);

    // The overall deadline cuts an engine whose own timeout is longer.
    let toml = engines
        .config("")
        .replace("deadline_ms = 5000", "deadline_ms = 600");
    let home = TestHome::new("");
    let web = self::web(&home, &toml);
    let started = std::time::Instant::now();
    let answer = web.search(&all()).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let bing = answer.engines.iter().find(|e| e.engine == "bing").unwrap();
    assert!(
        bing.detail
            .as_deref()
            .unwrap()
            .contains("deadline of 600 ms"),
        "{bing:?}"
    );
}

#[tokio::test]
async fn a_search_nobody_answered_is_not_cached() {
    let engines = Engines::start().await;
    let home = TestHome::new("");
    let broken = Reply::with_status(500, "text/plain", "oops");
    engines.duckduckgo.route("/html/", broken.clone());
    let web = web(&home, &engines.config(""));
    let request = only(EngineId::DuckDuckGo);
    let first = web.search(&request).await;
    assert!(first.nobody_answered());
    assert_eq!(status_of(&first, "duckduckgo"), Status::Error);
    assert!(
        first
            .note
            .as_deref()
            .unwrap()
            .contains("no engine answered"),
        "{first:?}"
    );
    engines
        .duckduckgo
        .route("/html/", Reply::html(fixture("duckduckgo.html")));
    let second = web.search(&request).await;
    assert!(!second.cached, "a failure was cached");
    assert_eq!(second.results.len(), 5);
    assert!(web.search(&request).await.cached);
}

#[tokio::test]
async fn disabled_and_keyless_engines_are_listed_with_why() {
    let engines = Engines::start().await;
    let home = TestHome::new("");
    let toml = engines
        .config("")
        .replace(
            "api_key_env = \"BRAVE_TEST_KEY\"",
            "api_key_env = \"NO_SUCH_KEY_VAR\"",
        )
        .replace("[engines.bing]\n", "[engines.bing]\nenabled = false\n");
    let web = web(&home, &toml);
    let answer = web.search(&all()).await;
    let brave = answer.engines.iter().find(|e| e.engine == "brave").unwrap();
    assert_eq!(brave.status, Status::Disabled);
    assert_eq!(brave.detail.as_deref(), Some("NO_SUCH_KEY_VAR is not set"));
    let bing = answer.engines.iter().find(|e| e.engine == "bing").unwrap();
    assert_eq!(bing.status, Status::Disabled);
    assert_eq!(engines.bing.hits(), 0);
    assert_eq!(engines.brave.hits(), 0);
    let wanted = web.search(&only(EngineId::Wikipedia)).await;
    assert_eq!(status_of(&wanted, "duckduckgo"), Status::NotRequested);
}
