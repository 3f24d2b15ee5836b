//! `crabtalkd reload`, `crabtalkd check` and start with configuration
//! mistakes: every problem is reported with file, line and column, the exit
//! status says a file was refused, and what was running stays — an agent
//! never loses its restrictions to a typo.

use std::path::Path;
use std::process::Output;

use crabtalk_proto::msg::{GetAgentMsg, GetConfig, ListModelsMsg, ReloadMsg};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary, within};

/// EX_CONFIG: a file was refused.
const REFUSED: i32 = 78;

async fn crabtalkd(home: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(daemon_binary());
    command
        .args(args)
        .env("CRABTALK_HOME", home)
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .kill_on_drop(true);
    within(&format!("crabtalkd {args:?}"), command.output())
        .await
        .expect("run crabtalkd")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A daemon with the scout agent, restricted to `read`.
async fn daemon_with_scout() -> (ScriptedLlm, TestDaemon) {
    let llm = ScriptedLlm::start().await;
    let daemon = TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
    write(
        &daemon,
        "agents/scout.toml",
        "description = \"looks around\"\ntools = [\"read\"]\n",
    );
    let output = crabtalkd(daemon.path(), &["reload"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    (llm, daemon)
}

fn write(daemon: &TestDaemon, file: &str, text: &str) {
    std::fs::write(daemon.path().join(file), text).unwrap();
}

async fn scout_tools(daemon: &TestDaemon) -> serde_json::Value {
    let info = daemon
        .client()
        .await
        .get_agent(GetAgentMsg {
            name: "scout".into(),
        })
        .await
        .expect("scout is loaded");
    let config: serde_json::Value = serde_json::from_str(&info.config).unwrap();
    config["tools"].clone()
}

/// Runs `crabtalkd reload` and checks it was refused with `expected` (a
/// problem line, with its position) in what it printed.
async fn refused(daemon: &TestDaemon, expected: &[&str]) -> String {
    let output = crabtalkd(daemon.path(), &["reload"]).await;
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(REFUSED), "{text}");
    assert!(!stdout(&output).contains("reloaded"), "{text}");
    for line in expected {
        assert!(text.contains(line), "{line:?} is not in:\n{text}");
    }
    text
}

#[tokio::test]
async fn a_misspelt_tool_list_is_refused_and_the_agent_keeps_its_restriction() {
    let (llm, daemon) = daemon_with_scout().await;
    assert_eq!(scout_tools(&daemon).await, serde_json::json!(["read"]));

    write(
        &daemon,
        "agents/scout.toml",
        "description = \"looks around\"\ntols = [\"read\"]\n",
    );
    let scout = daemon.path().join("agents/scout.toml");
    let text = refused(
        &daemon,
        &[&format!(
            "{}:2:1: unknown key `tols`; did you mean `tools`?",
            scout.display()
        )],
    )
    .await;
    assert!(
        text.contains("agent scout keeps its previous definition"),
        "{text}"
    );
    assert_eq!(scout_tools(&daemon).await, serde_json::json!(["read"]));

    // The restriction still holds in a turn: bash is refused to scout.
    llm.push(Reply::tools(vec![crabtalk_testkit::ToolCall::new(
        "c1",
        "bash",
        serde_json::json!({"command": "echo hi"}),
    )]));
    llm.push(Reply::text("done"));
    let client = daemon.client().await;
    crabtalk_testkit::turn::Turn::run(
        &client,
        crabtalk_testkit::turn::message("scout", "user", "run something"),
    )
    .await;
    let tool_result = llm.requests()[1].to_string();
    assert!(tool_result.contains("scope"), "{tool_result}");

    // Fixed, the change goes through.
    write(
        &daemon,
        "agents/scout.toml",
        "description = \"looks around\"\ntools = [\"read\", \"bash\"]\n",
    );
    let output = crabtalkd(daemon.path(), &["reload"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "reloaded");
    assert_eq!(
        scout_tools(&daemon).await,
        serde_json::json!(["read", "bash"])
    );
}

#[tokio::test]
async fn an_agent_file_with_a_type_error_is_refused_not_skipped() {
    let (_llm, daemon) = daemon_with_scout().await;
    write(
        &daemon,
        "agents/scout.toml",
        "description = \"looks around\"\nmax_iterations = \"many\"\n",
    );
    let scout = daemon.path().join("agents/scout.toml");
    refused(
        &daemon,
        &[
            &format!(
                "{}:2:18: invalid type: string \"many\", expected u32",
                scout.display()
            ),
            "agent scout keeps its previous definition",
        ],
    )
    .await;
    // Still there, as it was.
    assert_eq!(scout_tools(&daemon).await, serde_json::json!(["read"]));

    // A new agent with a problem is not loaded at all.
    write(&daemon, "agents/owl.toml", "descripton = \"wise\"\n");
    let text = refused(
        &daemon,
        &["owl.toml:1:1: unknown key `descripton`; did you mean `description`?"],
    )
    .await;
    assert!(text.contains("agent owl is not loaded"), "{text}");
    let err = daemon
        .client()
        .await
        .get_agent(GetAgentMsg { name: "owl".into() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
}

#[tokio::test]
async fn config_toml_mistakes_are_refused_and_the_running_config_stays() {
    let (_llm, daemon) = daemon_with_scout().await;
    let config_file = daemon.path().join("config.toml");
    let good = std::fs::read_to_string(&config_file).unwrap();
    let client = daemon.client().await;
    let before = client.get_config(GetConfig {}).await.unwrap().config;

    // A misspelt key.
    write(
        &daemon,
        "config.toml",
        &good.replace("retry_backoff_ms", "retry_backof_ms"),
    );
    let line = good
        .lines()
        .position(|line| line.starts_with("retry_backoff_ms"))
        .unwrap()
        + 1;
    let text = refused(
        &daemon,
        &[&format!(
            "{}:{line}:1: unknown key `retry_backof_ms` in [llm]; did you mean `retry_backoff_ms`?",
            config_file.display()
        )],
    )
    .await;
    assert!(text.contains("the running configuration stays"), "{text}");
    assert_eq!(
        client.get_config(GetConfig {}).await.unwrap().config,
        before
    );

    // An unknown provider kind.
    write(
        &daemon,
        "config.toml",
        &good.replace("kind = \"openai-compatible\"", "kind = \"opnai\""),
    );
    refused(
        &daemon,
        &["config.toml:4:1: unknown provider kind \"opnai\"; did you mean \"openai\"?"],
    )
    .await;

    // A default model no provider serves.
    write(
        &daemon,
        "config.toml",
        &good.replace("default_model = \"scripted\"", "default_model = \"gpt-9\""),
    );
    refused(
        &daemon,
        &["config.toml:1:1: default_model \"gpt-9\" is not served by any provider; the providers list scripted"],
    )
    .await;
    let models = client.list_models(ListModelsMsg {}).await.unwrap();
    assert_eq!(models.models.len(), 1);
    assert!(models.models[0].active, "{models:?}");

    // Several problems at once are all reported, in file order.
    write(
        &daemon,
        "config.toml",
        &format!(
            "colour = \"blue\"\n{}",
            good.replace("retry_backoff_ms", "retry_backof_ms")
        ),
    );
    let text = refused(&daemon, &["config.toml:1:1: unknown key `colour`"]).await;
    let colour = text.find("`colour`").unwrap();
    let retry = text.find("`retry_backof_ms`").unwrap();
    assert!(colour < retry, "{text}");

    // Over the protocol the refusal is an ErrorMsg{400} with the same lines.
    let err = client.reload(ReloadMsg {}).await.unwrap_err();
    assert_eq!(err.code(), Some(400));
    assert!(
        err.to_string()
            .contains("config.toml:1:1: unknown key `colour`"),
        "{err}"
    );
    assert!(
        !err.to_string().contains("(400)"),
        "no codes in sentences: {err}"
    );
}

#[tokio::test]
async fn an_agent_model_no_provider_serves_is_refused() {
    let (_llm, daemon) = daemon_with_scout().await;
    write(
        &daemon,
        "agents/scout.toml",
        "tools = [\"read\"]\nmodel = \"mock-9\"\n",
    );
    refused(
        &daemon,
        &["scout.toml:2:1: model \"mock-9\" is not served by any provider; the providers list scripted"],
    )
    .await;
    let info = daemon
        .client()
        .await
        .get_agent(GetAgentMsg {
            name: "scout".into(),
        })
        .await
        .unwrap();
    assert_eq!(info.model, "");
    assert_eq!(info.description, "looks around");
}

#[tokio::test]
async fn check_reports_every_problem_without_a_daemon() {
    let home = tempfile::tempdir().unwrap();
    let agents = home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[[providers]]\nkind = \"openai\"\nmodels = [\"gpt-4o\"]\n\n[transport]\ntpc = \"off\"\n",
    )
    .unwrap();
    std::fs::write(agents.join("scout.toml"), "tols = []\nmodel = \"gpt-9\"\n").unwrap();
    std::fs::write(agents.join("crab.toml"), "description = \"fine\"\n").unwrap();

    let output = crabtalkd(home.path(), &["check"]).await;
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(REFUSED), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0]
            .ends_with("config.toml:6:1: unknown key `tpc` in [transport]; did you mean `tcp`?"),
        "{text}"
    );
    assert!(
        lines[1].ends_with("scout.toml:1:1: unknown key `tols`; did you mean `tools`?"),
        "{text}"
    );
    assert!(
        lines[2].contains("scout.toml:2:1: model \"gpt-9\" is not served by any provider; the providers list gpt-4o (or remove `model` to use the default model)"),
        "{text}"
    );
    assert_eq!(
        lines[3],
        "3 problems in 2 files: the daemon would refuse them"
    );

    std::fs::write(
        home.path().join("config.toml"),
        "[[providers]]\nkind = \"openai\"\nmodels = [\"gpt-4o\"]\n\n[transport]\ntcp = \"off\"\n",
    )
    .unwrap();
    std::fs::write(agents.join("scout.toml"), "tools = []\n").unwrap();
    let output = crabtalkd(home.path(), &["check"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("is fine: config.toml and agents crab, scout"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test]
async fn start_refuses_a_broken_config_toml_and_names_every_problem() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "defualt_agent = \"crab\"\n[transport]\ntcp = \"off\"\n[llm]\nretries = 2\n",
    )
    .unwrap();
    let output = crabtalkd(home.path(), &["run"]).await;
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(REFUSED), "{text}");
    assert!(
        text.contains(
            "config.toml:1:1: unknown key `defualt_agent`; did you mean `default_agent`?"
        ),
        "{text}"
    );
    assert!(
        text.contains("config.toml:5:1: unknown key `retries` in [llm]"),
        "{text}"
    );
}

#[tokio::test]
async fn start_with_a_broken_agent_file_runs_without_that_agent_and_says_why() {
    let llm = ScriptedLlm::start().await;
    let mut daemon =
        TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
    std::fs::create_dir_all(daemon.path().join("agents")).unwrap();
    write(&daemon, "agents/scout.toml", "tols = [\"read\"]\n");
    daemon.restart().await;
    let err = daemon
        .client()
        .await
        .get_agent(GetAgentMsg {
            name: "scout".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
    let log = daemon.log();
    assert!(
        log.lines().any(|line| line.contains("ERROR")
            && line.contains("scout.toml:1:1: unknown key `tols`; did you mean `tools`?")),
        "{log}"
    );
    assert!(log.contains("agent scout is not loaded"), "{log}");
}
