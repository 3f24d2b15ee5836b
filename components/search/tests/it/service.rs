//! End to end: the real `crabtalk-search` service with engines and pages
//! served on 127.0.0.1; MCP through a real rmcp client and raw JSON-RPC;
//! a turn in the real daemon whose scripted model calls
//! `search__web_search`; the service idle.

use crate::support;

use std::time::Duration;

use crabtalk_testkit::{
    Reply as LlmReply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary, within,
};
use serde_json::{Value, json};
use support::{
    Engines, Fixture, Reply, Service, TestHome, call, client, error_text, fixture, text,
};

const PAGE: &str = "<!doctype html><html><head><title>Crab facts</title></head><body><nav>Home</nav><article><h1>Crab facts</h1><p>Crabs walk sideways because of the way their legs bend. Most crabs live in the sea, but some live in fresh water and on land, and a few even climb trees.</p><h2>Shells</h2><p>A crab's shell does not grow, so crabs moult: they shed the old shell and grow a larger one, hiding while the new one hardens.</p></article></body></html>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rmcp_client_calls_both_tools() {
    let engines = Engines::start().await;
    let pages = Fixture::start().await;
    pages.route("/crabs", Reply::html(PAGE));
    let home = TestHome::new(&engines.config("[fetch]\nallow_private = [\"127.0.0.1/32\"]\n"));
    let service = Service::start(&home.home()).await;
    let client = client(&service).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["web_search", "web_fetch"]);
    let schema = serde_json::to_value(&tools[0].input_schema).unwrap();
    assert_eq!(schema["required"], json!(["query"]));

    let found = call(
        &client,
        "web_search",
        json!({"query": "rust ownership", "count": 5}),
    )
    .await;
    assert_eq!(found.is_error, Some(false), "{found:?}");
    let answer = found.structured_content.clone().unwrap();
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(
        results[0]["url"],
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
    assert_eq!(
        results[0]["engines"].as_array().unwrap().len(),
        5,
        "{}",
        results[0]
    );
    let engines_listed: Vec<&str> = answer["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["engine"].as_str().unwrap())
        .collect();
    assert_eq!(
        engines_listed,
        [
            "duckduckgo",
            "bing",
            "mojeek",
            "wikipedia",
            "brave",
            "searxng"
        ]
    );
    assert!(
        answer["engines"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["status"] == "ok"),
        "{answer}"
    );

    for (args, says) in [
        (
            json!({"query": "x", "count": 99}),
            "`count` must be a whole number from 1 to 20",
        ),
        (json!({"count": 3}), "`query` is missing"),
        (
            json!({"query": "x", "engines": ["altavista"]}),
            "no engine \"altavista\"",
        ),
        (
            json!({"query": "x", "safe": true}),
            "unknown argument `safe`",
        ),
    ] {
        let text = error_text(&call(&client, "web_search", args.clone()).await);
        assert!(text.contains(says), "{args}: {text}");
    }

    let page = call(
        &client,
        "web_fetch",
        json!({"url": format!("{}/crabs", pages.base_url())}),
    )
    .await;
    assert_eq!(page.is_error, Some(false), "{page:?}");
    let shown = page.content[0].as_text().unwrap().text.clone();
    assert!(shown.starts_with("# Crab facts"), "{shown}");
    assert!(
        shown.contains("## Shells") && !shown.contains("Home"),
        "{shown}"
    );
    let structured = page.structured_content.clone().unwrap();
    assert_eq!(structured["title"], "Crab facts");
    assert_eq!(structured["format"], "markdown");
    let plain = call(
        &client,
        "web_fetch",
        json!({"url": format!("{}/crabs", pages.base_url()), "format": "text", "max_chars": 30}),
    )
    .await;
    let structured = plain.structured_content.unwrap();
    assert_eq!(structured["truncated"], true);
    assert!(
        structured["note"].as_str().unwrap().contains("cut at 30"),
        "{structured}"
    );

    let refused = error_text(
        &call(
            &client,
            "web_fetch",
            json!({"url": "http://169.254.169.254/latest/meta-data/"}),
        )
        .await,
    );
    assert!(
        refused.contains("169.254.169.254 is a link-local address"),
        "{refused}"
    );
    let bad = error_text(
        &call(
            &client,
            "web_fetch",
            json!({"url": "https://example.org", "format": "pdf"}),
        )
        .await,
    );
    assert!(
        bad.contains("`format` must be \"markdown\" or \"text\""),
        "{bad}"
    );
    let _ = client.cancel().await;
}

/// What the tool server says of itself and of each tool, and numbers sent
/// as strings where the schema wants an integer (what the MCP inspector's
/// form sends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_names_itself_marks_every_tool_and_takes_a_number_in_a_string() {
    let engines = Engines::start().await;
    let pages = Fixture::start().await;
    pages.route("/crabs", Reply::html(PAGE));
    let home = TestHome::new(&engines.config("[fetch]\nallow_private = [\"127.0.0.1/32\"]\n"));
    let service = Service::start(&home.home()).await;
    let client = client(&service).await;
    let program = client.peer_info().unwrap().server_info.clone().unwrap();
    assert_eq!(
        (program.name.as_str(), program.version.as_str()),
        ("crabtalk-search", env!("CARGO_PKG_VERSION"))
    );

    let tools = client.list_all_tools().await.unwrap();
    for tool in &tools {
        let listed = serde_json::to_value(tool).unwrap();
        assert_eq!(
            listed["annotations"],
            json!({"title": listed["title"], "readOnlyHint": true, "destructiveHint": false,
                   "idempotentHint": true, "openWorldHint": true}),
            "{listed}"
        );
        assert!(listed["title"].is_string(), "{listed}");
    }
    assert_eq!(
        tools[0].input_schema["properties"]["count"]["type"],
        "integer"
    );
    assert_eq!(
        tools[1].input_schema["properties"]["max_chars"]["type"],
        "integer"
    );

    let found = call(
        &client,
        "web_search",
        json!({"query": "rust ownership", "count": "1"}),
    )
    .await;
    assert_eq!(found.is_error, Some(false), "{found:?}");
    let results = found.structured_content.unwrap()["results"].clone();
    assert_eq!(results.as_array().unwrap().len(), 1, "{results}");
    let page = call(
        &client,
        "web_fetch",
        json!({"url": format!("{}/crabs", pages.base_url()), "max_chars": "1"}),
    )
    .await;
    assert_eq!(page.is_error, Some(false), "{page:?}");
    assert_eq!(page.structured_content.unwrap()["truncated"], true);
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_nested_thousands_deep_neither_crash_the_service_nor_the_cli() {
    // What overflowed the stack of the HTML-to-Markdown writer and of
    // Readability: ~20 KB pages served as HTML.
    let pages = Fixture::start().await;
    let hostile = [
        ("bold", "<b>".repeat(3_000) + "x" + &"</b>".repeat(3_000)),
        ("quotes", "<blockquote>".repeat(3_000) + "x"),
        ("unclosed", "<a><b><i>".repeat(2_000) + "x"),
        ("divs", "<div>".repeat(50_000) + "x"),
    ];
    for (path, html) in &hostile {
        pages.route(&format!("/{path}"), Reply::html(html.clone()));
    }
    pages.route("/crabs", Reply::html(PAGE));
    let home = TestHome::new("[fetch]\nallow_private = [\"127.0.0.1/32\"]\n");
    let service = Service::start(&home.home()).await;
    let client = client(&service).await;
    for (path, _) in &hostile {
        let page = call(
            &client,
            "web_fetch",
            json!({"url": format!("{}/{path}", pages.base_url())}),
        )
        .await;
        assert_eq!(page.is_error, Some(false), "{path}: {page:?}");
        let structured = page.structured_content.clone().unwrap();
        assert_eq!(structured["content"], "x", "{path}: {structured}");
        assert!(
            structured["note"]
                .as_str()
                .unwrap()
                .contains("plain text, without links or layout"),
            "{path}: {structured}"
        );
    }
    // Still serving, and ordinary pages are read as before.
    let page = call(
        &client,
        "web_fetch",
        json!({"url": format!("{}/crabs", pages.base_url())}),
    )
    .await;
    assert!(
        page.content[0]
            .as_text()
            .unwrap()
            .text
            .starts_with("# Crab facts"),
        "{page:?}"
    );
    let _ = client.cancel().await;
    assert!(
        !service.log().contains("overflowed its stack"),
        "{}",
        service.log()
    );
    // The CLI runs the same code in its own process.
    let out = support::cli_async(
        home.path(),
        &["fetch", &format!("{}/bold", pages.base_url()), "--json"],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["content"], "x", "{answer}");
}

/// A JSON-RPC POST to the service's `/mcp`, answered as JSON or one SSE event.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (Option<String>, Option<Value>) {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.starts_with('{'))
        .map(|data| serde_json::from_str(data).unwrap())
        .or_else(|| serde_json::from_str(&text).ok());
    (session, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_sent_as_a_json_string_are_accepted() {
    let engines = Engines::start().await;
    let home = TestHome::new(&engines.config(""));
    let service = Service::start(&home.home()).await;
    crabtalk_kit::install_ring();
    let token = crabtalk_home::token::read_token(&home.home()).unwrap();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    let http = reqwest::Client::builder()
        .no_proxy()
        .default_headers(headers)
        .build()
        .unwrap();
    let url = service.url();
    let (session, init) = post(&http, &url, None, json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    }))
    .await;
    assert!(init.unwrap()["result"]["capabilities"]["tools"].is_object());
    let session = session.expect("a session id");
    let _ = post(
        &http,
        &url,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let (_, reply) = post(&http, &url, Some(&session), json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "web_search", "arguments": "{\"query\": \"rust ownership\", \"count\": 2, \"engines\": [\"bing\"]}"}
    }))
    .await;
    let result = &reply.unwrap()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_engine_shows_in_the_answer_in_engines_and_in_health() {
    let engines = Engines::start().await;
    engines
        .bing
        .route("/search", Reply::html(fixture("bing-captcha.html")));
    engines
        .duckduckgo
        .route("/html/", Reply::with_status(202, "text/html", ""));
    let home = TestHome::new(&engines.config(""));
    let service = Service::start(&home.home()).await;
    let client = client(&service).await;
    let found = call(&client, "web_search", json!({"query": "rust ownership"})).await;
    let answer = found.structured_content.unwrap();
    let status = |name: &str| {
        answer["engines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["engine"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(status("bing")["status"], "blocked", "{answer}");
    assert!(status("bing")["suspended_until"].is_string());
    assert_eq!(status("duckduckgo")["status"], "rate_limited");
    assert!(
        answer["note"]
            .as_str()
            .unwrap()
            .contains("2 of 6 engines did not answer"),
        "{answer}"
    );

    let listed = support::cli_async(home.path(), &["engines", "--json"]).await;
    assert!(listed.status.success(), "{}", text(&listed));
    let views: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let bing = views["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["engine"] == "bing")
        .unwrap()
        .clone();
    assert_eq!(bing["health"], "blocked");
    assert!(bing["suspended_until"].is_string(), "{bing}");
    let people = text(&support::cli_async(home.path(), &["engines"]).await);
    assert!(
        people.contains("duckduckgo")
            && people.contains("rate_limited")
            && people.contains("suspended until"),
        "{people}"
    );

    // `crabup ps` reads the same through GET /health.
    let port = service.port();
    let token = crabtalk_home::token::read_token(&service.home).unwrap();
    let health = crabtalk_testkit::HttpRequest::get(port, "/health")
        .bearer(&token)
        .send_async()
        .await
        .body;
    assert!(health.contains("bing blocked (suspended until"), "{health}");
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_in_the_daemon_calls_web_search_and_gets_fused_results() {
    let engines = Engines::start().await;
    let llm = ScriptedLlm::start().await;
    let daemon = TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
    let home = daemon.home();
    std::fs::create_dir_all(home.component_config_dir()).unwrap();
    std::fs::write(
        home.component_config("search.toml").unwrap(),
        engines.config(""),
    )
    .unwrap();
    let service = Service::start(&home).await;
    daemon.until_component_connected("crab", "search", 2).await;
    let client = daemon.client().await;
    llm.push(LlmReply::tools(vec![ToolCall::new(
        "call-1",
        "search__web_search",
        json!({"query": "rust ownership", "count": 3}),
    )]));
    llm.push(LlmReply::text("Ownership is a set of rules."));
    let turn = crabtalk_testkit::turn::Turn::run(
        &client,
        crabtalk_testkit::turn::message("crab", "user", "what is ownership in rust?"),
    )
    .await;
    assert_eq!(turn.text(), "Ownership is a set of rules.");
    let result = &turn.tool_results()[0];
    let answer: Value = serde_json::from_str(&result.output)
        .unwrap_or_else(|err| panic!("{err}: {result:?}\n{}", service.log()));
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0]["url"],
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
    let by: Vec<&str> = results[0]["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["engine"].as_str().unwrap())
        .collect();
    assert_eq!(by, ["duckduckgo", "bing", "mojeek", "brave", "searxng"]);
    // The model's second request carries the tool result.
    let second = llm.requests()[1].to_string();
    assert!(second.contains("what-is-ownership"), "{second}");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_service_sleeps() {
    let home = TestHome::new("");
    let service = Service::start(&home.home()).await;
    let idle = crabtalk_testkit::usage::measure_idle(service.pid(), Duration::from_secs(5))
        .await
        .unwrap();
    eprintln!("idle: {idle}");
    assert!(idle.core_share() <= 0.01, "{idle}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_fetch_that_waits_past_timeout_ms_for_a_slot_is_refused_naming_the_key() {
    // Pages that send a byte a second: each holds its fetch slot until the
    // fetch gives up at timeout_ms.
    let pages = Fixture::start().await;
    for path in ["/first", "/second", "/third"] {
        pages.route(
            path,
            Reply::Trickle {
                content_type: "text/html".into(),
            },
        );
    }
    let home = TestHome::new(
        "[fetch]\nallow_private = [\"127.0.0.1/32\"]\nmax_concurrent = 1\ntimeout_ms = 4000\n",
    );
    let service = Service::start(&home.home()).await;
    let client = client(&service).await;
    let fetch = |path: &str| {
        let peer = client.peer().clone();
        let args = json!({"url": format!("{}{path}", pages.base_url())});
        tokio::spawn(async move { peer.call_tool(support::tool_call("web_fetch", args)).await })
    };
    let first = fetch("/first");
    crabtalk_testkit::eventually("the first page asked for", || pages.hits() == 1).await;
    // Two more queue for the one slot while the first holds it. The one
    // that gets it next holds it for another 4 s; the other has waited
    // 4 s by then and is refused without reaching the page.
    let (second, third) = (fetch("/second"), fetch("/third"));
    let first = within("the first fetch", first).await.unwrap().unwrap();
    assert!(
        error_text(&first).contains("gave up after 4000 ms"),
        "{first:?}"
    );
    let mut answers = Vec::new();
    for call in [second, third] {
        answers.push(error_text(
            &within("a queued fetch", call).await.unwrap().unwrap(),
        ));
    }
    let (busy, ran): (Vec<&String>, Vec<&String>) = answers
        .iter()
        .partition(|text| text.contains("no fetch slot came free"));
    assert_eq!(busy.len(), 1, "{answers:?}");
    assert!(
        busy[0].contains(
            "no fetch slot came free within 4000 ms (1 at once, [fetch] max_concurrent in search.toml); try again shortly"
        ),
        "{busy:?}"
    );
    assert!(ran[0].contains("gave up after 4000 ms"), "{ran:?}");
    // The refused fetch sent nothing.
    assert_eq!(pages.hits(), 2, "{:?}", pages.seen());
    let _ = client.cancel().await;
}

/// 93,000 elements no deeper than 4 (within the shape limits, so it is
/// parsed and written whole): seconds of work in a debug build.
fn heavy_page() -> String {
    let items: String = (0..31_000)
        .map(|i| format!("<div><p>item {i} <a href=\"/i{i}?a=1&amp;b=2\">link</a></p></div>"))
        .collect();
    format!("<html><body>{items}</body></html>")
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_fetch_its_client_gives_up_stops_being_processed() {
    let pages = Fixture::start().await;
    pages.route("/heavy", Reply::html(heavy_page()));
    pages.route("/crabs", Reply::html(PAGE));
    // No deadline that would stop the work: only the cancellation may.
    let home = TestHome::new(
        "[fetch]\nallow_private = [\"127.0.0.1/32\"]\nprocess_ms = 120000\n[cache]\nttl_secs = 0\n",
    );
    let service = Service::start(&home.home()).await;
    let client = client(&service).await;
    let heavy = format!("{}/heavy", pages.base_url());
    let pending = {
        let peer = client.peer().clone();
        let args = json!({"url": heavy});
        tokio::spawn(async move { peer.call_tool(support::tool_call("web_fetch", args)).await })
    };
    crabtalk_testkit::eventually("the page to be in the works", || {
        service.log().contains("making the page readable")
    })
    .await;
    // The caller gives up: dropping an rmcp call sends
    // `notifications/cancelled`, as the daemon's calls do when their turn
    // is stopped.
    pending.abort();
    assert!(pending.await.unwrap_err().is_cancelled());
    crabtalk_testkit::eventually("the work to stop", || {
        service
            .log()
            .contains("stopped making the page readable: nobody waits for it any more")
    })
    .await;
    // And the process goes quiet rather than finishing the page unseen.
    let pid = service.pid();
    crabtalk_testkit::poll_until("the service's CPU use to settle", async || {
        let used = crabtalk_testkit::cpu::measure_cpu(pid, Duration::from_millis(500))
            .await
            .unwrap();
        (used.percent_of_a_core() < 10.0).then_some(())
    })
    .await;
    // The slots it held are free: the service reads the next page.
    let page = call(
        &client,
        "web_fetch",
        json!({"url": format!("{}/crabs", pages.base_url())}),
    )
    .await;
    assert_eq!(page.is_error, Some(false), "{page:?}");
    let _ = client.cancel().await;
}
