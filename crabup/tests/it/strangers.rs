//! Another user of the machine against the family's ports, and the owner's
//! own calls across a new token.
//!
//! The family runs as in `family.rs` (the real binaries under `crabup up`).
//! Then a child of this test binary, as uid 65534 (`nobody`), tries what an
//! attacker on the same machine would: read the token, `initialize` and
//! call tools on every component's port without it, with a foreign
//! `Origin`, and ask `/health`. Without root the child cannot change user,
//! and that part says it was skipped. Then the owner sets a new token and
//! restarts the daemon: the daemon's calls to components still work (a
//! turn searches the web), `crabup ps` still reads every component's health,
//! and the old token opens nothing any more.

use crabtalk_home::{Home, PortFile};
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{HttpRequest, Reply, ToolCall};
use serde_json::{Value, json};

use crate::family::{COMPONENTS, SERVICES, World, wait_healthy};

/// Set in the child's environment: what to probe (JSON).
const PROBE_ENV: &str = "CRABUP_TEST_STRANGER_PROBE";
/// The line the child prints its findings on.
const REPORT: &str = "STRANGER-REPORT ";
const NOBODY: u32 = 65534;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stranger","version":"1"}}}"#;
const CRON_ADD: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"cron_add","arguments":{"in":"1s","message":"run id > /tmp/owned"}}}"#;

/// What another user finds (run in a child as uid 65534).
#[test]
#[ignore = "a helper: another_user_gets_nothing_from_any_port runs it as another user"]
fn stranger_probe() {
    let Ok(spec) = std::env::var(PROBE_ENV) else {
        return;
    };
    let spec: Value = serde_json::from_str(&spec).unwrap();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let token = match std::fs::read_to_string(spec["token_file"].as_str().unwrap()) {
        Ok(_) => "read".to_owned(),
        Err(err) => format!("{:?}", err.kind()),
    };
    let mut ports = serde_json::Map::new();
    for (name, port) in spec["ports"].as_object().unwrap() {
        let port = port.as_u64().unwrap() as u16;
        let initialize = HttpRequest::post(port, "/mcp", INITIALIZE).send();
        let call = HttpRequest::post(port, "/mcp", CRON_ADD).send();
        let guessed = HttpRequest::post(port, "/mcp", INITIALIZE)
            .bearer("0000000000000000000000000000000000000000000000000000000000000000")
            .send();
        let page = HttpRequest::post(port, "/mcp", INITIALIZE)
            .header("Origin", "http://evil.example")
            .send();
        let health = HttpRequest::get(port, "/health").send();
        ports.insert(
            name.clone(),
            json!({
                "initialize": initialize.status,
                "call": call.status,
                "guessed_token": guessed.status,
                "foreign_origin": page.status,
                "health_status": health.status,
                "health": serde_json::from_str::<Value>(&health.body).unwrap_or(Value::Null),
            }),
        );
    }
    println!(
        "{REPORT}{}",
        json!({"uid": uid, "token": token, "ports": ports})
    );
}

/// Why this process cannot run a child as another user that runs this
/// test binary, if it cannot.
fn cannot_be_another_user() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root, so no child can be made another user".into());
    }
    let exe = std::env::current_exe().unwrap();
    use std::os::unix::fs::PermissionsExt;
    for dir in exe.ancestors().skip(1) {
        let mode = std::fs::metadata(dir).map_or(0, |m| m.permissions().mode());
        if mode & 0o001 == 0 {
            return Some(format!(
                "{} cannot be entered by other users, so they cannot run {}",
                dir.display(),
                exe.display()
            ));
        }
    }
    None
}

/// Runs [`stranger_probe`] as uid 65534 against `ports`.
fn probe_as_another_user(home: &Home, ports: &serde_json::Map<String, Value>) -> Value {
    use std::os::unix::process::CommandExt;
    let spec = json!({
        "token_file": home.token_file(),
        "ports": ports,
    });
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "strangers::stranger_probe",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_ENV, spec.to_string())
        .uid(NOBODY)
        .gid(NOBODY)
        .current_dir("/")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|line| line.split_once(REPORT).map(|(_, report)| report))
        .unwrap_or_else(|| {
            panic!(
                "the probe as another user reported nothing ({}):\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(line).unwrap()
}

fn component_ports(home: &Home) -> serde_json::Map<String, Value> {
    COMPONENTS
        .iter()
        .map(|name| {
            let file = PortFile::read(&home.port_file(name).unwrap()).unwrap();
            ((*name).to_owned(), json!(file.port))
        })
        .collect()
}

#[test]
fn another_user_gets_nothing_from_any_port_and_the_owner_keeps_everything_across_a_new_token() {
    let world = World::start();
    let sandbox = world.sandbox();
    let home = Home::new(&sandbox.home);
    let out = sandbox
        .command(&["up"])
        .env("CRABUP_READY_TIMEOUT_SECS", "30")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, _) in SERVICES {
        wait_healthy(&sandbox, name);
    }
    let ports = component_ports(&home);

    match cannot_be_another_user() {
        Some(why) => eprintln!(
            "another_user_gets_nothing_from_any_port: the part as another user was skipped: {why}"
        ),
        None => {
            let report = probe_as_another_user(&home, &ports);
            assert_eq!(report["uid"], NOBODY, "{report}");
            assert_eq!(report["token"], "PermissionDenied", "{report}");
            for name in COMPONENTS {
                let port = &report["ports"][name];
                assert_eq!(port["initialize"], 401, "{name}: {port}");
                assert_eq!(port["call"], 401, "{name}: {port}");
                assert_eq!(port["guessed_token"], 401, "{name}: {port}");
                assert_eq!(port["foreign_origin"], 403, "{name}: {port}");
                assert_eq!(port["health_status"], 200, "{name}: {port}");
                assert_eq!(port["health"], json!({"ok": true}), "{name}: {port}");
            }
            // Nothing the stranger asked of cron was done.
            let crons = std::fs::read_to_string(home.component_config("crons.toml").unwrap())
                .unwrap_or_default();
            assert!(!crons.contains("owned"), "{crons}");
        }
    }

    // The owner sets a token of their own; the daemon restarts with it.
    let old = crabtalk_home::token::read_token(&home).unwrap();
    let config = std::fs::read_to_string(home.config_file()).unwrap();
    let chosen = "the-owners-own-token-0123456789abcdef";
    std::fs::write(
        home.config_file(),
        config.replace(
            "tcp = \"127.0.0.1:0\"\n",
            &format!("tcp = \"127.0.0.1:0\"\ntoken = \"{chosen}\"\n"),
        ),
    )
    .unwrap();
    sandbox.ok(&["daemon", "restart"]);
    assert_eq!(crabtalk_home::token::read_token(&home).unwrap(), chosen);
    for (name, _) in SERVICES {
        wait_healthy(&sandbox, name);
    }
    // The restarted daemon reaches every component with the new token.
    let client = world.client(&home);
    for component in COMPONENTS {
        world.wait_mcp(&client, component, true);
    }
    world.llm.push(Reply::tools(vec![ToolCall::new(
        "search-1",
        "search__web_search",
        json!({"query": "rust programming language", "count": 3}),
    )]));
    world.llm.push(Reply::text("found it"));
    let before = world.llm.requests().len();
    let turn = world.runtime.block_on(Turn::run(
        &client,
        message("crab", "user", "search for rust"),
    ));
    assert_eq!(turn.text(), "found it");
    let result = world.llm.requests()[before + 1]["messages"].to_string();
    assert!(
        result.contains("Rust (programming language)"),
        "the search did not reach the component: {result}"
    );
    // The old token opens no component; the new one does.
    for (name, port) in component_ports(&home) {
        let port = port.as_u64().unwrap() as u16;
        let refused = HttpRequest::post(port, "/mcp", INITIALIZE)
            .bearer(&old)
            .send();
        assert_eq!(refused.status, 401, "{name} still takes the old token");
        let taken = HttpRequest::post(port, "/mcp", INITIALIZE)
            .bearer(chosen)
            .send();
        assert_eq!(taken.status, 200, "{name} refuses the new token");
    }
}
