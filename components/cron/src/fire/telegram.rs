//! Delivering a reply to Telegram through the telegram component's MCP
//! tool `telegram_send {chat_id, topic?, text, run_id}`, found via
//! `run/telegram.port`. A delivery counts only with the Telegram message
//! ids the tool returns.
//!
//! The run id makes the call idempotent: the gateway also relays the
//! replies of turns cron starts in a `tg:` conversation, and whichever of
//! the two comes first sends; the other gets the same message ids back
//! (the gateway's ledger, RFC 0070).

use std::path::PathBuf;

use crabtalk_home::token::TokenError;
use crabtalk_home::{Home, HomeError, PortFile, PortFileError};
use crabtalk_kit::loopback::owner_transport;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::ClientInitializeError;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};

/// How long a delivery may take in all.
const DELIVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Why a reply was not delivered (the delivery's recorded error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeliveryError {
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error(
        "the telegram component is not running (no {}); start it with `crabup telegram start`",
        port_file.display()
    )]
    NotRunning { port_file: PathBuf },
    #[error("cannot read {}: {source}", port_file.display())]
    PortFile {
        port_file: PathBuf,
        source: PortFileError,
    },
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("cannot reach the telegram component at {url}: {source}")]
    Unreachable {
        url: String,
        source: Box<ClientInitializeError>,
    },
    #[error("telegram_send failed: {source}")]
    Call { source: Box<ServiceError> },
    #[error("telegram_send did not answer within {DELIVERY_TIMEOUT:?}")]
    TimedOut,
    #[error("telegram_send answered with an error: {text}")]
    Refused { text: String },
    #[error("telegram_send answered without message ids: {text}")]
    NoMessageIds { text: String },
}

/// Sends through the telegram component of a home.
#[derive(Debug, Clone)]
pub(crate) struct TelegramDelivery {
    home: Home,
}

impl TelegramDelivery {
    pub(crate) fn new(home: Home) -> Self {
        Self { home }
    }

    /// Sends `text` to `chat`; the ids of the messages sent.
    pub(crate) async fn send(
        &self,
        chat: &str,
        text: &str,
        run_id: Option<u64>,
    ) -> Result<Vec<i64>, DeliveryError> {
        let port_file = self.home.port_file("telegram")?;
        let port = match PortFile::read(&port_file) {
            Ok(file) => file.port,
            Err(err) if err.is_missing() => return Err(DeliveryError::NotRunning { port_file }),
            Err(source) => return Err(DeliveryError::PortFile { port_file, source }),
        };
        let arguments = arguments(chat, text, run_id);
        let call = async {
            let url = crabtalk_kit::mcp::component_url(port);
            let transport = owner_transport(&self.home, port)?;
            let client =
                ().serve(transport)
                    .await
                    .map_err(|source| DeliveryError::Unreachable {
                        url,
                        source: Box::new(source),
                    })?;
            let params = CallToolRequestParams::new("telegram_send")
                .with_arguments(arguments.as_object().cloned().unwrap_or_default());
            let result = client.call_tool(params).await;
            let _ = client.cancel().await;
            result.map_err(|source| DeliveryError::Call {
                source: Box::new(source),
            })
        };
        let result = tokio::time::timeout(DELIVERY_TIMEOUT, call)
            .await
            .map_err(|_| DeliveryError::TimedOut)??;
        message_ids(&result)
    }
}

/// The `telegram_send` arguments for `chat` (`42`, `@channel`, or a
/// forum topic `-100123:7`).
pub(crate) fn arguments(chat: &str, text: &str, run_id: Option<u64>) -> Value {
    let (chat, topic) = match chat.split_once(':') {
        Some((chat, topic)) => (chat, topic.parse::<i64>().ok()),
        None => (chat, None),
    };
    let chat_id = chat
        .parse::<i64>()
        .map_or_else(|_| json!(chat), |id| json!(id));
    let mut arguments = json!({ "chat_id": chat_id, "text": text });
    if let Some(topic) = topic {
        arguments["topic"] = json!(topic);
    }
    if let Some(run_id) = run_id {
        arguments["run_id"] = json!(run_id);
    }
    arguments
}

/// The message ids in a `telegram_send` result: `message_ids` (or
/// `message_id`) in its structured content, or in its text as JSON.
pub(crate) fn message_ids(result: &CallToolResult) -> Result<Vec<i64>, DeliveryError> {
    let text: String = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        return Err(DeliveryError::Refused { text });
    }
    let from = |value: &Value| -> Option<Vec<i64>> {
        if let Some(ids) = value.get("message_ids").and_then(Value::as_array) {
            let ids: Vec<i64> = ids.iter().filter_map(Value::as_i64).collect();
            return (!ids.is_empty()).then_some(ids);
        }
        value
            .get("message_id")
            .and_then(Value::as_i64)
            .map(|id| vec![id])
    };
    result
        .structured_content
        .as_ref()
        .and_then(from)
        .or_else(|| {
            serde_json::from_str::<Value>(&text)
                .ok()
                .as_ref()
                .and_then(from)
        })
        .ok_or(DeliveryError::NoMessageIds { text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_carry_the_topic_and_the_run() {
        assert_eq!(
            arguments("42", "hi", Some(7)),
            json!({"chat_id": 42, "text": "hi", "run_id": 7})
        );
        assert_eq!(
            arguments("-100123:9", "hi", None),
            json!({"chat_id": -100123, "topic": 9, "text": "hi"})
        );
        assert_eq!(
            arguments("@news", "hi", None),
            json!({"chat_id": "@news", "text": "hi"})
        );
    }
}
