//! End to end: the real `crabtalk-cron` service, the real daemon and a
//! scripted model; MCP through a real rmcp client; delivery through a real
//! rmcp server standing in for the telegram component.

use crate::support;

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use crabtalk_cron::{StateFile, Status};
use crabtalk_home::PortFile;
use crabtalk_testkit::{Reply, eventually, within};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};
use support::{Setup, text};

fn in_secs(secs: i64) -> String {
    (Utc::now() + chrono::Duration::seconds(secs))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_every_second_entry_fires_at_least_five_times_in_a_row_without_drift() {
    let mut setup =
        Setup::start("[[cron]]\nid = \"tick\"\nevery = \"1s\"\nmessage = \"tick\"\n").await;
    setup.llm.set_default(Reply::text("tock"));
    setup.start_cron(&[]).await;
    // Five slots in a row, each run started within a second of its slot
    // and answered. (Under a loaded machine a slot may overlap a slow turn;
    // the streak is looked for until it shows up.)
    let on_time = |run: &crabtalk_cron::RunRecord| {
        run.status == Status::Ok
            && run.reply.as_deref() == Some("tock")
            && run.started.is_some_and(|started| {
                let late = started - run.scheduled;
                late >= chrono::Duration::zero() && late < chrono::Duration::seconds(1)
            })
    };
    let streak = |runs: &[crabtalk_cron::RunRecord]| {
        let ok: Vec<_> = runs
            .iter()
            .filter(|r| on_time(r))
            .map(|r| r.scheduled)
            .collect();
        ok.windows(5).any(|five| {
            five.windows(2)
                .all(|pair| pair[1] - pair[0] == chrono::Duration::seconds(1))
        })
    };
    eventually("five on-time runs in a row", || streak(&setup.runs())).await;
    setup.kill9_cron();
    // No slot ran twice.
    let runs = setup.runs();
    let mut slots: Vec<_> = runs
        .iter()
        .filter(|r| r.status == Status::Ok)
        .map(|r| r.scheduled)
        .collect();
    let all = slots.len();
    slots.dedup();
    assert_eq!(slots.len(), all, "{runs:?}");
    // The turns ran in the cron conversation.
    let turns = setup.llm.requests();
    assert!(turns.iter().any(|body| body.to_string().contains("tick")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_down_at_a_slot_is_retried_within_the_window_then_recorded_error() {
    let crons = format!(
        "[[cron]]\nid = \"late\"\nat = \"{}\"\nmessage = \"m\"\nmissed_within = \"60s\"\n\n[[cron]]\nid = \"lost\"\nat = \"{}\"\nmessage = \"m\"\nmissed_within = \"2s\"\n",
        in_secs(2),
        in_secs(2)
    );
    let mut setup = Setup::start(&crons).await;
    setup.daemon.stop().await;
    setup.start_cron(&[]).await;
    let lost = setup
        .runs_where("the lost slot", 1, |r| r.entry == "lost")
        .await;
    assert_eq!(lost[0].status, Status::Error);
    assert!(
        lost[0]
            .error
            .as_deref()
            .unwrap()
            .contains("the daemon did not answer"),
        "{:?}",
        lost[0]
    );
    // The daemon comes back while `late` is still retrying.
    setup.daemon.spawn().await;
    let late = setup
        .runs_where("the retried slot", 1, |r| r.entry == "late")
        .await;
    assert_eq!(late[0].status, Status::Ok, "{:?}", late[0]);
    // A one-shot that succeeded is removed; the failed one stays.
    let crons_path = setup.home().component_config_dir().join("crons.toml");
    eventually("late removed", || {
        !std::fs::read_to_string(&crons_path)
            .unwrap()
            .contains("\"late\"")
    })
    .await;
    assert!(
        std::fs::read_to_string(&crons_path)
            .unwrap()
            .contains("\"lost\"")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_run_the_slot_is_unknown_after_restart_and_nothing_fires_twice() {
    let crons = format!(
        "[[cron]]\nid = \"slow\"\nat = \"{}\"\nmessage = \"m\"\nmissed = \"once\"\n",
        in_secs(2)
    );
    let mut setup = Setup::start(&crons).await;
    setup.llm.push(Reply::Gated("finally".into()));
    setup.start_cron(&[]).await;
    setup.llm.wait_for_requests(1).await;
    let state = StateFile::of(&setup.home());
    assert!(
        state.load_quietly().entries["slow"].running.is_some(),
        "claimed on disk before firing"
    );
    setup.kill9_cron();
    setup.start_cron(&[]).await;
    let unknown = setup
        .runs_where("the unknown record", 1, |r| r.status == Status::Unknown)
        .await;
    assert_eq!(unknown[0].entry, "slow");
    setup.llm.release();
    // The service's answer to cron_list comes after its start-up and first
    // tick, so whatever it would fire has fired by then.
    let listed = setup.cli(&["list", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed));
    assert_eq!(
        setup.llm.requests().len(),
        1,
        "the slot was not fired again"
    );
    assert_eq!(setup.runs().len(), 1, "{:?}", setup.runs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_service_for_the_same_home_says_so_and_exits_1() {
    let mut setup = Setup::start("").await;
    setup.start_cron(&[]).await;
    let second = setup.cli(&["run"]);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    assert!(
        text(&second).contains("another crabtalk-cron (pid"),
        "{}",
        text(&second)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_on_a_file_it_cannot_read_is_refused_with_78_and_where() {
    let setup = Setup::start("[[cron]]\nid = \"a\"\nevry = \"5m\"\nmessage = \"m\"\n").await;
    // Not a scheduler with every schedule silently gone: no start at all.
    let run = setup.cli(&["run"]);
    assert_eq!(run.status.code(), Some(78), "{}", text(&run));
    assert!(
        text(&run).contains("crons.toml:3:1: unknown key `evry`"),
        "{}",
        text(&run)
    );
    assert!(!setup.home().port_file("cron").unwrap().exists());
    // `check` says the same without starting anything; a one-shot command
    // logs no INFO lines around what it prints.
    let check = setup.cli(&["check"]);
    assert_eq!(check.status.code(), Some(78), "{}", text(&check));
    assert_eq!(
        text(&check).lines().count(),
        1,
        "only the problem: {}",
        text(&check)
    );
    support::write_crons(
        setup.daemon.path(),
        "[[cron]]\nid = \"a\"\nevery = \"5m\"\nmessage = \"m\"\n",
    );
    let check = setup.cli(&["check"]);
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        text(&check).contains("the service would take it (1 entry, 1 enabled)"),
        "{}",
        text(&check)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edit_is_picked_up_by_notify_and_by_polling_alone() {
    for env in [&[][..], &[("CRABTALK_CRON_WATCH", "poll")][..]] {
        let mut setup = Setup::start("").await;
        setup.start_cron(env).await;
        let edited = Utc::now();
        support::write_crons(
            setup.daemon.path(),
            "[[cron]]\nid = \"new\"\nevery = \"1s\"\nmessage = \"m\"\n",
        );
        let first = setup
            .runs_where("the new entry's first run", 1, |r| r.entry == "new")
            .await;
        // The poll period is 2 s and the entry fires every second.
        let picked_up = first[0].scheduled - edited;
        assert!(
            picked_up <= chrono::Duration::seconds(4),
            "{env:?}: first slot {picked_up} after the edit"
        );
        // A broken edit keeps the last good schedule running.
        support::write_crons(
            setup.daemon.path(),
            "[[cron]]\nid = \"new\"\nevery = \"1s\"\nmessage = \"unterminated\n",
        );
        eventually("the error in the log", || {
            setup.cron_log().contains("crons.toml:4:24: not valid TOML")
                && setup
                    .cron_log()
                    .contains("the last good schedule keeps running (1 entry)")
        })
        .await;
        // ... and in `GET /health` (what `crabup ps` shows), which says the
        // schedule keeps running rather than that the file is not used.
        let problems = setup.health()["problems"].to_string();
        assert!(
            problems.contains("crons.toml:4:24: not valid TOML")
                && problems.contains("the last good schedule keeps running (1 entry)"),
            "{problems}"
        );
        let before = setup.runs().len();
        setup
            .runs_where("runs after the broken edit", before + 2, |r| {
                r.entry == "new"
            })
            .await;
        let reported = setup
            .cron_log()
            .matches("the last good schedule keeps running")
            .count();
        assert_eq!(
            reported,
            1,
            "a refused file is reported once:\n{}",
            setup.cron_log()
        );
        setup.kill9_cron();
    }
}

/// A save that empties the file first and writes it a moment later (a
/// shell's `>`, some editors): the empty moment is not read as a schedule
/// of no entries, so a typo in what is written keeps the real last good
/// schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_that_empties_the_file_first_is_read_once_whole() {
    use std::io::Write;
    let mut setup = Setup::start("").await;
    setup.start_cron(&[]).await;
    support::write_crons(
        setup.daemon.path(),
        "[[cron]]\nid = \"new\"\nevery = \"1s\"\nmessage = \"m\"\n",
    );
    setup
        .runs_where("the entry's first run", 1, |r| r.entry == "new")
        .await;
    let path = setup.daemon.path().join("config").join("crons.toml");
    let mut file = std::fs::File::create(&path).unwrap();
    // The writer is slow between emptying the file and writing it; the
    // pause is the edit being tried, not a wait for the service.
    std::thread::sleep(std::time::Duration::from_millis(30));
    file.write_all(b"[[cron]]\nid = \"new\"\nevry = \"1s\"\nmessage = \"m\"\n")
        .unwrap();
    drop(file);
    eventually("the refusal in the log", || {
        setup
            .cron_log()
            .contains("the last good schedule keeps running")
    })
    .await;
    let log = setup.cron_log();
    assert!(
        log.contains("the last good schedule keeps running (1 entry)"),
        "{log}"
    );
    assert!(!log.contains("0 entries"), "{log}");
    setup.kill9_cron();
}

// ─── MCP ────────────────────────────────────────────────────────────────────

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &'static str,
    args: Value,
    meta: Option<Value>,
) -> CallToolResult {
    let mut params =
        CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap());
    if let Some(Value::Object(meta)) = meta {
        params.meta = Some(rmcp::model::RequestMetaObject(meta.into()));
    }
    within(name, client.call_tool(params)).await.unwrap()
}

fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rmcp_client_uses_every_tool() {
    let mut setup = Setup::start("# mine\n").await;
    setup.llm.set_default(Reply::text("reminded"));
    setup.start_cron(&[]).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = mcp_client(&setup).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "cron_add",
            "cron_list",
            "cron_update",
            "cron_remove",
            "cron_pause",
            "cron_resume",
            "cron_run",
            "cron_runs"
        ]
    );

    let meta = json!({"ai.crabtalk/agent": "crab", "ai.crabtalk/sender": "tg:42", "ai.crabtalk/origin": "tg:42"});
    let added = structured(
        &call(
            &client,
            "cron_add",
            json!({"in": "1h", "message": "stretch", "tz": "Asia/Kolkata"}),
            Some(meta),
        )
        .await,
    );
    let entry = &added["added"];
    assert_eq!(entry["id"], "stretch");
    assert_eq!(entry["agent"], "crab");
    assert_eq!(entry["sender"], "tg:42");
    // Made from a Telegram conversation: its replies go to that chat.
    assert_eq!(entry["deliver"], "telegram:42");
    let next = &entry["next"][0];
    assert!(
        next["local"].as_str().unwrap().ends_with("+05:30"),
        "{next}"
    );
    assert!(next["utc"].as_str().unwrap().ends_with('Z'), "{next}");
    let slot = DateTime::parse_from_rfc3339(next["utc"].as_str().unwrap()).unwrap();
    let from_now = slot.with_timezone(&Utc) - Utc::now();
    assert!(from_now > chrono::Duration::minutes(59) && from_now <= chrono::Duration::hours(1));

    let refused = call(
        &client,
        "cron_add",
        json!({"every": "1m", "message": "again"}),
        Some(json!({"ai.crabtalk/trigger": "cron"})),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    let bad = call(
        &client,
        "cron_add",
        json!({"cron": "0 25 * * *", "message": "x"}),
        None,
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(
        format!("{:?}", bad.content).contains("hour field `25`"),
        "{bad:?}"
    );

    structured(&call(&client, "cron_add", json!({"id": "daily", "cron": "0 9 * * 1-5", "tz": "Europe/London", "message": "standup"}), None).await);
    let updated = structured(
        &call(
            &client,
            "cron_update",
            json!({"id": "daily", "cron": "30 9 * * 1-5"}),
            None,
        )
        .await,
    );
    assert_eq!(updated["updated"]["schedule"], "cron = \"30 9 * * 1-5\"");
    let paused = structured(&call(&client, "cron_pause", json!({"id": "daily"}), None).await);
    assert_eq!(paused["entry"]["enabled"], false);
    let resumed = structured(&call(&client, "cron_resume", json!({"id": "daily"}), None).await);
    assert_eq!(resumed["entry"]["enabled"], true);
    let listed = structured(&call(&client, "cron_list", json!({}), None).await);
    assert_eq!(listed["entries"].as_array().unwrap().len(), 2);
    let ran = structured(
        &call(
            &client,
            "cron_run",
            json!({"id": "daily", "wait": true}),
            None,
        )
        .await,
    );
    assert_eq!(ran["run"]["status"], "ok");
    assert_eq!(ran["run"]["reply"], "reminded");
    let runs = structured(&call(&client, "cron_runs", json!({"id": "daily", "n": 5}), None).await);
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    structured(&call(&client, "cron_remove", json!({"id": "daily"}), None).await);
    let text =
        std::fs::read_to_string(setup.home().component_config_dir().join("crons.toml")).unwrap();
    assert!(
        text.starts_with("# mine\n")
            && text.contains("id = \"stretch\"")
            && !text.contains("daily"),
        "{text}"
    );
    let _ = client.cancel().await;
}

/// What the tool server says of itself and of each tool, and a number
/// sent as a string where the schema wants an integer (what the MCP
/// inspector's form sends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_names_itself_marks_every_tool_and_takes_a_number_in_a_string() {
    let mut setup = Setup::start("").await;
    setup.start_cron(&[]).await;
    let client = mcp_client(&setup).await;
    let program = client.peer_info().unwrap().server_info.clone().unwrap();
    assert_eq!(
        (program.name.as_str(), program.version.as_str()),
        ("crabtalk-cron", env!("CARGO_PKG_VERSION"))
    );

    // (readOnly, destructive, idempotent, openWorld) of every tool.
    let tools = client.list_all_tools().await.unwrap();
    let hints: Vec<(&str, [bool; 4])> = tools
        .iter()
        .map(|tool| {
            let a = tool
                .annotations
                .clone()
                .unwrap_or_else(|| panic!("{} has no annotations", tool.name));
            assert!(tool.title.is_some() && a.title == tool.title, "{tool:?}");
            let hint = |h: Option<bool>| h.unwrap_or_else(|| panic!("{}: {a:?}", tool.name));
            (
                tool.name.as_ref(),
                [
                    hint(a.read_only_hint),
                    hint(a.destructive_hint),
                    hint(a.idempotent_hint),
                    hint(a.open_world_hint),
                ],
            )
        })
        .collect();
    assert_eq!(
        hints,
        [
            ("cron_add", [false, false, false, false]),
            ("cron_list", [true, false, true, false]),
            ("cron_update", [false, true, true, false]),
            ("cron_remove", [false, true, true, false]),
            ("cron_pause", [false, true, true, false]),
            ("cron_resume", [false, true, true, false]),
            ("cron_run", [false, true, false, true]),
            ("cron_runs", [true, false, true, false]),
        ]
    );

    let runs = tools.iter().find(|t| t.name == "cron_runs").unwrap();
    let n = &runs.input_schema["properties"]["n"];
    assert_eq!(n["type"], "integer", "{n}");
    let answer = structured(&call(&client, "cron_runs", json!({"n": "1"}), None).await);
    assert_eq!(answer, json!({"runs": []}));
    let _ = client.cancel().await;
}

// ─── delivery ───────────────────────────────────────────────────────────────

/// Stands in for the telegram component: `telegram_send` records its
/// arguments and answers with message ids.
#[derive(Clone, Default)]
struct FakeTelegram {
    sent: Arc<Mutex<Vec<Value>>>,
}

impl ServerHandler for FakeTelegram {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let schema =
            json!({"type": "object", "properties": {"chat_id": {}, "text": {"type": "string"}}});
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "telegram_send",
            "send",
            Arc::new(schema.as_object().unwrap().clone()),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let mut sent = self.sent.lock().unwrap();
        sent.push(args);
        let id = 100 + sent.len() as i64;
        Ok(CallToolResult::structured(json!({"message_ids": [id]})).into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_are_delivered_through_telegram_send_with_its_message_ids() {
    let crons = "[[cron]]\nid = \"news\"\nat = \"2099-01-01T00:00:00Z\"\nmessage = \"news\"\ndeliver = \"telegram:42\"\n\n[[cron]]\nid = \"quiet\"\nat = \"2099-01-01T00:00:00Z\"\nmessage = \"q\"\ndeliver = \"telegram:42\"\n";
    let mut setup = Setup::start(crons).await;
    setup.start_cron(&[]).await;

    // No telegram running: recorded, not lost.
    setup.llm.push(Reply::text("headline"));
    let first = setup.cli(&["run", "news", "--json"]);
    assert!(first.status.success(), "{}", text(&first));
    let record: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(record["status"], "ok");
    assert_eq!(record["delivery"]["status"], "error");
    assert!(
        record["delivery"]["error"]
            .as_str()
            .unwrap()
            .contains("telegram component is not running"),
        "{record}"
    );

    let fake = FakeTelegram::default();
    let sent = fake.sent.clone();
    let router = crabtalk_kit::mcp::mcp_router(move || fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    PortFile::for_this_process(port)
        .write(&setup.home().port_file("telegram").unwrap())
        .unwrap();

    let watcher = setup.daemon.client().await;
    let mut events = watcher
        .subscribe_events(crabtalk_proto::msg::SubscribeEvents {})
        .await
        .unwrap();
    setup.llm.push(Reply::text("second headline"));
    let second: Value =
        serde_json::from_slice(&setup.cli(&["run", "news", "--json"]).stdout).unwrap();
    assert_eq!(second["delivery"]["status"], "delivered", "{second}");
    assert_eq!(second["delivery"]["message_ids"], json!([101]));
    // The run id of the fired turn goes along, so the gateway sends the
    // reply once even when it also relays it.
    let call = sent.lock().unwrap()[0].clone();
    assert_eq!(call["chat_id"], 42);
    assert_eq!(call["text"], "second headline");
    let run_id = call["run_id"].as_u64().expect("a run id");
    // …the fired turn's, which carries the trigger `cron`.
    let done = crabtalk_testkit::within("the turn's DONE", async {
        loop {
            let event = futures::StreamExt::next(&mut events)
                .await
                .unwrap()
                .unwrap();
            if event.kind == crabtalk_proto::msg::AgentEventKind::Done as i32 {
                return event;
            }
        }
    })
    .await;
    assert_eq!(done.run_id, run_id);
    assert_eq!(done.trigger, "cron");

    setup.llm.push(Reply::text("[SILENT]"));
    let silent: Value =
        serde_json::from_slice(&setup.cli(&["run", "quiet", "--json"]).stdout).unwrap();
    assert_eq!(silent["delivery"]["status"], "silent", "{silent}");
    assert_eq!(sent.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_past_the_entrys_timeout_is_stopped_and_recorded_as_an_error() {
    let crons = "[[cron]]\nid = \"stuck\"\nat = \"2099-01-01T00:00:00Z\"\nmessage = \"summarise\"\ntimeout = \"2s\"\n";
    let mut setup = Setup::start(crons).await;
    setup.start_cron(&[]).await;
    // The model starts answering, then never ends its stream.
    setup.llm.push(Reply::Stall("thinking about".into()));
    let ran = setup.cli(&["run", "stuck", "--json"]);
    let record: Value = serde_json::from_slice(&ran.stdout).unwrap_or_else(|err| {
        panic!("{err}: {}", text(&ran));
    });
    assert_eq!(record["status"], "error", "{record}");
    assert!(
        record["error"]
            .as_str()
            .unwrap()
            .contains("no end of the turn within 2s (the entry's timeout); it was stopped"),
        "{record}"
    );
    // Stopped for real: the daemon killed the turn, which dropped the
    // model's stream.
    setup.llm.wait_for_aborted_streams(1).await;
    let runs = setup
        .runs_where("the timed-out run in the log", 1, |r| {
            r.status == Status::Error
        })
        .await;
    assert_eq!(runs[0].entry, "stuck");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_arguments_sent_as_a_json_string_are_accepted() {
    let mut setup = Setup::start("").await;
    setup.start_cron(&[]).await;
    let port = setup.cron_port();
    let token = crabtalk_home::token::read_token(&setup.home()).unwrap();
    // By hand, as a client written from the MCP spec would.
    let post = |body: &str| crabtalk_testkit::HttpRequest::post(port, "/mcp", body).bearer(&token);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"by-hand","version":"1"}}}"#;
    let opened = post(init).send_async().await;
    let session = opened.header("mcp-session-id").expect("a session id");
    post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .mcp_session(session)
        .send_async()
        .await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"cron_add","arguments":"{\"id\":\"strung\",\"every\":\"1h\",\"tz\":\"UTC\",\"message\":\"m\"}"}}"#;
    let answer = post(call).mcp_session(session).send_async().await.body;
    assert!(
        answer.contains("\"added\"") && answer.contains("strung"),
        "{answer}"
    );
    let text =
        std::fs::read_to_string(setup.home().component_config_dir().join("crons.toml")).unwrap();
    assert!(text.contains("id = \"strung\""), "{text}");
}

// ─── through the daemon ─────────────────────────────────────────────────────

/// Waits until the daemon has connected to the cron component and listed
/// its tools.
async fn daemon_sees_cron(setup: &Setup) {
    setup
        .daemon
        .until_component_connected("crab", "cron", 8)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_schedules_through_the_daemon_and_the_reply_lands_in_the_callers_conversation() {
    let mut setup = Setup::start("").await;
    setup.start_cron(&[]).await;
    daemon_sees_cron(&setup).await;
    // The model asks for a reminder in two seconds, naming no conversation:
    // cron learns whose it is from the `_meta` the daemon sends with the
    // call (tg:7 talking to crab). Then the model answers; two seconds
    // later cron's turn gets its own reply.
    setup
        .llm
        .push(Reply::tools(vec![crabtalk_testkit::ToolCall::new(
            "call-1",
            "cron__cron_add",
            json!({"in": "2s", "message": "time to stretch"}),
        )]));
    setup.llm.push(Reply::text("I will remind you."));
    setup.llm.push(Reply::text("Stretch now!"));
    let client = setup.daemon.client().await;
    let turn = crabtalk_testkit::turn::Turn::run(
        &client,
        crabtalk_testkit::turn::message("crab", "tg:7", "remind me to stretch in 2s"),
    )
    .await;
    assert_eq!(turn.text(), "I will remind you.");
    let result = &turn.tool_results()[0];
    assert!(
        result.output.contains("\"added\"") && result.output.contains("time-to-stretch"),
        "{result:?}"
    );
    let fired = setup
        .runs_where("cron's turn", 1, |r| r.status == Status::Ok)
        .await;
    assert_eq!(fired[0].reply.as_deref(), Some("Stretch now!"));
    // Cron's message and its reply are in (crab, tg:7): the third model
    // request carries the whole conversation.
    let third = setup.llm.requests()[2].to_string();
    assert!(
        third.contains("remind me to stretch in 2s") && third.contains("time to stretch"),
        "{third}"
    );
    let crons = setup.home().component_config_dir().join("crons.toml");
    eventually("the one-shot to be removed after it ran", || {
        !std::fs::read_to_string(&crons)
            .unwrap()
            .contains("time-to-stretch")
    })
    .await;
}

// ─── Gateway conversations ─────────────────────────────────────────────────

async fn mcp_client(setup: &Setup) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = crabtalk_kit::mcp::owner_client_config(&setup.home(), setup.cron_port()).unwrap();
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_conversation_schedules_only_for_itself_and_sees_only_its_own() {
    let mut setup = Setup::start(
        "# the owner's own entry\n[[cron]]\nid = \"backup\"\nevery = \"1h\"\nmessage = \"run the backup\"\nsender = \"user\"\n",
    )
    .await;
    setup.start_cron(&[]).await;
    let client = mcp_client(&setup).await;
    let stranger = json!({
        "ai.crabtalk/agent": "crab",
        "ai.crabtalk/sender": "tg:42",
        "ai.crabtalk/origin": "tg:42",
        "ai.crabtalk/gateway": "tg:42",
    });

    // Speaking in someone else's conversation, as another agent, or
    // delivering to another chat is refused, naming the field.
    for (args, field) in [
        (
            json!({"in": "1h", "message": "hi", "sender": "user"}),
            "`sender`",
        ),
        (
            json!({"in": "1h", "message": "hi", "agent": "ops"}),
            "`agent`",
        ),
        (
            json!({"in": "1h", "message": "hi", "deliver": "telegram:7"}),
            "`deliver`",
        ),
    ] {
        let refused = call(&client, "cron_add", args, Some(stranger.clone())).await;
        let said = error_text(&refused);
        assert!(
            said.contains(field) && said.contains("through a gateway"),
            "{said}"
        );
    }
    let added = structured(
        &call(
            &client,
            "cron_add",
            json!({"id": "stretch", "in": "1h", "message": "stretch"}),
            Some(stranger.clone()),
        )
        .await,
    );
    assert_eq!(added["added"]["sender"], "tg:42");
    assert_eq!(added["added"]["deliver"], "telegram:42");
    let crons =
        std::fs::read_to_string(setup.home().component_config_dir().join("crons.toml")).unwrap();
    assert!(crons.contains("origin = \"tg:42\""), "{crons}");
    assert!(crons.starts_with("# the owner's own entry"), "{crons}");

    // The stranger sees and touches only its own entry.
    let listed = structured(&call(&client, "cron_list", json!({}), Some(stranger.clone())).await);
    let ids: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["stretch"]);
    for (tool, args) in [
        ("cron_remove", json!({"id": "backup"})),
        ("cron_pause", json!({"id": "backup"})),
        (
            "cron_update",
            json!({"id": "backup", "message": "rm -rf ~"}),
        ),
        ("cron_run", json!({"id": "backup"})),
        ("cron_runs", json!({"id": "backup"})),
    ] {
        let refused = call(&client, tool, args, Some(stranger.clone())).await;
        assert!(error_text(&refused).contains("no entry `backup`"), "{tool}");
    }

    // The owner's own turns see everything.
    let owner = json!({"ai.crabtalk/agent": "crab", "ai.crabtalk/sender": "user", "ai.crabtalk/origin": "user"});
    let listed = structured(&call(&client, "cron_list", json!({}), Some(owner)).await);
    assert_eq!(listed["entries"].as_array().unwrap().len(), 2);
    let crons =
        std::fs::read_to_string(setup.home().component_config_dir().join("crons.toml")).unwrap();
    assert!(crons.contains("message = \"run the backup\""), "{crons}");
    let _ = client.cancel().await;
}

/// The tool names the model was offered in request `index`.
fn offered(setup: &Setup, index: usize) -> Vec<String> {
    setup.llm.requests()[index]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_a_gateway_sender_made_runs_under_the_gateway_rule() {
    // Written by hand to speak in the cron conversation: the origin alone
    // must carry the gateway rule to the daemon.
    let crons = format!(
        "[[cron]]\nid = \"theirs\"\nat = \"{}\"\nmessage = \"what is in config.toml?\"\norigin = \"tg:42\"\n",
        in_secs(2)
    );
    let mut setup = Setup::start(&crons).await;
    setup.llm.set_default(Reply::text("done"));
    setup.start_cron(&[]).await;
    setup
        .runs_where("the gateway entry's run", 1, |r| r.status == Status::Ok)
        .await;
    let tools = offered(&setup, 0);
    assert!(!tools.is_empty());
    for denied in ["bash", "read", "edit"] {
        assert!(
            !tools.iter().any(|t| t == denied),
            "{denied} offered: {tools:?}"
        );
    }

    // The same entry without an origin is the owner's: bash is offered.
    // Written once cron has removed the done one-shot from the file, so
    // the two writes do not cross.
    let crons_path = setup.home().component_config_dir().join("crons.toml");
    eventually("the done one-shot to leave crons.toml", || {
        !std::fs::read_to_string(&crons_path)
            .unwrap_or_default()
            .contains("theirs")
    })
    .await;
    crate::support::write_crons(
        setup.daemon.path(),
        &format!(
            "[[cron]]\nid = \"mine\"\nat = \"{}\"\nmessage = \"what is in config.toml?\"\n",
            in_secs(2)
        ),
    );
    setup
        .runs_where("the owner's entry's run", 2, |r| r.status == Status::Ok)
        .await;
    let tools = offered(&setup, 1);
    assert!(tools.iter().any(|t| t == "bash"), "{tools:?}");
}
