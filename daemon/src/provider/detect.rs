//! What the environment offers when `config.toml` lists no provider:
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, and an Ollama that answers where
//! `OLLAMA_HOST` says (read as Ollama reads it), else at 127.0.0.1:11434.
//! The names and the reading of `OLLAMA_HOST` are `crabtalk-home`'s
//! [`provider_env`](crabtalk_home::provider_env), which crabup reads too.

use crabtalk_home::provider_env::{
    ANTHROPIC_KEY_VAR, OLLAMA_HOST_VAR, OLLAMA_PROBE, OPENAI_KEY_VAR, OllamaAddress,
};

use super::Environment;
use crate::config::ProviderEntry;

/// Looks for provider keys in the environment and a local Ollama. The
/// Ollama probe is a TCP connect with a short timeout.
pub async fn detect_environment() -> Environment {
    let key = |name: &str| std::env::var(name).ok().filter(|key| !key.is_empty());
    let ollama = OllamaAddress::parse(std::env::var(OLLAMA_HOST_VAR).ok().as_deref());
    let answers = tokio::time::timeout(
        OLLAMA_PROBE,
        tokio::net::TcpStream::connect(ollama.authority()),
    )
    .await
    .is_ok_and(|connected| connected.is_ok());
    Environment {
        openai_api_key: key(OPENAI_KEY_VAR),
        anthropic_api_key: key(ANTHROPIC_KEY_VAR),
        ollama: answers.then(|| ollama.base_url()),
    }
}

/// Provider entries for what `environment` offers; models are discovered.
pub(super) fn entries(environment: &Environment) -> Vec<ProviderEntry> {
    let mut entries = Vec::new();
    if let Some(key) = &environment.openai_api_key {
        entries.push(ProviderEntry {
            kind: "openai".into(),
            api_key: Some(key.clone()),
            ..Default::default()
        });
    }
    if let Some(key) = &environment.anthropic_api_key {
        entries.push(ProviderEntry {
            kind: "anthropic".into(),
            api_key: Some(key.clone()),
            ..Default::default()
        });
    }
    if let Some(url) = &environment.ollama {
        entries.push(ProviderEntry {
            kind: "ollama".into(),
            base_url: Some(url.clone()),
            ..Default::default()
        });
    }
    entries
}

/// What to tell a person who has no usable provider.
pub(super) fn setup_hint(problems: &[String]) -> String {
    let mut hint = String::from(
        "no language model is configured. Add a provider to config.toml in your crabtalk home, for example:\n\n\
         [[providers]]\n\
         kind = \"openai\"                # or \"anthropic\", \"google\", \"ollama\", \"openai-compatible\"\n\
         api_key_env = \"OPENAI_API_KEY\"\n\
         models = [\"gpt-4o\"]\n\n\
         or export OPENAI_API_KEY or ANTHROPIC_API_KEY, or start Ollama (on 127.0.0.1:11434, \
         or where $OLLAMA_HOST says), then restart the daemon or run `crabtalkd reload`. \
         Or name a provider's model by its preset, e.g. default_model = \"groq/llama-3.3-70b-versatile\" \
         with GROQ_API_KEY set (`crabtalkd check` lists the presets and their keys).",
    );
    if !problems.is_empty() {
        hint.push_str("\n\nWhat was wrong with the configured providers:\n");
        for problem in problems {
            hint.push_str("- ");
            hint.push_str(problem);
            hint.push('\n');
        }
    }
    hint
}
