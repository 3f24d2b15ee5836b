//! Providers by name (RFC 0023) on the real daemon: a model named
//! `groq/…` with nothing configured but `GROQ_API_KEY` (the preset's base
//! URL pointed at the scripted model through `[presets.groq]`), a preset
//! without its key explained in the turn's error, and `crabtalkd check`
//! listing which presets have a key.

use std::path::Path;
use std::process::Output;

use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary, within};

async fn crabtalkd_check(home: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(daemon_binary());
    command
        .arg("check")
        .env("CRABTALK_HOME", home)
        .env_remove("RUST_LOG")
        .env_remove("OLLAMA_HOST")
        .kill_on_drop(true);
    for preset in crabtalk_home::provider_env::PROVIDER_PRESETS {
        for var in preset.key_vars {
            command.env_remove(var);
        }
    }
    command.envs(env.iter().copied());
    within("crabtalkd check", command.output())
        .await
        .expect("run crabtalkd check")
}

#[tokio::test]
async fn a_preset_model_runs_with_only_its_key_set() {
    let llm = ScriptedLlm::start().await;
    // No [[providers]]: the preset is all there is.
    let config = format!(
        "default_model = \"groq/llama-3.3-70b-versatile\"\n\n\
         [presets.groq]\n\
         base_url = \"{}\"\n\n\
         [transport]\n\
         tcp = \"off\"\n",
        llm.base_url()
    );
    let daemon = TestDaemon::start_with_env(
        daemon_binary(),
        &config,
        &[("GROQ_API_KEY", "gsk-from-the-environment")],
    )
    .await;
    std::fs::create_dir_all(daemon.path().join("agents")).unwrap();
    std::fs::write(
        daemon.path().join("agents/mistrally.toml"),
        "model = \"mistral/mistral-small-latest\"\n",
    )
    .unwrap();
    let client = daemon.client().await;
    client
        .reload(crabtalk_proto::msg::ReloadMsg {})
        .await
        .unwrap();

    llm.push(Reply::text("fast hello"));
    let turn = Turn::run(&client, message("crab", "user", "hi")).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    assert_eq!(turn.text(), "fast hello");
    // The provider was asked for its own name of the model, with the key.
    let request = &llm.requests()[0];
    assert_eq!(request["model"], "llama-3.3-70b-versatile");
    assert_eq!(llm.credentials()[0], "Bearer gsk-from-the-environment");
    // The turn reports the model as it was named.
    assert_eq!(turn.end().model, "groq/llama-3.3-70b-versatile");

    // A preset without its key: the turn says which variable to set.
    let turn = Turn::run(&client, message("mistrally", "user", "hi")).await;
    let error = &turn.end().error;
    assert!(
        error.contains("preset mistral") && error.contains("MISTRAL_API_KEY is not set"),
        "{error}"
    );
    assert_eq!(llm.requests().len(), 1, "nothing was sent without a key");
}

#[tokio::test]
async fn check_lists_which_presets_have_a_key() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[presets.lab]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"LAB_KEY\"\n",
    )
    .unwrap();
    // A key in the home's env file counts as much as one exported.
    crabtalk_home::write_atomic_private(
        &home.path().join("env"),
        b"MISTRAL_API_KEY=from-the-env-file\n",
    )
    .unwrap();
    let output = crabtalkd_check(home.path(), &[("GROQ_API_KEY", "gsk")]).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("is fine"), "{stdout}");
    let line = |name: &str| {
        lines
            .iter()
            .find(|line| line.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name}: {stdout}"))
            .to_string()
    };
    assert!(
        line("groq").contains("ready") && line("groq").contains("key from GROQ_API_KEY"),
        "{stdout}"
    );
    assert!(
        line("mistral").contains("ready") && line("mistral").contains("key from MISTRAL_API_KEY"),
        "{stdout}"
    );
    assert!(
        line("openai").contains("no key") && line("openai").contains("OPENAI_API_KEY"),
        "{stdout}"
    );
    assert!(
        line("gemini").contains("GEMINI_API_KEY or GOOGLE_API_KEY"),
        "{stdout}"
    );
    assert!(line("ollama").contains("no key needed"), "{stdout}");
    assert!(
        line("lab").contains("(set in config.toml)") && line("lab").contains("LAB_KEY is not set"),
        "{stdout}"
    );
    for name in ["anthropic", "deepseek", "openrouter", "together", "xai"] {
        line(name);
    }
}
