//! Checking a bot token with `getMe`: what crabup's first-run setup does
//! before it saves a token, and what the gateway does at start.

use std::time::Duration;

use crate::wire::{BotClient, CallError};

/// How long `getMe` may take.
pub(crate) const GET_ME_TIMEOUT: Duration = Duration::from_secs(15);

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
    /// Nothing answered, not in time, or not as the Bot API answers (a
    /// 5xx, a proxy's page).
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

/// Asks the Bot API at `api_url` who `token` belongs to.
pub(crate) async fn get_me(api_url: &url::Url, token: &str) -> Result<BotIdentity, TokenError> {
    ask_get_me(&BotClient::new(api_url, token, GET_ME_TIMEOUT)).await
}

/// [`get_me`] with a client made already; its result read as plain JSON
/// (only `id`, `username` and `first_name` matter here).
pub(crate) async fn ask_get_me(client: &BotClient) -> Result<BotIdentity, TokenError> {
    let me = client
        .call_within("getMe", &serde_json::json!({}), GET_ME_TIMEOUT)
        .await
        .map_err(|err| classify(err, client.api_url()))?;
    let id = me
        .get("id")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| TokenError::Other(format!("getMe answered without the bot's id: {me}")))?;
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

fn classify(err: CallError, api_url: &str) -> TokenError {
    match err {
        CallError::Refused {
            code, description, ..
        } if code == 401 || description == "Unauthorized" || description == "Not Found" => {
            TokenError::Refused(format!("{code} {description}"))
        }
        err if err.is_transient() => TokenError::Unreachable {
            url: api_url.to_owned(),
            reason: match err {
                CallError::NotJson { .. } => format!("{err} (is api_base_url right?)"),
                other => other.to_string(),
            },
        },
        other => TokenError::Other(other.to_string()),
    }
}

/// Checks `token` with the Bot API's `getMe` at `api_url`, for a caller
/// without a runtime (crabup's setup): the bot it belongs to.
pub fn get_me_blocking(api_url: &url::Url, token: &str) -> Result<BotIdentity, TokenError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| TokenError::Other(format!("cannot start a runtime: {err}")))?;
    runtime.block_on(get_me(api_url, token))
}
