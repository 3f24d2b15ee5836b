//! Checking a bot token with `getMe`: what crabup's first-run setup does
//! before it saves a token, and what the gateway does at start.

use std::time::Duration;

use teloxide_core::requests::{JsonRequest, Payload};
use teloxide_core::{ApiError, Bot, RequestError};

/// How long `getMe` may take.
pub const GET_ME_TIMEOUT: Duration = Duration::from_secs(15);

/// The bot a token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    pub id: u64,
    /// Without the `@`.
    pub username: String,
    pub first_name: String,
}

/// Why a token could not be confirmed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TokenError {
    /// Telegram answered that the token is not valid.
    #[error(
        "Telegram refused the bot token ({0}); copy it again from @BotFather (/mybots → API Token)"
    )]
    Refused(String),
    /// Nothing answered, or not in time.
    #[error("the Bot API at {url} did not answer: {reason}")]
    Unreachable { url: String, reason: String },
    /// Telegram answered something else.
    #[error("getMe failed: {0}")]
    Other(String),
}

impl TokenError {
    /// Whether it is worth trying again later (the network), rather than
    /// fixing the token.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }
}

/// A client for the Bot API at `api_url` with `token`, whose requests may
/// take `timeout` (more than the longest long poll).
pub fn bot(api_url: &url::Url, token: &str, timeout: Duration) -> Bot {
    let client = teloxide_core::net::default_reqwest_settings()
        .timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(4)
        .build()
        .expect("an HTTP client with default TLS settings");
    Bot::with_client(token, client).set_api_url(api_url.clone())
}

/// `getMe`, its result read as plain JSON (only `id`, `username` and
/// `first_name` matter here).
#[derive(Debug, Clone, serde::Serialize)]
struct GetMe {}

impl Payload for GetMe {
    type Output = serde_json::Value;
    const NAME: &'static str = "getMe";
}

/// Asks the Bot API at `api_url` who `token` belongs to.
pub async fn get_me(api_url: &url::Url, token: &str) -> Result<BotIdentity, TokenError> {
    ask_get_me(&bot(api_url, token, GET_ME_TIMEOUT)).await
}

/// [`get_me`] with a client made already.
pub async fn ask_get_me(bot: &Bot) -> Result<BotIdentity, TokenError> {
    let api_url = bot.api_url();
    let unreachable = |reason: String| TokenError::Unreachable {
        url: api_url.to_string(),
        reason,
    };
    let request = JsonRequest::new(bot.clone(), GetMe {});
    match tokio::time::timeout(GET_ME_TIMEOUT, request).await {
        Err(_) => Err(unreachable(format!("no answer within {GET_ME_TIMEOUT:?}"))),
        Ok(Ok(me)) => {
            let id = me
                .get("id")
                .and_then(serde_json::Value::as_u64)
                .ok_or_else(|| {
                    TokenError::Other(format!("getMe answered without the bot's id: {me}"))
                })?;
            let text = |key: &str| {
                me.get(key)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            Ok(BotIdentity {
                id,
                username: text("username"),
                first_name: text("first_name"),
            })
        }
        Ok(Err(err)) => Err(classify(err, &unreachable)),
    }
}

fn classify(err: RequestError, unreachable: &dyn Fn(String) -> TokenError) -> TokenError {
    match err {
        RequestError::Api(ApiError::InvalidToken) => TokenError::Refused("401 Unauthorized".into()),
        RequestError::Api(ApiError::Unknown(text)) if text.contains("Unauthorized") => {
            TokenError::Refused(text)
        }
        RequestError::Network(err) => unreachable(describe_network(&err)),
        RequestError::InvalidJson { raw, .. } => TokenError::Other(format!(
            "the answer is not the Bot API's JSON (is api_base_url right?): {}",
            raw.chars().take(200).collect::<String>()
        )),
        other => TokenError::Other(other.to_string()),
    }
}

/// A network error in words, with its causes.
pub fn describe_network(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

/// [`get_me`] for a caller without a runtime (crabup's setup).
pub fn get_me_blocking(api_url: &url::Url, token: &str) -> Result<BotIdentity, TokenError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| TokenError::Other(format!("cannot start a runtime: {err}")))?;
    runtime.block_on(get_me(api_url, token))
}
