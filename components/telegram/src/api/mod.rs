//! The Bot API as the gateway uses it: `teloxide-core`'s typed requests,
//! each under the global [`Throttle`], each bounded in time, and every
//! failure sorted into what the gateway does about it ([`ApiFailure`]).
//!
//! The per-chat pace (one message or edit a second in private chats,
//! one every three in groups) is the [`outbox`](crate::outbox)'s; this
//! module only counts requests overall.

pub mod throttle;
pub mod updates;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use teloxide_core::payloads::{
    AnswerCallbackQuerySetters, EditMessageReplyMarkupSetters, EditMessageTextSetters,
    SendChatActionSetters, SendMessageSetters,
};
use teloxide_core::prelude::Requester;
use teloxide_core::requests::{HasPayload, JsonRequest, Payload};
use teloxide_core::types::{
    BotCommand, CallbackQueryId, ChatAction, ChatId, FileId, InlineKeyboardMarkup,
    LinkPreviewOptions, MessageId, ParseMode, ThreadId,
};
use teloxide_core::{ApiError, Bot, RequestError};
use tokio::io::AsyncWriteExt;

use crate::address::ChatAddress;
use crate::token::{BotIdentity, TokenError, describe_network};
pub use throttle::Throttle;
use updates::{ALLOWED_UPDATES, RawGetUpdates};

/// How long a request other than a long poll may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest file the Bot API lets a bot download.
pub const MAX_DOWNLOAD: u64 = 20 * 1024 * 1024;

/// What went wrong with a request, sorted by what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiFailure {
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
    /// No answer, or not in time.
    #[error("the Bot API did not answer: {0}")]
    Network(String),
    /// Anything else Telegram said.
    #[error("{0}")]
    Other(String),
}

impl ApiFailure {
    fn from_request(err: RequestError) -> Self {
        match err {
            RequestError::RetryAfter(seconds) => Self::RetryAfter(seconds.duration()),
            RequestError::MigrateToChatId(chat) => Self::Migrated(chat.0),
            RequestError::Network(err) => Self::Network(describe_network(&*err)),
            RequestError::Api(api) => Self::from_api(api),
            RequestError::InvalidJson { raw, .. } => Self::Other(format!(
                "an answer that is not the Bot API's JSON: {}",
                raw.chars().take(200).collect::<String>()
            )),
            RequestError::Io(err) => Self::Other(err.to_string()),
        }
    }

    fn from_api(api: ApiError) -> Self {
        let text = match api {
            ApiError::CantParseEntities(text) => return Self::CantParseEntities(text),
            ApiError::MessageNotModified => return Self::NotModified,
            ApiError::InvalidToken => return Self::Unauthorized("401 Unauthorized".into()),
            ApiError::TerminatedByOtherGetUpdates => {
                return Self::Conflict(OTHER_POLLER.into());
            }
            ApiError::CantGetUpdates => return Self::Conflict(WEBHOOK_SET.into()),
            ApiError::Unknown(text) => text,
            other => other.to_string(),
        };
        if text.contains("can't parse entities") {
            Self::CantParseEntities(text)
        } else if text.contains("webhook is active") {
            Self::Conflict(WEBHOOK_SET.into())
        } else if text.starts_with("Conflict") {
            Self::Conflict(format!("{OTHER_POLLER} (Telegram said: {text})"))
        } else if text.starts_with("Unauthorized") {
            Self::Unauthorized(text)
        } else if text.contains("message is not modified") {
            Self::NotModified
        } else {
            Self::Other(text)
        }
    }
}

/// 409, another `getUpdates`.
pub const OTHER_POLLER: &str = "409 Conflict: another program is polling this bot's updates (a second \
     crabtalk-telegram with the same token on another machine or home, or another bot framework); \
     stop it — only one program can receive a bot's updates";
/// 409, a webhook.
pub const WEBHOOK_SET: &str = "409 Conflict: a webhook is set for this bot, so Telegram sends its updates \
     there instead; deleting the webhook";

/// Text and how Telegram should read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    Html(String),
    Plain(String),
}

/// A file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub path: String,
    pub size: u64,
}

/// The Bot API of one bot.
#[derive(Clone)]
pub struct Api {
    bot: Bot,
    throttle: Arc<Throttle>,
}

impl Api {
    /// A client for `token` at `api_url`; a long poll may take up to
    /// `longest` (requests are cut off after that).
    pub fn new(
        api_url: &url::Url,
        token: &str,
        longest: Duration,
        throttle: Arc<Throttle>,
    ) -> Self {
        Self {
            bot: crate::token::bot(api_url, token, longest.max(REQUEST_TIMEOUT)),
            throttle,
        }
    }

    pub fn throttle(&self) -> &Arc<Throttle> {
        &self.throttle
    }

    /// Sends `request` and reads its result as plain JSON: the gateway
    /// needs a few fields of it (a message id, a file path), and a server
    /// that leaves out a field the library's types insist on is no reason
    /// to fail.
    async fn call<P>(&self, request: JsonRequest<P>) -> Result<serde_json::Value, ApiFailure>
    where
        P: Payload + serde::Serialize + Clone + Send + 'static,
    {
        let request = JsonRequest::new(self.bot.clone(), Raw(request.payload_ref().clone()));
        let _permit = self.throttle.acquire().await;
        match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
            Ok(result) => result.map_err(ApiFailure::from_request),
            Err(_) => Err(ApiFailure::Network(format!(
                "no answer within {REQUEST_TIMEOUT:?}"
            ))),
        }
    }

    /// Who the bot is.
    pub async fn get_me(&self) -> Result<BotIdentity, TokenError> {
        let _permit = self.throttle.acquire().await;
        crate::token::ask_get_me(&self.bot).await
    }

    pub async fn delete_webhook(&self) -> Result<(), ApiFailure> {
        self.call(self.bot.delete_webhook()).await.map(drop)
    }

    pub async fn set_my_commands(&self, commands: Vec<BotCommand>) -> Result<(), ApiFailure> {
        self.call(self.bot.set_my_commands(commands))
            .await
            .map(drop)
    }

    /// One long poll: the updates from `offset` on, each as raw JSON.
    pub async fn get_updates(
        &self,
        offset: i64,
        timeout: Duration,
    ) -> Result<Vec<serde_json::Value>, ApiFailure> {
        let payload = RawGetUpdates {
            offset,
            timeout: timeout.as_secs(),
            limit: 100,
            allowed_updates: ALLOWED_UPDATES.to_vec(),
        };
        let _permit = self.throttle.acquire().await;
        // Bounded by the client's own timeout (longer than the poll).
        JsonRequest::new(self.bot.clone(), payload)
            .await
            .map_err(ApiFailure::from_request)
    }

    /// Sends `text` to `to`; the new message's id.
    pub async fn send_message(
        &self,
        to: ChatAddress,
        text: &Text,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<i32, ApiFailure> {
        let (body, mode) = split_text(text);
        let mut request = self
            .bot
            .send_message(ChatId(to.chat), body)
            .link_preview_options(no_preview());
        if let Some(mode) = mode {
            request = request.parse_mode(mode);
        }
        if let Some(topic) = to.topic {
            request = request.message_thread_id(ThreadId(MessageId(topic)));
        }
        if let Some(keyboard) = keyboard {
            request = request.reply_markup(keyboard);
        }
        message_id(&self.call(request).await?)
    }

    /// Replaces the text of message `id` in `chat`.
    pub async fn edit_message_text(
        &self,
        chat: i64,
        id: i32,
        text: &Text,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<(), ApiFailure> {
        let (body, mode) = split_text(text);
        let mut request = self
            .bot
            .edit_message_text(ChatId(chat), MessageId(id), body)
            .link_preview_options(no_preview());
        if let Some(mode) = mode {
            request = request.parse_mode(mode);
        }
        if let Some(keyboard) = keyboard {
            request = request.reply_markup(keyboard);
        }
        self.call(request).await.map(drop)
    }

    /// Replaces (or with `None`, removes) the keyboard of message `id`.
    pub async fn edit_keyboard(
        &self,
        chat: i64,
        id: i32,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<(), ApiFailure> {
        let request = self
            .bot
            .edit_message_reply_markup(ChatId(chat), MessageId(id))
            .reply_markup(
                keyboard.unwrap_or_else(|| InlineKeyboardMarkup::new(Vec::<Vec<_>>::new())),
            );
        self.call(request).await.map(drop)
    }

    pub async fn delete_message(&self, chat: i64, id: i32) -> Result<(), ApiFailure> {
        self.call(self.bot.delete_message(ChatId(chat), MessageId(id)))
            .await
            .map(drop)
    }

    /// "typing…" in `to` (Telegram shows it for five seconds). Skipped
    /// (`Ok(false)`) when the global limit has no room right now: replies
    /// come first.
    pub async fn typing(&self, to: ChatAddress) -> Result<bool, ApiFailure> {
        let Some(permit) = self.throttle.try_acquire() else {
            return Ok(false);
        };
        let mut request = self
            .bot
            .send_chat_action(ChatId(to.chat), ChatAction::Typing);
        if let Some(topic) = to.topic {
            request = request.message_thread_id(ThreadId(MessageId(topic)));
        }
        let request = JsonRequest::new(self.bot.clone(), Raw(request.payload_ref().clone()));
        let result = tokio::time::timeout(REQUEST_TIMEOUT, request).await;
        drop(permit);
        match result {
            Ok(result) => result.map(|_| true).map_err(ApiFailure::from_request),
            Err(_) => Err(ApiFailure::Network(format!(
                "no answer within {REQUEST_TIMEOUT:?}"
            ))),
        }
    }

    /// Answers a button press (with a short notice, if any).
    pub async fn answer_callback(&self, id: &str, notice: Option<&str>) -> Result<(), ApiFailure> {
        let mut request = self
            .bot
            .answer_callback_query(CallbackQueryId(id.to_owned()));
        if let Some(notice) = notice {
            request = request.text(notice.to_owned());
        }
        self.call(request).await.map(drop)
    }

    /// Where file `file_id` can be downloaded from.
    pub async fn get_file(&self, file_id: &str) -> Result<RemoteFile, ApiFailure> {
        let file = self
            .call(self.bot.get_file(FileId(file_id.to_owned())))
            .await?;
        let path = file
            .get("file_path")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| {
                ApiFailure::Other(format!("getFile answered without a file_path: {file}"))
            })?;
        Ok(RemoteFile {
            path: path.to_owned(),
            size: file
                .get("file_size")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
        })
    }

    /// Downloads `file` to `to` (mode 0600), refusing more than
    /// [`MAX_DOWNLOAD`] bytes; the number of bytes written.
    pub async fn download(&self, file: &RemoteFile, to: &Path) -> Result<u64, ApiFailure> {
        let _permit = self.throttle.acquire().await;
        let mut stream = teloxide_core::net::download_file_stream(
            self.bot.client(),
            self.bot.api_url(),
            self.bot.token(),
            &file.path,
        )
        .boxed();
        let io = |err: std::io::Error| {
            ApiFailure::Other(format!("cannot write {}: {err}", to.display()))
        };
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut out = options.open(to).await.map_err(io)?;
        let mut written: u64 = 0;
        let result = tokio::time::timeout(Duration::from_secs(120), async {
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|err| ApiFailure::Network(describe_network(&err)))?;
                written += chunk.len() as u64;
                if written > MAX_DOWNLOAD {
                    return Err(ApiFailure::Other(format!(
                        "the file is larger than {} MB",
                        MAX_DOWNLOAD / 1024 / 1024
                    )));
                }
                out.write_all(&chunk).await.map_err(io)?;
            }
            out.flush().await.map_err(io)?;
            Ok(())
        })
        .await
        .unwrap_or_else(|_| {
            Err(ApiFailure::Network(
                "the download took over 2 minutes".into(),
            ))
        });
        if result.is_err() {
            let _ = tokio::fs::remove_file(to).await;
        }
        result.map(|()| written)
    }
}

/// A request whose result is read as plain JSON.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(transparent)]
pub struct Raw<P>(pub P);

impl<P: Payload> Payload for Raw<P> {
    type Output = serde_json::Value;
    const NAME: &'static str = P::NAME;

    fn timeout_hint(&self) -> Option<Duration> {
        self.0.timeout_hint()
    }
}

/// The `message_id` of a sent or edited message.
fn message_id(result: &serde_json::Value) -> Result<i32, ApiFailure> {
    result
        .get("message_id")
        .and_then(serde_json::Value::as_i64)
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| ApiFailure::Other(format!("a message without a message_id: {result}")))
}

fn split_text(text: &Text) -> (String, Option<ParseMode>) {
    match text {
        Text::Html(html) => (html.clone(), Some(ParseMode::Html)),
        Text::Plain(plain) => (plain.clone(), None),
    }
}

fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions {
        is_disabled: true,
        url: None,
        prefer_small_media: false,
        prefer_large_media: false,
        show_above_text: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_sorted_by_what_to_do() {
        let api = |text: &str| ApiFailure::from_api(ApiError::Unknown(text.into()));
        assert!(matches!(
            api("Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"),
            ApiFailure::CantParseEntities(_)
        ));
        assert_eq!(
            api(
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
            ),
            ApiFailure::Conflict(WEBHOOK_SET.into())
        );
        assert!(
            matches!(api("Conflict: terminated by other getUpdates request"), ApiFailure::Conflict(text) if text.contains("another program"))
        );
        assert!(matches!(api("Unauthorized"), ApiFailure::Unauthorized(_)));
        assert!(matches!(
            api("Bad Request: chat not found"),
            ApiFailure::Other(_)
        ));
    }
}
