//! The binary's command line: `search`, `fetch` and `engines` on the same
//! code as the service, its exit codes, and what it says about a broken
//! `search.toml`.

use crate::support;

use support::{Engines, Fixture, Reply, TestHome, cli_async, text};

#[test]
fn the_library_cli_is_the_binarys() {
    let command = crabtalk_search::cli::command();
    assert_eq!(command.get_name(), "crabtalk-search");
    let names: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
    // `check` is the kit's, as every component's.
    assert_eq!(names, ["run", "search", "fetch", "engines", "check"]);
    assert_eq!(crabtalk_search::cli::service().name(), "search");
    let home = tempfile::tempdir().unwrap();
    let help = support::cli(home.path(), &["--help"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("search.toml") && help.contains("crabup search"),
        "{help}"
    );
    for bad in [&[][..], &["start"], &["run", "extra"], &["search"]] {
        assert_eq!(
            support::cli(home.path(), bad).status.code(),
            Some(2),
            "{bad:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_prints_fused_results_and_every_engine() {
    let engines = Engines::start().await;
    let home = TestHome::new(&engines.config(""));
    let out = cli_async(home.path(), &["search", "rust", "ownership", "-n", "3"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.starts_with(" 1. What is Ownership? - The Rust Programming Language\n    https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"), "{shown}");
    assert!(
        shown.contains("duckduckgo#1 bing#1 mojeek#2 brave#1 searxng#1"),
        "{shown}"
    );
    assert!(shown.contains("wikipedia  ok, 3 results"), "{shown}");
    let json = cli_async(
        home.path(),
        &[
            "search",
            "rust ownership",
            "--engines",
            "wikipedia",
            "--json",
        ],
    )
    .await;
    let answer: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(answer["results"].as_array().unwrap().len(), 3);
    assert_eq!(answer["engines"][0]["status"], "not_requested");
    // A result shown with the URL an engine gave, tracking parameters
    // and all, is shown clean (as it is keyed for de-duplication).
    let ddg = cli_async(
        home.path(),
        &["search", "rust", "--engines", "duckduckgo", "-n", "10"],
    )
    .await;
    let shown = String::from_utf8_lossy(&ddg.stdout);
    assert!(
        shown.contains("\n    http://www.rust-lang.org/learn/\n") && !shown.contains("utm_"),
        "{shown}"
    );
    let bad = cli_async(home.path(), &["search", "x", "-n", "50"]).await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad).contains("-n/--count must be a whole number from 1 to 20"),
        "{}",
        text(&bad)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_with_every_engine_failing_exits_1_and_says_why() {
    let engines = Engines::start().await;
    for server in [
        &engines.duckduckgo,
        &engines.bing,
        &engines.mojeek,
        &engines.wikipedia,
        &engines.brave,
        &engines.searxng,
    ] {
        server.fallback(Reply::with_status(429, "text/plain", "slow down"));
    }
    for (server, path) in [
        (&engines.duckduckgo, "/html/"),
        (&engines.bing, "/search"),
        (&engines.mojeek, "/search"),
        (&engines.wikipedia, "/w/api.php"),
        (&engines.brave, "/res/v1/web/search"),
        (&engines.searxng, "/search"),
    ] {
        server.route(path, Reply::with_status(429, "text/plain", "slow down"));
    }
    let home = TestHome::new(&engines.config(""));
    let out = cli_async(home.path(), &["search", "rust"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("no engine answered") && said.contains("bing       rate_limited"),
        "{said}"
    );
    // The suspensions are in the health file: the next CLI run skips them.
    let again = text(&cli_async(home.path(), &["search", "rust"]).await);
    assert!(again.contains("bing       suspended"), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_prints_the_page_or_the_refusal() {
    let pages = Fixture::start().await;
    pages.route("/p", Reply::html("<html><head><title>T</title></head><body><article><h1>T</h1><p>Some text about crabs, long enough to count as the content of a page that someone might want to read in full.</p></article></body></html>"));
    let home = TestHome::new("");
    let url = format!("{}/p", pages.base_url());
    let refused = cli_async(home.path(), &["fetch", &url]).await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused).contains("127.0.0.1 is a loopback address"),
        "{}",
        text(&refused)
    );
    assert_eq!(pages.hits(), 0);
    home.write_config("[fetch]\nallow_private = [\"127.0.0.1/32\"]\n");
    let out = cli_async(home.path(), &["fetch", &url, "--text"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Some text about crabs"));
    let json = cli_async(home.path(), &["fetch", &url, "--json", "--max-chars", "10"]).await;
    let answer: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(answer["truncated"], true);
}

#[test]
fn a_broken_search_toml_exits_78_naming_file_line_and_column() {
    for (config, says) in [
        (
            "[engines.bing]\nweight = -1.0\n",
            "search.toml:2:1: engines.bing.weight: must be a number above 0",
        ),
        (
            "[engines.altavista]\nenabled = true\n",
            "search.toml:1:10: unknown key `altavista` in [engines]",
        ),
        ("[fetch]\nmax_bytes = \"lots\"\n", "search.toml:2:13:"),
    ] {
        let home = TestHome::new(config);
        for args in [&["run"][..], &["engines"], &["search", "x"]] {
            let out = home.cli(args);
            assert_eq!(out.status.code(), Some(78), "{args:?}: {}", text(&out));
            assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_proxies_are_not_used() {
    let proxy = Fixture::start().await;
    proxy.fallback(Reply::html("<p>from the proxy</p>"));
    let page = Fixture::start_on("127.0.0.2").await;
    page.route(
        "/p",
        Reply::with_status(200, "text/plain", "straight from the page"),
    );
    let engines = Engines::start().await;
    let home = TestHome::new(&engines.config("[fetch]\nallow_private = [\"127.0.0.2/32\"]\n"));
    let proxy_url = proxy.base_url();
    let url = format!("{}/p", page.base_url());
    let home_path = home.path().to_owned();
    let run = |args: Vec<String>| {
        let home_path = home_path.clone();
        let proxy_url = proxy_url.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(support::BIN)
                .args(&args)
                .env("CRABTALK_HOME", &home_path)
                .env("BRAVE_TEST_KEY", "k")
                .env("HTTP_PROXY", &proxy_url)
                .env("http_proxy", &proxy_url)
                .env("HTTPS_PROXY", &proxy_url)
                .env("ALL_PROXY", &proxy_url)
                .env_remove("NO_PROXY")
                .env_remove("no_proxy")
                .output()
                .unwrap()
        })
    };
    let fetched = run(vec!["fetch".into(), url]).await.unwrap();
    assert!(fetched.status.success(), "{}", text(&fetched));
    assert!(String::from_utf8_lossy(&fetched.stdout).contains("straight from the page"));
    let searched = run(vec![
        "search".into(),
        "rust".into(),
        "--engines".into(),
        "bing".into(),
    ])
    .await
    .unwrap();
    assert!(searched.status.success(), "{}", text(&searched));
    assert_eq!(proxy.hits(), 0, "nothing went through the proxy");
    assert_eq!(page.hits(), 1);
}

/// A command prints what it was asked and nothing of the service's log:
/// the env file's key is loaded (the engines table says Brave is on) but
/// no `INFO … loaded BRAVE_API_KEY` line comes with it.
#[test]
fn a_command_prints_its_answer_without_log_lines() {
    let home = TestHome::new("[engines.searxng]\nenabled = false\n");
    std::fs::write(home.path().join("env"), "BRAVE_API_KEY=from-the-env-file\n").unwrap();
    let out = home.cli(&["engines"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown
            .lines()
            .any(|line| line.starts_with("brave") && line.contains(" on ")),
        "{shown}"
    );
}
