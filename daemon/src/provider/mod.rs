//! Language models, through `crabllm-provider`.
//!
//! [`ModelRegistry`] maps every model name to the provider that serves it,
//! built from `[[providers]]` in `config.toml` (or, when there are none, from
//! what the environment offers: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, a
//! local Ollama). Providers that list no models have them discovered in the
//! background, so startup never waits on the network.
//!
//! A name no provider serves may still name a preset
//! ([`crate::config::presets`]): `groq/llama-3.3-70b-versatile` goes to
//! Groq as `llama-3.3-70b-versatile`, with the key from `GROQ_API_KEY`.
//! Exact names come first, then presets, longest name first.
//!
//! Calls go through [`retry`]: non-streaming calls retry transient failures
//! with exponential backoff and full jitter; streams retry only until their
//! first chunk, and fail with a clear error when they stall longer than the
//! idle timeout.

mod detect;
pub mod retry;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crabllm_core::{
    ChatCompletionRequest, ChatCompletionResponse, Provider, ProviderConfig, ProviderKind,
};
use crabllm_provider::{HttpClient, RemoteProvider};
use parking_lot::RwLock;

pub use self::retry::{ChunkStream, RetryPolicy};
use crate::config::presets::{KeyLookup, Preset};
use crate::config::{DaemonConfig, LlmSettings, ProviderEntry};

/// How long background model discovery may take per provider.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a model call failed, in words a person can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("{0}")]
    NotConfigured(String),
    #[error("model {model:?} is not served by any configured provider; known models: {known}")]
    UnknownModel { model: String, known: String },
    #[error("{provider} failed: {message}")]
    Provider {
        provider: String,
        status: Option<u16>,
        message: String,
    },
    #[error(
        "the model stream stalled: nothing arrived for {secs} s ([llm] stream_idle_timeout_secs in config.toml)"
    )]
    Idle { secs: u64 },
}

impl LlmError {
    fn from_provider(provider: &str, err: &crabllm_core::Error) -> Self {
        let status = match err {
            crabllm_core::Error::Provider { status, .. } => Some(*status),
            _ => None,
        };
        let message = match status {
            Some(status) => format!("HTTP {status}: {}", err.message()),
            None => err.message(),
        };
        Self::Provider {
            provider: provider.to_owned(),
            status,
            message,
        }
    }
}

/// One configured provider.
#[derive(Clone)]
struct ProviderSlot {
    label: String,
    provider: Arc<RemoteProvider>,
    /// What it was built from, to build it again with a serving thread's
    /// own HTTP client.
    config: Arc<ProviderConfig>,
}

/// A preset, with its provider when its key is there.
struct PresetSlot {
    preset: Preset,
    /// The provider, or why there is none.
    provider: Result<ProviderSlot, PresetUnready>,
}

/// Why a preset has no provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PresetUnready {
    /// None of these variables is set.
    #[error("{} is not set", .0.join(" or "))]
    NoKey(Vec<String>),
    /// Its entry is refused (a kind the provider library refuses).
    #[error("its entry is refused: {0}")]
    Refused(RefusedProvider),
}

/// Where a model name leads.
#[derive(Clone)]
pub struct Resolved {
    /// The name the caller used (`groq/llama-3.3-70b-versatile`).
    pub model: String,
    /// The name the provider knows it by (`llama-3.3-70b-versatile`).
    pub upstream: String,
    pub provider: Arc<RemoteProvider>,
    /// The provider's label, for messages.
    pub label: String,
    /// What the provider was built from.
    config: Arc<ProviderConfig>,
}

impl Resolved {
    /// On a serving thread, the same provider with that thread's own HTTP
    /// client, so that the connections it opens live on the thread whose
    /// turns use them (RFC 0049); elsewhere `None`: the shared one.
    fn here(&self) -> Option<RemoteProvider> {
        local_client().map(|client| RemoteProvider::new(&self.label, &self.config, client))
    }
}

thread_local! {
    /// Whether this thread calls models with a client of its own.
    static OWN_CLIENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// That client, made at the thread's first call to a model.
    static CLIENT: std::cell::OnceCell<HttpClient> = const { std::cell::OnceCell::new() };
}

/// From now on this thread (a serving thread, RFC 0049) calls models with
/// an HTTP client of its own, whose connections its runtime drives.
pub(crate) fn own_client_on_this_thread() {
    OWN_CLIENT.set(true);
}

/// This thread's own HTTP client, if it has one.
fn local_client() -> Option<HttpClient> {
    if !OWN_CLIENT.get() {
        return None;
    }
    Some(CLIENT.with(|client| client.get_or_init(crabllm_provider::make_client).clone()))
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("model", &self.model)
            .field("upstream", &self.upstream)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// How a preset stands, for `crabtalkd check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetStatus {
    pub name: String,
    pub base_url: String,
    /// Where its key is (`GROQ_API_KEY`), "no key needed", or why it has
    /// no provider.
    pub key: Result<String, PresetUnready>,
    pub configured: bool,
}

/// Model name → provider, plus the active (default) model.
pub struct ModelRegistry {
    routes: RwLock<BTreeMap<String, ProviderSlot>>,
    /// Longest name first.
    presets: Vec<PresetSlot>,
    /// Providers in config order, with whether their models are still being
    /// discovered.
    providers: Vec<(ProviderSlot, bool)>,
    active: RwLock<Option<String>>,
    /// Where the active model comes from, in words.
    active_source: RwLock<String>,
    configured_default: Option<String>,
    policy: RetryPolicy,
    /// Why nothing is available, when nothing is.
    setup_problem: RwLock<Option<String>>,
    /// Problems with individual providers (bad entries, failed discovery).
    problems: RwLock<Vec<String>>,
}

/// What was found in the environment when `config.toml` lists no provider.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub openai_api_key: Option<String>,
    pub anthropic_api_key: Option<String>,
    /// Base URL of a local Ollama, if one answers.
    pub ollama: Option<String>,
}

impl ModelRegistry {
    /// Builds the registry from `config`. When `config` lists no provider,
    /// `environment` supplies them.
    pub fn new(config: &DaemonConfig, environment: &Environment) -> Self {
        let client = crabllm_provider::make_client();
        let mut entries: Vec<ProviderEntry> = config.providers.clone();
        let detected = entries.is_empty();
        if detected {
            entries = detect::entries(environment);
        }
        let mut problems = Vec::new();
        let mut providers = Vec::new();
        let mut routes = BTreeMap::new();
        for entry in &entries {
            match build_provider(entry, &client) {
                Ok((provider, provider_config)) => {
                    let slot = ProviderSlot {
                        label: entry.label().to_owned(),
                        provider: Arc::new(provider),
                        config: Arc::new(provider_config),
                    };
                    let models = entry.models.clone().unwrap_or_default();
                    for model in &models {
                        if let Some(existing) = routes.get(model) {
                            let existing: &ProviderSlot = existing;
                            problems.push(format!(
                                "model {model:?} is listed by both {} and {}; {} serves it",
                                existing.label, slot.label, existing.label
                            ));
                            continue;
                        }
                        routes.insert(model.clone(), slot.clone());
                    }
                    providers.push((slot, entry.models.is_none()));
                }
                Err(refused) => problems.push(refused.to_string()),
            }
        }
        for problem in &problems {
            tracing::warn!("{problem}");
        }
        let setup_problem = providers.is_empty().then(|| detect::setup_hint(&problems));
        let configured_default = config.default_model.clone();
        let mut active_source = String::new();
        let active = match configured_default.clone() {
            Some(model) => {
                active_source = "default_model in config.toml".into();
                Some(model)
            }
            None => {
                let first = providers.first().map(|(slot, _)| slot.label.clone());
                let model = first.as_ref().and_then(|first| {
                    entries
                        .iter()
                        .find(|entry| entry.label() == first)
                        .and_then(|entry| entry.models.as_ref()?.first().cloned())
                });
                if let (Some(first), Some(_)) = (&first, &model) {
                    active_source = format!(
                        "the first model of provider {first} (config.toml sets no default_model)"
                    );
                }
                model
            }
        };
        if detected && !providers.is_empty() {
            let labels: Vec<_> = providers
                .iter()
                .map(|(slot, _)| slot.label.as_str())
                .collect();
            tracing::info!(
                "no [[providers]] in config.toml; using what the environment offers: {}",
                labels.join(", ")
            );
        }
        let presets = config
            .presets()
            .into_iter()
            .map(|preset| PresetSlot {
                provider: preset_provider(&preset, &client),
                preset,
            })
            .collect();
        Self {
            routes: RwLock::new(routes),
            presets,
            providers,
            active: RwLock::new(active),
            active_source: RwLock::new(active_source),
            configured_default,
            policy: RetryPolicy::from(&config.llm),
            setup_problem: RwLock::new(setup_problem),
            problems: RwLock::new(problems),
        }
    }

    /// Fetches the model lists of providers that were configured without
    /// one. Runs in the background; each provider is bounded by a timeout.
    pub async fn discover(self: Arc<Self>) {
        let pending: Vec<ProviderSlot> = self
            .providers
            .iter()
            .filter(|(_, discover)| *discover)
            .map(|(slot, _)| slot.clone())
            .collect();
        let lookups = pending.into_iter().map(|slot| async move {
            let listed = tokio::time::timeout(DISCOVERY_TIMEOUT, slot.provider.models()).await;
            (slot, listed)
        });
        for (slot, listed) in futures::future::join_all(lookups).await {
            match listed {
                Ok(Ok(list)) => {
                    let mut names: Vec<String> = list.data.into_iter().map(|model| model.id).collect();
                    names.sort();
                    tracing::info!("{}: {} models discovered", slot.label, names.len());
                    let mut routes = self.routes.write();
                    for name in &names {
                        routes.entry(name.clone()).or_insert_with(|| slot.clone());
                    }
                    drop(routes);
                    let mut active = self.active.write();
                    if active.is_none() && !names.is_empty() {
                        *active = names.first().cloned();
                        *self.active_source.write() = format!(
                            "the first model {} lists (config.toml sets no default_model)",
                            slot.label
                        );
                    }
                }
                Ok(Err(err)) => self.problem(format!(
                    "{}: could not list its models ({}); list them in config.toml with models = [...]",
                    slot.label,
                    err.message()
                )),
                Err(_) => self.problem(format!(
                    "{}: listing its models timed out; list them in config.toml with models = [...]",
                    slot.label
                )),
            }
        }
    }

    fn problem(&self, problem: String) {
        tracing::warn!("{problem}");
        self.problems.write().push(problem);
    }

    /// Every known model, sorted, with the active one marked.
    pub fn models(&self) -> Vec<(String, bool)> {
        let active = self.active.read().clone();
        self.routes
            .read()
            .keys()
            .map(|name| (name.clone(), Some(name) == active.as_ref()))
            .collect()
    }

    /// The model used when an agent names none.
    pub fn active_model(&self) -> Option<String> {
        self.active.read().clone()
    }

    /// Where the active model comes from, in words; empty when there is
    /// none.
    pub fn active_source(&self) -> String {
        self.active_source.read().clone()
    }

    /// Switches the active model, until the daemon restarts or reloads its
    /// configuration; it must be known.
    pub fn set_active(&self, model: &str) -> Result<(), LlmError> {
        if !self.routes.read().contains_key(model) {
            match self.preset_for(model) {
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(err),
                None => return Err(self.unknown(model)),
            }
        }
        *self.active.write() = Some(model.to_owned());
        *self.active_source.write() =
            "set by a client (SetActiveModel) since the daemon started; not saved".into();
        Ok(())
    }

    /// Problems worth showing a person (bad entries, failed discovery).
    pub fn problems(&self) -> Vec<String> {
        self.problems.read().clone()
    }

    /// The model to use for `requested` (or the active model), and its
    /// provider: a provider that lists the name first, then a preset.
    pub fn resolve(&self, requested: Option<&str>) -> Result<Resolved, LlmError> {
        let model = match requested.filter(|model| !model.is_empty()) {
            Some(model) => model.to_owned(),
            None => match self
                .active
                .read()
                .clone()
                .or_else(|| self.configured_default.clone())
            {
                Some(model) => model,
                None => {
                    if let Some(problem) = self.setup_problem.read().clone() {
                        return Err(LlmError::NotConfigured(problem));
                    }
                    let still_discovering =
                        self.providers.iter().any(|(_, discovering)| *discovering);
                    let hint = if still_discovering {
                        "no model is known yet: the providers' model lists are still being fetched or failed; set default_model in config.toml"
                    } else {
                        "no model is configured: set default_model, or models = [...] on a provider, in config.toml"
                    };
                    return Err(LlmError::NotConfigured(hint.into()));
                }
            },
        };
        let slot = self.routes.read().get(&model).cloned();
        if let Some(slot) = slot {
            return Ok(Resolved {
                upstream: model.clone(),
                model,
                provider: slot.provider,
                label: slot.label,
                config: slot.config,
            });
        }
        if let Some(found) = self.preset_for(&model) {
            return found;
        }
        if let Some(problem) = self.setup_problem.read().clone() {
            return Err(LlmError::NotConfigured(problem));
        }
        Err(self.unknown(&model))
    }

    /// The preset `model` names, if one does: its provider, or why it has
    /// none.
    fn preset_for(&self, model: &str) -> Option<Result<Resolved, LlmError>> {
        let (slot, upstream) = self
            .presets
            .iter()
            .find_map(|slot| slot.preset.strip(model).map(|rest| (slot, rest)))?;
        Some(match &slot.provider {
            Ok(provider) => Ok(Resolved {
                model: model.to_owned(),
                upstream: upstream.to_owned(),
                provider: provider.provider.clone(),
                label: provider.label.clone(),
                config: provider.config.clone(),
            }),
            Err(why) => {
                let fix = match why {
                    PresetUnready::NoKey(vars) => format!(
                        "; add {}=… to the env file in your crabtalk home (or export it) and \
                         restart the daemon",
                        vars[0]
                    ),
                    PresetUnready::Refused(_) => {
                        format!("; fix [presets.{}] in config.toml", slot.preset.name)
                    }
                };
                Err(LlmError::NotConfigured(format!(
                    "model {model:?} is served by the preset {}, but {why}{fix}",
                    slot.preset.name
                )))
            }
        })
    }

    /// Every preset: whether it has its key, longest name first.
    pub fn presets(&self) -> Vec<PresetStatus> {
        self.presets
            .iter()
            .map(|slot| PresetStatus {
                name: slot.preset.name.clone(),
                base_url: slot.preset.base_url.clone(),
                key: slot
                    .provider
                    .as_ref()
                    .map(|_| key_source(&slot.preset))
                    .map_err(Clone::clone),
                configured: slot.preset.configured,
            })
            .collect()
    }

    fn unknown(&self, model: &str) -> LlmError {
        let names: Vec<String> = self.routes.read().keys().cloned().collect();
        let known = if names.is_empty() {
            "none yet".to_owned()
        } else {
            names.join(", ")
        };
        LlmError::UnknownModel {
            model: model.to_owned(),
            known,
        }
    }

    /// Opens a streamed completion for `request.model`, retrying until the
    /// first chunk. The request is borrowed (its messages are lent by the
    /// conversation's history); its model becomes the upstream's name.
    pub async fn stream(
        &self,
        request: &mut ChatCompletionRequest,
    ) -> Result<(ChunkStream, String), LlmError> {
        let resolved = self.resolve(Some(&request.model))?;
        let here = resolved.here();
        let Resolved {
            model,
            upstream,
            provider,
            label,
            ..
        } = resolved;
        let provider = here.as_ref().unwrap_or(&provider);
        request.model = upstream;
        request.stream = Some(true);
        request.stream_options = Some(crabllm_core::StreamOptions {
            include_usage: true,
        });
        let stream = retry::open_stream(&self.policy, provider, request)
            .await
            .map_err(|err| match err {
                retry::StreamOpenError::Provider(err) => LlmError::from_provider(&label, &err),
                retry::StreamOpenError::Idle(secs) => LlmError::Idle { secs },
            })?;
        Ok((stream.with_label(label), model))
    }

    /// A whole (non-streamed) completion, retrying transient failures.
    pub async fn complete(
        &self,
        mut request: ChatCompletionRequest,
    ) -> Result<ChatCompletionResponse, LlmError> {
        let resolved = self.resolve(Some(&request.model))?;
        let here = resolved.here();
        let Resolved {
            upstream,
            provider,
            label,
            ..
        } = resolved;
        let provider = here.as_ref().unwrap_or(&provider);
        request.model = upstream;
        request.stream = None;
        retry::with_retries(&self.policy, || provider.chat_completion(&request))
            .await
            .map_err(|err| LlmError::from_provider(&label, &err))
    }
}

/// Why a provider entry (`[[providers]]` or a preset's) cannot be used;
/// the text names the provider and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefusedProvider {
    #[error(
        "provider {label}: kind \"openai-compatible\" needs base_url = \"http://host:port/v1\""
    )]
    NoBaseUrl { label: String },
    #[error(
        "provider {label}: kind \"google\" always talks to Google's own host \
         (generativelanguage.googleapis.com: the provider library fixes it), so \
         base_url = {url:?} would be ignored; remove base_url, or reach Gemini at that \
         address through its OpenAI-compatible API: kind = \"openai-compatible\", \
         base_url = \"<that address>/v1beta/openai\""
    )]
    GoogleBaseUrl { label: String, url: String },
    #[error(
        "provider {label}: kind \"bedrock\" is not supported by this build's provider library; use an OpenAI-compatible gateway in front of Bedrock (kind = \"openai-compatible\")"
    )]
    Bedrock { label: String },
    #[error("provider {label}: api_key_env = {var:?}, but ${var} is not set")]
    KeyNotSet { label: String, var: String },
    /// What the provider library's own check says.
    #[error("provider {label}: {message}")]
    Invalid { label: String, message: String },
}

/// Turns a config entry into a crabllm provider, or says what is wrong.
fn build_provider(
    entry: &ProviderEntry,
    client: &HttpClient,
) -> Result<(RemoteProvider, ProviderConfig), RefusedProvider> {
    let label = entry.label();
    let kind = match entry.kind.as_str() {
        "openai-compatible" | "openai_compatible" => {
            if entry.base_url.as_deref().is_none_or(str::is_empty) {
                return Err(RefusedProvider::NoBaseUrl {
                    label: label.to_owned(),
                });
            }
            ProviderKind::Openai
        }
        "google"
            if entry
                .base_url
                .as_deref()
                .is_some_and(|url| !url.trim().is_empty()) =>
        {
            return Err(RefusedProvider::GoogleBaseUrl {
                label: label.to_owned(),
                url: entry.base_url.clone().unwrap_or_default(),
            });
        }
        "bedrock" => {
            return Err(RefusedProvider::Bedrock {
                label: label.to_owned(),
            });
        }
        other => ProviderKind::from(other.to_owned()),
    };
    let api_key = match (&entry.api_key, &entry.api_key_env) {
        (Some(key), _) => Some(key.clone()),
        (None, Some(var)) => match std::env::var(var) {
            Ok(key) if !key.is_empty() => Some(key),
            _ => {
                return Err(RefusedProvider::KeyNotSet {
                    label: label.to_owned(),
                    var: var.clone(),
                });
            }
        },
        (None, None) => None,
    };
    let config = ProviderConfig {
        kind: Some(kind),
        api_key,
        base_url: entry.base_url.clone(),
        // The crabllm validator wants a model; discovery fills the real list.
        models: entry
            .models
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| vec!["(discovered)".into()]),
        api_version: entry.api_version.clone(),
        ..Default::default()
    };
    crabllm_provider::validate_provider(label, &config).map_err(|err| {
        RefusedProvider::Invalid {
            label: label.to_owned(),
            message: err.message(),
        }
    })?;
    Ok((RemoteProvider::new(label, &config, client.clone()), config))
}

/// A preset's provider, or why it has none: its key is read from the
/// daemon's environment (which holds the home's `env` file) now.
fn preset_provider(preset: &Preset, client: &HttpClient) -> Result<ProviderSlot, PresetUnready> {
    let api_key = match preset.lookup_key(|name| std::env::var(name).ok()) {
        KeyLookup::Found { key, .. } => Some(key),
        KeyLookup::NotNeeded => None,
        KeyLookup::Missing(vars) => return Err(PresetUnready::NoKey(vars)),
    };
    let entry = ProviderEntry {
        name: Some(preset.name.clone()),
        kind: preset.kind.clone(),
        base_url: Some(preset.base_url.clone()),
        api_key,
        ..Default::default()
    };
    let (provider, config) = build_provider(&entry, client).map_err(PresetUnready::Refused)?;
    Ok(ProviderSlot {
        label: preset.name.clone(),
        provider: Arc::new(provider),
        config: Arc::new(config),
    })
}

/// Where a preset that has its key found it, in words.
fn key_source(preset: &Preset) -> String {
    match preset.lookup_key(|name| std::env::var(name).ok()) {
        KeyLookup::Found { source, .. } => format!("key from {source}"),
        KeyLookup::NotNeeded => "no key needed".to_owned(),
        KeyLookup::Missing(vars) => format!("no key ({} is not set)", vars.join(" or ")),
    }
}

/// The presets of `config` as `crabtalkd check` shows them, read from this
/// process's environment.
pub fn preset_report(config: &DaemonConfig) -> Vec<PresetStatus> {
    let client = crabllm_provider::make_client();
    config
        .presets()
        .iter()
        .map(|preset| PresetStatus {
            name: preset.name.clone(),
            base_url: preset.base_url.clone(),
            key: preset_provider(preset, &client).map(|_| key_source(preset)),
            configured: preset.configured,
        })
        .collect()
}

impl From<&LlmSettings> for RetryPolicy {
    fn from(settings: &LlmSettings) -> Self {
        Self {
            max_retries: settings.max_retries,
            base_backoff: Duration::from_millis(settings.retry_backoff_ms),
            idle_timeout: Duration::from_secs(settings.stream_idle_timeout_secs.max(1)),
        }
    }
}

pub use detect::detect_environment;

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> DaemonConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_serving_thread_calls_the_model_with_its_own_client() {
        let registry = ModelRegistry::new(
            &config(
                "[[providers]]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodels = [\"m\"]\n",
            ),
            &Environment::default(),
        );
        let resolved = registry.resolve(Some("m")).unwrap();
        assert!(
            resolved.here().is_none(),
            "off the serving threads: the shared client"
        );
        let on_a_serving_thread = std::thread::spawn(move || {
            own_client_on_this_thread();
            matches!(resolved.here(), Some(RemoteProvider::Openai(_)))
        });
        assert!(
            on_a_serving_thread.join().unwrap(),
            "on a serving thread: the provider again, with the thread's client"
        );
    }

    #[test]
    fn nothing_configured_explains_what_to_set() {
        let registry = ModelRegistry::new(&DaemonConfig::default(), &Environment::default());
        let err = registry.resolve(None).unwrap_err();
        assert!(matches!(err, LlmError::NotConfigured(_)), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("[[providers]]"), "{message}");
        assert!(message.contains("OPENAI_API_KEY"), "{message}");
    }

    #[test]
    fn listed_models_route_and_the_first_is_active() {
        let registry = ModelRegistry::new(
            &config(
                r#"
                [[providers]]
                kind = "openai-compatible"
                base_url = "http://127.0.0.1:1/v1"
                models = ["small", "large"]
                [[providers]]
                name = "claude"
                kind = "anthropic"
                api_key = "k"
                models = ["sonnet", "small"]
                "#,
            ),
            &Environment::default(),
        );
        assert_eq!(registry.active_model().as_deref(), Some("small"));
        let models: Vec<_> = registry
            .models()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(models, ["large", "small", "sonnet"]);
        let resolved = registry.resolve(Some("sonnet")).unwrap();
        assert_eq!(resolved.label, "claude");
        assert!(registry.problems()[0].contains("listed by both"));
        let err = registry.resolve(Some("gpt-9")).unwrap_err();
        assert!(matches!(err, LlmError::UnknownModel { .. }), "{err:?}");
        assert!(err.to_string().contains("large, small, sonnet"), "{err}");
        registry.set_active("sonnet").unwrap();
        assert_eq!(registry.resolve(None).unwrap().model, "sonnet");
        assert!(registry.set_active("nope").is_err());
    }

    #[test]
    fn bad_entries_are_explained() {
        let registry = ModelRegistry::new(
            &config(
                r#"
                [[providers]]
                kind = "openai-compatible"
                models = ["m"]
                [[providers]]
                kind = "bedrock"
                [[providers]]
                kind = "anthropic"
                api_key_env = "CRABTALK_TEST_SURELY_UNSET_VAR"
                models = ["x"]
                [[providers]]
                kind = "google"
                api_key = "g"
                base_url = "https://gemini-proxy.example/v1beta"
                models = ["gemini-2.5-flash"]
                "#,
            ),
            &Environment::default(),
        );
        let problems = registry.problems().join("\n");
        assert!(problems.contains("needs base_url"), "{problems}");
        assert!(
            problems.contains("kind \"google\" always talks to Google's own host")
                && problems.contains("\"https://gemini-proxy.example/v1beta\" would be ignored"),
            "{problems}"
        );
        assert!(
            registry.resolve(Some("gemini-2.5-flash")).is_err(),
            "the refused provider serves nothing"
        );
        assert!(problems.contains("bedrock"), "{problems}");
        assert!(
            problems.contains("CRABTALK_TEST_SURELY_UNSET_VAR"),
            "{problems}"
        );
        let err = registry.resolve(None).unwrap_err().to_string();
        assert!(
            err.contains("needs base_url"),
            "the setup hint repeats what was wrong: {err}"
        );
    }

    #[test]
    fn the_environment_fills_in_when_nothing_is_configured() {
        let environment = Environment {
            openai_api_key: Some("sk".into()),
            anthropic_api_key: Some("ak".into()),
            ollama: Some("http://127.0.0.1:11434/v1".into()),
        };
        let registry = ModelRegistry::new(&DaemonConfig::default(), &environment);
        let labels: Vec<_> = registry
            .providers
            .iter()
            .map(|(slot, _)| slot.label.clone())
            .collect();
        assert_eq!(labels, ["openai", "anthropic", "ollama"]);
        assert!(
            registry
                .providers
                .iter()
                .all(|(_, discovering)| *discovering)
        );
    }

    #[test]
    fn a_name_no_provider_lists_goes_to_its_preset_without_the_prefix() {
        let registry = ModelRegistry::new(
            &config(
                r#"
                [[providers]]
                name = "router"
                kind = "openai-compatible"
                base_url = "http://127.0.0.1:1/v1"
                models = ["groq/served-here"]
                [presets.groq]
                base_url = "http://127.0.0.1:2/v1"
                api_key = "gsk-test"
                [presets.xai]
                api_key_env = "CRABTALK_TEST_SURELY_UNSET_VAR"
                "#,
            ),
            &Environment::default(),
        );
        // An exact name a provider lists wins over the preset.
        let exact = registry.resolve(Some("groq/served-here")).unwrap();
        assert_eq!(
            (exact.label.as_str(), exact.upstream.as_str()),
            ("router", "groq/served-here")
        );
        let routed = registry
            .resolve(Some("groq/llama-3.3-70b-versatile"))
            .unwrap();
        assert_eq!(
            (
                routed.model.as_str(),
                routed.upstream.as_str(),
                routed.label.as_str()
            ),
            (
                "groq/llama-3.3-70b-versatile",
                "llama-3.3-70b-versatile",
                "groq"
            )
        );
        let err = registry
            .resolve(Some("xai/grok-4"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("preset xai") && err.contains("CRABTALK_TEST_SURELY_UNSET_VAR is not set"),
            "{err}"
        );
        assert!(matches!(
            registry.resolve(Some("nobody/x")),
            Err(LlmError::UnknownModel { .. })
        ));
        registry.set_active("groq/llama-3.1-8b-instant").unwrap();
        assert_eq!(
            registry.resolve(None).unwrap().upstream,
            "llama-3.1-8b-instant"
        );
        assert!(registry.set_active("xai/grok-4").is_err());
        let groq = registry
            .presets()
            .into_iter()
            .find(|preset| preset.name == "groq")
            .unwrap();
        assert_eq!(groq.key, Ok("key from api_key in config.toml".to_owned()));
        assert!(groq.configured);
    }

    #[test]
    fn a_preset_works_with_nothing_else_configured() {
        let registry = ModelRegistry::new(
            &config(
                r#"
                default_model = "groq/llama-3.3-70b-versatile"
                [presets.groq]
                api_key = "gsk-test"
                "#,
            ),
            &Environment::default(),
        );
        let routed = registry.resolve(None).unwrap();
        assert_eq!(routed.upstream, "llama-3.3-70b-versatile");
        // Anything else still explains what to set.
        let err = registry.resolve(Some("gpt-4o")).unwrap_err();
        assert!(matches!(err, LlmError::NotConfigured(_)), "{err:?}");
        assert!(
            err.to_string().contains("groq/llama-3.3-70b-versatile"),
            "{err}"
        );
    }
}
