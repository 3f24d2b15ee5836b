//! The family as one, with the real binaries of this build: `crabup up`
//! starts `crabtalkd`, `crabtalk-cron`, `crabtalk-search` and
//! `crabtalk-telegram` with the process backend in a temp home (nothing is
//! installed: the built binaries are linked into the sandbox's
//! `$CARGO_HOME/bin`, and a cargo shim would record any install), against
//! a scripted model, search engines served from fixtures and a fake
//! Telegram Bot API, all on 127.0.0.1.
//!
//! The story: an allowed Telegram user asks a question, the model searches
//! the web (`search__web_search`), the answer arrives in the chat split and
//! formatted; the user asks for a reminder, the model schedules it
//! (`cron__cron_add` with `in: "2s"`), cron fires it in that user's
//! conversation, and the reply reaches the chat exactly once, with the run
//! log saying `delivered` and the message id. The search results reach the
//! chat as a summary (titles as links, engines), never as JSON. Then each
//! component is killed with SIGKILL in turn: its supervisor starts it
//! again within its backoff, counted in `ps`, and its tools come back; and
//! killed with its supervisor, it stays down: the daemon and the others
//! keep serving, the killed one's tools are no longer offered, a call of
//! one of them is answered with how to start it, `ps` says it failed and
//! exits 3, and `crabup <it> start` brings it and its tools back.

use crabtalk_fake_bot_api::{FakeBotApi, TOKEN, TgUser};
use crabtalk_home::Home;
use crabtalk_proto::Client;
use crabtalk_proto::msg::{ListMcpsMsg, McpStatus};
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall};
use serde_json::{Value, json};

use crate::support::{Sandbox, TIMEOUT, built, kill, stdout, wait_for};

/// The services `up` starts here, and their binaries.
pub(crate) const SERVICES: [(&str, &str); 4] = [
    ("daemon", "crabtalkd"),
    ("cron", "crabtalk-cron"),
    ("search", "crabtalk-search"),
    ("telegram", "crabtalk-telegram"),
];

/// The components, each with the prefix of the tools it offers agents.
pub(crate) const COMPONENTS: [&str; 3] = ["cron", "search", "telegram"];

/// Everything on 127.0.0.1 the family talks to, on a runtime of the test.
pub(crate) struct World {
    pub runtime: tokio::runtime::Runtime,
    pub llm: ScriptedLlm,
    pub api: FakeBotApi,
    engines: String,
}

impl World {
    pub(crate) fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (llm, api, engines) = runtime.block_on(async {
            (
                ScriptedLlm::start().await,
                FakeBotApi::start().await,
                crabtalk_testkit::fixture_engines().await,
            )
        });
        Self {
            runtime,
            llm,
            api,
            engines,
        }
    }

    /// The sandbox: the built binaries "installed", and a config for each.
    pub(crate) fn sandbox(&self) -> Sandbox {
        let sandbox = Sandbox::new().with_cargo_shim();
        let bin = sandbox.cargo_home.join("bin");
        for (_, binary) in SERVICES {
            std::os::unix::fs::symlink(built(binary), bin.join(binary)).unwrap();
        }
        std::os::unix::fs::symlink(built("crabtalk-tui"), bin.join("crabtalk-tui")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_crabup"), bin.join("crabup")).unwrap();
        let config = sandbox.home.join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            sandbox.home.join("config.toml"),
            TestDaemon::config_for(&self.llm.base_url()),
        )
        .unwrap();
        std::fs::write(
            config.join("search.toml"),
            format!(
                "[engines.wikipedia]\nbase_url = \"{0}\"\n\n[engines.duckduckgo]\nbase_url = \"{0}\"\n\n\
                 [engines.bing]\nenabled = false\n\n[engines.mojeek]\nenabled = false\n",
                self.engines
            ),
        )
        .unwrap();
        crabtalk_home::write_atomic_private(
            &config.join("telegram.toml"),
            format!(
                "token = \"{TOKEN}\"\napi_base_url = \"{}\"\nallow = [111]\npoll_timeout_secs = 5\n",
                self.api.url()
            )
            .as_bytes(),
        )
        .unwrap();
        sandbox
    }

    pub(crate) fn client(&self, home: &Home) -> Client {
        self.runtime
            .block_on(crabtalk_kit::daemon::connect(home))
            .unwrap()
    }

    /// Waits until the daemon says the MCP `name` is connected with tools
    /// (`connected`), or that it is not (`!connected`).
    pub(crate) fn wait_mcp(&self, client: &Client, name: &str, connected: bool) {
        self.runtime.block_on(crabtalk_testkit::poll_until(
            &format!("{name} connected = {connected} in ListMcps"),
            async || {
                let list = client
                    .list_mcps(ListMcpsMsg {
                        agent: "crab".into(),
                    })
                    .await
                    .unwrap();
                let up = list.mcps.iter().any(|mcp| {
                    mcp.name == name
                        && mcp.status == McpStatus::Connected as i32
                        && mcp.tool_count > 0
                });
                (up == connected).then_some(())
            },
        ));
    }

    /// Runs a turn from the daemon's own user; the tools the model was
    /// offered in it.
    pub(crate) fn offered_tools(&self, client: &Client) -> Vec<String> {
        self.llm.push(Reply::text("still here"));
        let before = self.llm.requests().len();
        let turn = self.runtime.block_on(Turn::run(
            client,
            message("crab", "user", "which tools do you have?"),
        ));
        assert_eq!(turn.text(), "still here");
        tool_names(&self.llm.requests()[before])
    }

    /// Alice writes; waits until the chat shows `expect`.
    pub(crate) fn alice_says(&self, text: &str, expect: &str) {
        self.api.text(&alice(), text);
        self.runtime
            .block_on(self.api.wait_for_text(alice().id, expect));
    }
}

pub(crate) fn alice() -> TgUser {
    TgUser::new(111, "Alice")
}

/// The tool names of an OpenAI request body.
pub(crate) fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

pub(crate) fn has_tools_of(tools: &[String], component: &str) -> bool {
    let prefix = format!("{component}__");
    tools.iter().any(|tool| tool.starts_with(&prefix))
}

/// Whether `ps` shows `name` running, healthy, with a port.
pub(crate) fn healthy(row: &Value) -> bool {
    row["state"] == "running" && row["port"].as_u64().is_some() && row["health"]["status"] == "ok"
}

pub(crate) fn wait_healthy(sandbox: &Sandbox, name: &str) -> Value {
    wait_for(&format!("{name} healthy in ps"), TIMEOUT, || {
        let row = sandbox.ps_row(name);
        healthy(&row).then_some(row)
    })
}

/// The cron run log's records.
fn cron_runs(sandbox: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sandbox.home.join("logs/cron-runs.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// A long answer in Markdown: past Telegram's 4,096 units, so it is split.
fn long_answer() -> String {
    let mut text = String::from("**Rust** is a systems programming language.\n\n");
    for n in 1..=60 {
        text.push_str(&format!(
            "Point {n}: ownership rules keep memory safe without a garbage collector.\n"
        ));
    }
    text.push_str("\nThat is the end of the answer.");
    text
}

#[test]
fn the_family_serves_a_telegram_user_searches_reminds_and_survives_each_component_dying() {
    let clock = std::time::Instant::now();
    let step = |what: &str| eprintln!("family: {:>6.1}s {what}", clock.elapsed().as_secs_f64());
    let world = World::start();
    let sandbox = world.sandbox();
    let home = Home::new(&sandbox.home);

    // `crabup up`: everything is installed already, so nothing is built;
    // it starts the four services and ends with ps and the next command.
    let out = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "30")
        .output()
        .unwrap();
    let said = stdout(&out);
    assert!(
        out.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        sandbox.cargo_calls().is_empty(),
        "{:?}",
        sandbox.cargo_calls()
    );
    assert!(said.contains("NAME") && said.contains("HEALTH"), "{said}");
    assert!(said.contains("Next: "), "{said}");
    assert!(said.contains("crabtalk-tui"), "{said}");

    // ps --json: four healthy services with ports.
    for (name, _) in SERVICES {
        wait_healthy(&sandbox, name);
    }
    let rows = sandbox.ps();
    let up: Vec<&str> = rows
        .iter()
        .filter(|row| healthy(row))
        .map(|row| row["name"].as_str().unwrap())
        .collect();
    assert_eq!(up, ["daemon", "telegram", "search", "cron"], "{rows:?}");

    step("up and healthy");
    let client = world.client(&home);
    for component in COMPONENTS {
        world.wait_mcp(&client, component, true);
    }
    // The gateway follows the daemon's events before Alice writes, so the
    // relay of cron's turn cannot be missed.
    wait_for("the gateway to follow the daemon", TIMEOUT, || {
        std::fs::read_to_string(sandbox.home.join("logs/telegram.log"))
            .ok()?
            .contains("following the daemon's events")
            .then_some(())
    });

    step("mcps connected");
    // A question: the model searches, the answer arrives split and
    // formatted.
    world.llm.push(Reply::tools(vec![ToolCall::new(
        "search-1",
        "search__web_search",
        json!({"query": "rust programming language", "count": 3}),
    )]));
    world.llm.push(Reply::text(&long_answer()));
    world.alice_says("What is Rust?", "That is the end of the answer.");
    let requests = world.llm.requests();
    // The gateway's own tools are not offered in the turns it starts (it
    // is their trigger); the others are.
    let offered = tool_names(&requests[0]);
    assert!(
        has_tools_of(&offered, "search") && has_tools_of(&offered, "cron"),
        "{offered:?}"
    );
    assert!(!has_tools_of(&offered, "telegram"), "{offered:?}");
    assert!(has_tools_of(&world.offered_tools(&client), "telegram"));
    let tool_result = requests[1]["messages"].to_string();
    assert!(
        tool_result.contains("Rust (programming language)"),
        "the search result did not reach the model: {tool_result}"
    );
    let messages = world.api.messages(alice().id);
    assert!(messages.len() >= 2, "not split: {messages:?}");
    assert!(
        messages
            .iter()
            .all(|m| m.text.encode_utf16().count() <= 4096),
        "{messages:?}"
    );
    assert_eq!(
        messages[0]
            .html
            .as_deref()
            .map(|h| h.contains("<b>Rust</b>")),
        Some(true),
        "{:?}",
        messages[0]
    );
    let shown: String = messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        shown.contains("Point 1: ownership") && shown.contains("Point 60: ownership"),
        "{shown}"
    );
    assert!(!shown.contains("**"), "{shown}");
    // The search, as a person reads it: its name as it is, the hits as
    // links with their engines — not the JSON the model read.
    let html: String = messages.iter().filter_map(|m| m.html.clone()).collect();
    assert!(html.contains("<i>search__web_search</i>"), "{html}");
    assert!(
        html.contains("results for \"rust programming language\"")
            && html.contains(
                "/wiki/Rust_(programming_language)\">Rust (programming language)</a> · wikipedia"
            ),
        "{html}"
    );
    assert!(
        !shown.contains("\"engines\"") && !shown.contains("{\""),
        "{shown}"
    );

    step("question answered");
    // A reminder: cron_add with `in`, cron fires it in Alice's
    // conversation, the reply reaches her chat once.
    world.llm.push(Reply::tools(vec![ToolCall::new(
        "cron-1",
        "cron__cron_add",
        json!({"in": "2s", "message": "Remind Alice to stretch"}),
    )]));
    world
        .llm
        .push(Reply::text("I will remind you in 2 seconds."));
    world.llm.push(Reply::text("Time to stretch, Alice!"));
    world.alice_says("Remind me in 2 seconds to stretch", "I will remind you");
    let added = world.llm.requests()[4]["messages"].to_string();
    assert!(
        added.contains("Remind Alice to stretch"),
        "cron_add answered: {added}"
    );
    let run = wait_for("the fire delivered in the run log", TIMEOUT, || {
        cron_runs(&sandbox)
            .into_iter()
            .find(|run| run["delivery"]["status"] == "delivered" && run["status"] == "ok")
    });
    let sent = world.runtime.block_on(
        world
            .api
            .wait_for_text(alice().id, "Time to stretch, Alice!"),
    );
    assert_eq!(run["delivery"]["to"], "telegram:111", "{run}");
    assert_eq!(run["delivery"]["message_ids"], json!([sent.id]), "{run}");
    // The turn ran in Alice's conversation: the model saw her question.
    let fired = world.llm.requests()[5].clone();
    let context = fired["messages"].to_string();
    assert!(
        context.contains("What is Rust?") && context.contains("Remind Alice to stretch"),
        "{context}"
    );
    // Exactly once: one more exchange, then count.
    world.llm.push(Reply::text("marker"));
    world.alice_says("thanks", "marker");
    let reminders = world
        .api
        .messages(alice().id)
        .into_iter()
        .filter(|m| m.text.contains("Time to stretch"))
        .count();
    assert_eq!(reminders, 1, "{:?}", world.api.messages(alice().id));
    let logs = sandbox.ok(&["cron", "logs", "-n", "50"]);
    assert!(
        logs.lines()
            .any(|line| line.contains("fired") && line.contains("delivery=delivered")),
        "{logs}"
    );

    step("reminder delivered");
    for dead in COMPONENTS {
        // Killed: its supervisor starts it again, and its tools come back.
        let pid = sandbox.ps_row(dead)["pid"].as_u64().unwrap() as u32;
        kill(pid, libc::SIGKILL);
        let back = wait_for(&format!("{dead} back on its own"), TIMEOUT, || {
            let row = sandbox.ps_row(dead);
            (healthy(&row) && row["pid"].as_u64() != Some(u64::from(pid))).then_some(row)
        });
        assert_eq!(back["restarts"], 1, "{back}");
        assert_eq!(back["last_exit"], "killed by signal 9 (SIGKILL)", "{back}");
        step(&format!("{dead} restarted by its supervisor"));
        world.wait_mcp(&client, dead, true);

        // Killed with its supervisor: it stays down.
        let file = sandbox.pid_file(dead).unwrap();
        kill(file.supervisor.unwrap(), libc::SIGKILL);
        kill(file.pid, libc::SIGKILL);
        wait_for(&format!("{dead} failed in ps"), TIMEOUT, || {
            (sandbox.ps_row(dead)["state"] == "failed").then_some(())
        });
        step(&format!("{dead} failed in ps"));
        let ps = sandbox.crabup(&["ps"]);
        assert_eq!(ps.status.code(), Some(3), "{}", stdout(&ps));
        assert!(
            stdout(&ps).contains(&format!("↳ fix: crabup {dead} start")),
            "{}",
            stdout(&ps)
        );
        let doctor = sandbox.crabup(&["doctor"]);
        let text = stdout(&doctor);
        assert!(!doctor.status.success(), "{text}");
        assert!(
            text.contains(&format!("[FAIL] {dead} service: failed")),
            "{text}"
        );
        world.wait_mcp(&client, dead, false);
        step(&format!("{dead} gone from ListMcps"));
        let tools = world.offered_tools(&client);
        assert!(!has_tools_of(&tools, dead), "{dead}: {tools:?}");
        for alive in COMPONENTS.iter().filter(|c| **c != dead) {
            assert!(
                has_tools_of(&tools, alive),
                "{alive} with {dead} dead: {tools:?}"
            );
            assert!(healthy(&sandbox.ps_row(alive)), "{alive} with {dead} dead");
        }
        assert!(
            healthy(&sandbox.ps_row("daemon")),
            "the daemon with {dead} dead"
        );
        if dead == "search" {
            // The model calls a tool of the stopped component (as it did
            // before): it is told what is wrong and how to fix it.
            world.llm.push(Reply::tools(vec![ToolCall::new(
                "search-2",
                "search__web_search",
                json!({"query": "rust"}),
            )]));
            world.llm.push(Reply::text("search is down"));
            let before = world.llm.requests().len();
            world.alice_says("search again", "search is down");
            let answered = world.llm.requests()[before + 1]["messages"].to_string();
            assert!(
                answered.contains("crabtalk-search is not running")
                    && answered.contains("start it with `crabup search start`"),
                "{answered}"
            );
            assert!(!answered.contains("there is no tool named"), "{answered}");
        } else if dead != "telegram" {
            world
                .llm
                .push(Reply::text(&format!("served without {dead}")));
            world.alice_says("are you there?", &format!("served without {dead}"));
        }

        let started = sandbox.ok(&[dead, "start"]);
        assert!(started.contains(&format!("{dead} started")), "{started}");
        step(&format!("{dead} started"));
        wait_healthy(&sandbox, dead);
        world.wait_mcp(&client, dead, true);
        step(&format!("{dead} back in ListMcps"));
        let text = stdout(&sandbox.crabup(&["doctor"]));
        for component in COMPONENTS {
            assert!(
                text.contains(&format!("[ok  ] {component} service: running")),
                "{text}"
            );
        }
        assert!(
            text.contains("[ok  ] telegram.toml: parses; token set; 1 user allowed"),
            "{text}"
        );
        let tools = world.offered_tools(&client);
        for component in COMPONENTS {
            assert!(
                has_tools_of(&tools, component),
                "after {dead} start: {tools:?}"
            );
        }
    }
    world.llm.push(Reply::text("back in the chat"));
    world.alice_says("still there?", "back in the chat");
}
