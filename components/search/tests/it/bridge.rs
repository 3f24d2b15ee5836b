//! `web_search` and `web_fetch` offered to an MCP host by `crabtalkd mcp`
//! (RFC 0022): the real crabtalk-search service in a daemon's home, the
//! engines served from fixtures, and the bridge found by the host as it
//! is by the daemon — through `run/search.port`, with the owner's token.
//! Driven by an rmcp client over the bridge's stdio, and by the official
//! MCP Python SDK and the MCP inspector's CLI where the machine has them.

use crabtalk_testkit::bridge::{BridgeProcess, HostEvent, TestHost, text_of};
use crabtalk_testkit::mcp_host::{Inspector, PythonHost};
use crabtalk_testkit::{ScriptedLlm, TestDaemon, daemon_binary};
use serde_json::{Value, json};

use crate::support::{Engines, Service};

/// A daemon, with search configured at the fixture engines and running.
async fn world() -> (Engines, ScriptedLlm, TestDaemon, Service) {
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
    (engines, llm, daemon, service)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_searches_the_web_through_the_bridge() {
    let (engines, _llm, daemon, service) = world().await;
    let host = TestHost::new();
    let bridge = BridgeProcess::start(&daemon_binary(), daemon.path(), host.clone()).await;
    // search started before the bridge: its tools are there from the
    // start, or arrive with a list change.
    let tools = crabtalk_testkit::within("web_search in tools/list", async {
        loop {
            let tools = bridge.tools().await;
            if tools.iter().any(|tool| tool.name == "web_search") {
                return tools;
            }
            let seen = host.events().len();
            bridge
                .wait_for("the tool list to change", |events| {
                    events[seen..].contains(&HostEvent::ToolsChanged)
                })
                .await;
        }
    })
    .await;
    let search = tools.iter().find(|tool| tool.name == "web_search").unwrap();
    assert_eq!(search.title.as_deref(), Some("Search the web"));
    let hints = search.annotations.clone().unwrap();
    assert_eq!(
        (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.open_world_hint
        ),
        (Some(true), Some(false), Some(true))
    );
    assert!(tools.iter().any(|tool| tool.name == "web_fetch"));

    let result = bridge
        .call("web_search", json!({"query": "rust ownership", "count": 3}))
        .await;
    assert_ne!(
        result.is_error,
        Some(true),
        "{}\n{}",
        text_of(&result),
        service.log()
    );
    let answer = serde_json::to_value(&result).unwrap()["structuredContent"].clone();
    let results = answer["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0]["url"],
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
    // It went to the engines, through the component.
    assert!(engines.duckduckgo.hits() > 0 && engines.wikipedia.hits() > 0);
    // And the component's own refusal comes back as its error result.
    let refused = bridge.call("web_search", json!({"query": ""})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text_of(&refused));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_searches_the_web_through_the_bridge() {
    let Some(python) = PythonHost::find("the_python_sdk_searches_the_web_through_the_bridge")
    else {
        return;
    };
    let (_engines, _llm, daemon, service) = world().await;
    // The bridge the script starts connects to search at once; wait for
    // nothing but search's port file (Service::start did).
    let seen = python
        .run(
            "call",
            &daemon_binary(),
            daemon.path(),
            &[
                "--tool",
                "web_search",
                "--arguments",
                r#"{"query": "rust ownership", "count": 2}"#,
            ],
        )
        .await;
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"web_search") && names.contains(&"ask_agent"),
        "{names:?}"
    );
    let result = &seen["result"];
    assert_eq!(result["isError"], false, "{seen}\n{}", service.log());
    let results: &Value = &result["structured"]["results"];
    assert_eq!(results.as_array().map(Vec::len), Some(2), "{seen}");
    assert_eq!(
        results[0]["url"],
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
}

/// The inspector's CLI starts a bridge, lists once and calls at once: the
/// search that was running before it is there from the first answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_searches_the_web_through_the_bridge() {
    let test = "the_mcp_inspector_searches_the_web_through_the_bridge";
    let Some(inspector) = Inspector::find(test) else {
        return;
    };
    let (engines, _llm, daemon, service) = world().await;
    let Some(called) = inspector
        .run(
            test,
            &daemon_binary(),
            daemon.path(),
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "web_search",
                "--tool-arg",
                "query=rust ownership",
            ],
        )
        .await
    else {
        return;
    };
    assert_ne!(called["isError"], true, "{called}\n{}", service.log());
    let results = called["structuredContent"]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{called}"));
    assert_eq!(
        results[0]["url"],
        "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
    );
    assert!(engines.duckduckgo.hits() > 0);
}
