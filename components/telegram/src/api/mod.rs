//! The Bot API as the gateway uses it: each method a JSON request through
//! the gateway's own client ([`wire`](crate::wire)), each under the global
//! [`Throttle`], each bounded in time, and every failure sorted into what
//! the gateway does about it ([`ApiFailure`]). Nothing here waits or
//! retries: a 5xx, an answer that is not JSON or no answer at all comes
//! back at once as [`ApiFailure::Unavailable`], with its real cause, and
//! the caller (the poller, a chat's lane) owns the backoff.
//!
//! The per-chat pace (one message or edit a second in private chats,
//! one every three in groups) is the [`outbox`](crate::outbox)'s; this
//! module only counts requests overall.

pub(crate) mod throttle;
pub(crate) mod update;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use teloxide_core::types::{BotCommand, InlineKeyboardMarkup};
use tokio::io::AsyncWriteExt;

use crate::address::ChatAddress;
use crate::token::{BotIdentity, TokenError};
use crate::wire::{BotClient, CallError, describe_network};
pub(crate) use throttle::Throttle;
use update::ALLOWED_UPDATES;

/// How long a request other than a long poll may take.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest file the Bot API lets a bot download.
pub(crate) const MAX_DOWNLOAD: u64 = 20 * 1024 * 1024;

/// How long one download may take.
pub(crate) const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// What went wrong with a request, sorted by what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ApiFailure {
    /// 429: wait this long before the next request to that chat.
    #[error("Telegram asks to wait {0:?} (flood control)")]
    RetryAfter(Duration),
    /// The group became a supergroup with this id.
    #[error("the group moved to the supergroup {0}")]
    Migrated(i64),
    /// 400 "can't parse entities": the HTML was refused.
    #[error("Telegram could not parse the formatting: {0}")]
    CantParseEntities(String),
    /// An edit that changes nothing.
    #[error("the message is not modified")]
    NotModified,
    /// 409 on `getUpdates`: someone else receives this bot's updates.
    #[error("{0}")]
    Conflict(String),
    /// 401/404: the token is not (or no longer) valid.
    #[error("Telegram refused the bot token ({0}); get a new one from @BotFather")]
    Unauthorized(String),
    /// No answer, not in time, a server error (5xx), or an answer that is
    /// not the Bot API's JSON: worth trying again, with a pause.
    #[error("the Bot API is unavailable: {0}")]
    Unavailable(String),
    /// Anything else Telegram said (a 4xx: the request itself is refused).
    #[error("{0}")]
    Other(String),
}

impl ApiFailure {
    /// Whether trying the same request again later may work.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }

    fn from_call(err: CallError) -> Self {
        if err.is_transient() {
            return Self::Unavailable(err.to_string());
        }
        let CallError::Refused {
            code,
            description,
            retry_after,
            migrate_to,
        } = err
        else {
            return Self::Unavailable(err.to_string());
        };
        if let Some(seconds) = retry_after {
            return Self::RetryAfter(Duration::from_secs(seconds));
        }
        if let Some(chat) = migrate_to {
            return Self::Migrated(chat);
        }
        Self::from_description(code, description)
    }

    fn from_description(code: u16, text: String) -> Self {
        if text.contains("can't parse entities") {
            Self::CantParseEntities(text)
        } else if text.contains("message is not modified") {
            Self::NotModified
        } else if text.contains("webhook is active") {
            Self::Conflict(WEBHOOK_SET.into())
        } else if code == 409 || text.starts_with("Conflict") {
            Self::Conflict(format!("{OTHER_POLLER} (Telegram said: {text})"))
        } else if code == 401 || text == "Unauthorized" || text == "Not Found" {
            Self::Unauthorized(format!("{code} {text}"))
        } else {
            Self::Other(text)
        }
    }
}

/// 409, another `getUpdates`.
pub(crate) const OTHER_POLLER: &str = "409 Conflict: another program is polling this bot's updates (a second \
     crabtalk-telegram with the same token on another machine or home, or another bot framework); \
     stop it — only one program can receive a bot's updates";
/// 409, a webhook.
pub(crate) const WEBHOOK_SET: &str = "409 Conflict: a webhook is set for this bot, so Telegram sends its updates \
     there instead; deleting the webhook";

/// Text and how Telegram should read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text {
    Html(String),
    Plain(String),
}

/// A file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteFile {
    pub path: String,
    pub size: u64,
}

/// The Bot API of one bot.
#[derive(Clone)]
pub(crate) struct Api {
    client: BotClient,
    throttle: Arc<Throttle>,
}

impl Api {
    /// A client for `token` at `api_url`.
    pub(crate) fn new(api_url: &url::Url, token: &str, throttle: Arc<Throttle>) -> Self {
        Self {
            client: BotClient::new(api_url, token, REQUEST_TIMEOUT),
            throttle,
        }
    }

    pub(crate) fn throttle(&self) -> &Arc<Throttle> {
        &self.throttle
    }

    /// Calls `method` under the global limit; its result as plain JSON
    /// (the gateway needs a few fields of it, and a server that leaves out
    /// a field a library's types insist on is no reason to fail).
    async fn call(&self, method: &str, params: Value) -> Result<Value, ApiFailure> {
        let _permit = self.throttle.acquire().await;
        self.client
            .call(method, &params)
            .await
            .map_err(ApiFailure::from_call)
    }

    /// Who the bot is.
    pub(crate) async fn get_me(&self) -> Result<BotIdentity, TokenError> {
        let _permit = self.throttle.acquire().await;
        crate::token::ask_get_me(&self.client).await
    }

    pub(crate) async fn delete_webhook(&self) -> Result<(), ApiFailure> {
        self.call("deleteWebhook", json!({})).await.map(drop)
    }

    pub(crate) async fn set_my_commands(
        &self,
        commands: Vec<BotCommand>,
    ) -> Result<(), ApiFailure> {
        self.call("setMyCommands", json!({ "commands": commands }))
            .await
            .map(drop)
    }

    /// One long poll of up to `timeout`: the updates from `offset` on,
    /// each as raw JSON (each is read on its own, so one the gateway
    /// cannot read does not hide the others). Bounded by `timeout` and a
    /// margin; nothing here waits beyond the request.
    pub(crate) async fn get_updates(
        &self,
        offset: i64,
        timeout: Duration,
    ) -> Result<Vec<Value>, ApiFailure> {
        let params = json!({
            "offset": offset,
            "timeout": timeout.as_secs(),
            "limit": 100,
            "allowed_updates": ALLOWED_UPDATES,
        });
        let _permit = self.throttle.acquire().await;
        let result = self
            .client
            .call_within("getUpdates", &params, timeout + REQUEST_TIMEOUT)
            .await
            .map_err(ApiFailure::from_call)?;
        match result {
            Value::Array(updates) => Ok(updates),
            other => Err(ApiFailure::Unavailable(format!(
                "getUpdates answered a result that is not a list: {}",
                other.to_string().chars().take(200).collect::<String>()
            ))),
        }
    }

    /// Sends `text` to `to`; the new message's id.
    pub(crate) async fn send_message(
        &self,
        to: ChatAddress,
        text: &Text,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<i32, ApiFailure> {
        let mut params = text_params(text);
        params["chat_id"] = json!(to.chat);
        if let Some(topic) = to.topic {
            params["message_thread_id"] = json!(topic);
        }
        if let Some(keyboard) = keyboard {
            params["reply_markup"] = json!(keyboard);
        }
        message_id(&self.call("sendMessage", params).await?)
    }

    /// Replaces the text of message `id` in `chat`.
    pub(crate) async fn edit_message_text(
        &self,
        chat: i64,
        id: i32,
        text: &Text,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<(), ApiFailure> {
        let mut params = text_params(text);
        params["chat_id"] = json!(chat);
        params["message_id"] = json!(id);
        if let Some(keyboard) = keyboard {
            params["reply_markup"] = json!(keyboard);
        }
        self.call("editMessageText", params).await.map(drop)
    }

    /// Replaces (or with `None`, removes) the keyboard of message `id`.
    pub(crate) async fn edit_keyboard(
        &self,
        chat: i64,
        id: i32,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<(), ApiFailure> {
        let keyboard = keyboard.unwrap_or_else(|| InlineKeyboardMarkup::new(Vec::<Vec<_>>::new()));
        let params = json!({ "chat_id": chat, "message_id": id, "reply_markup": keyboard });
        self.call("editMessageReplyMarkup", params).await.map(drop)
    }

    pub(crate) async fn delete_message(&self, chat: i64, id: i32) -> Result<(), ApiFailure> {
        self.call(
            "deleteMessage",
            json!({ "chat_id": chat, "message_id": id }),
        )
        .await
        .map(drop)
    }

    /// "typing…" in `to` (Telegram shows it for five seconds). Skipped
    /// (`Ok(false)`) when the global limit has no room right now: replies
    /// come first.
    pub(crate) async fn typing(&self, to: ChatAddress) -> Result<bool, ApiFailure> {
        let Some(permit) = self.throttle.try_acquire() else {
            return Ok(false);
        };
        let mut params = json!({ "chat_id": to.chat, "action": "typing" });
        if let Some(topic) = to.topic {
            params["message_thread_id"] = json!(topic);
        }
        let result = self.client.call("sendChatAction", &params).await;
        drop(permit);
        result.map(|_| true).map_err(ApiFailure::from_call)
    }

    /// Answers a button press (with a short notice, if any).
    pub(crate) async fn answer_callback(
        &self,
        id: &str,
        notice: Option<&str>,
    ) -> Result<(), ApiFailure> {
        let mut params = json!({ "callback_query_id": id });
        if let Some(notice) = notice {
            params["text"] = json!(notice);
        }
        self.call("answerCallbackQuery", params).await.map(drop)
    }

    /// Where file `file_id` can be downloaded from.
    pub(crate) async fn get_file(&self, file_id: &str) -> Result<RemoteFile, ApiFailure> {
        let file = self.call("getFile", json!({ "file_id": file_id })).await?;
        let path = file
            .get("file_path")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ApiFailure::Other(format!("getFile answered without a file_path: {file}"))
            })?;
        Ok(RemoteFile {
            path: path.to_owned(),
            size: file.get("file_size").and_then(Value::as_u64).unwrap_or(0),
        })
    }

    /// Downloads `file` to `to` (mode 0600), refusing more than
    /// [`MAX_DOWNLOAD`] bytes or [`DOWNLOAD_TIMEOUT`]; the number of bytes
    /// written. A file left half-written is removed.
    pub(crate) async fn download(&self, file: &RemoteFile, to: &Path) -> Result<u64, ApiFailure> {
        let io = |err: std::io::Error| {
            ApiFailure::Other(format!("cannot write {}: {err}", to.display()))
        };
        let result = tokio::time::timeout(DOWNLOAD_TIMEOUT, async {
            // The request counts against the global limit; the transfer
            // that follows does not hold a place in it.
            let permit = self.throttle.acquire().await;
            let started = self.client.download(&file.path).await;
            drop(permit);
            let mut response = started.map_err(ApiFailure::from_call)?;
            if response.content_length().is_some_and(|n| n > MAX_DOWNLOAD) {
                return Err(too_large());
            }
            let mut options = tokio::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            options.mode(0o600);
            let mut out = options.open(to).await.map_err(io)?;
            let mut written: u64 = 0;
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|err| ApiFailure::Unavailable(describe_network(&err.without_url())))?
            {
                written += chunk.len() as u64;
                if written > MAX_DOWNLOAD {
                    return Err(too_large());
                }
                out.write_all(&chunk).await.map_err(io)?;
            }
            out.flush().await.map_err(io)?;
            Ok(written)
        })
        .await
        .unwrap_or_else(|_| {
            Err(ApiFailure::Unavailable(format!(
                "the download took over {} s",
                DOWNLOAD_TIMEOUT.as_secs()
            )))
        });
        if result.is_err() {
            let _ = tokio::fs::remove_file(to).await;
        }
        result
    }
}

fn too_large() -> ApiFailure {
    ApiFailure::Other(format!(
        "the file is larger than {} MB",
        MAX_DOWNLOAD / 1024 / 1024
    ))
}

/// `text`, `parse_mode` and the link preview switched off.
fn text_params(text: &Text) -> Value {
    let mut params = json!({ "link_preview_options": { "is_disabled": true } });
    match text {
        Text::Html(html) => {
            params["text"] = json!(html);
            params["parse_mode"] = json!("HTML");
        }
        Text::Plain(plain) => params["text"] = json!(plain),
    }
    params
}

/// The `message_id` of a sent or edited message.
fn message_id(result: &serde_json::Value) -> Result<i32, ApiFailure> {
    result
        .get("message_id")
        .and_then(serde_json::Value::as_i64)
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| ApiFailure::Other(format!("a message without a message_id: {result}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_sorted_by_what_to_do() {
        let refused = |code: u16, text: &str| {
            ApiFailure::from_call(CallError::Refused {
                code,
                description: text.into(),
                retry_after: None,
                migrate_to: None,
            })
        };
        assert!(matches!(
            refused(
                400,
                "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"
            ),
            ApiFailure::CantParseEntities(_)
        ));
        assert_eq!(
            refused(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
            ),
            ApiFailure::Conflict(WEBHOOK_SET.into())
        );
        assert!(
            matches!(refused(409, "Conflict: terminated by other getUpdates request"), ApiFailure::Conflict(text) if text.contains("another program"))
        );
        assert!(matches!(
            refused(401, "Unauthorized"),
            ApiFailure::Unauthorized(_)
        ));
        assert!(matches!(
            refused(400, "Bad Request: chat not found"),
            ApiFailure::Other(_)
        ));
        assert!(matches!(
            refused(
                400,
                "Bad Request: message is not modified: specified new message content"
            ),
            ApiFailure::NotModified
        ));
        // Server errors and answers that are not the Bot API's: try again.
        let server = refused(502, "Bad Gateway");
        assert!(server.is_transient(), "{server:?}");
        assert_eq!(
            server.to_string(),
            "the Bot API is unavailable: 502 Bad Gateway"
        );
        let junk = ApiFailure::from_call(CallError::NotJson {
            status: 200,
            body: "<html>".into(),
        });
        assert!(junk.is_transient(), "{junk:?}");
        assert!(!refused(403, "Forbidden: bot was blocked by the user").is_transient());
        assert_eq!(
            ApiFailure::from_call(CallError::Refused {
                code: 429,
                description: "Too Many Requests: retry after 3".into(),
                retry_after: Some(3),
                migrate_to: None,
            }),
            ApiFailure::RetryAfter(Duration::from_secs(3))
        );
    }
}
