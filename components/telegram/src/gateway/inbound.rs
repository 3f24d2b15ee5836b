//! One update from Telegram: who wrote, may they, and what to do.
//!
//! In order: a group's migration is recorded; bots and chats without a
//! sender are ignored; the chat is recorded (for `telegram_chats`); the
//! access table decides (strangers get a pairing code, or nothing); in a
//! group the bot must be addressed (unless `require_mention = false`);
//! then a command, an answer to an open question, or a message with its
//! media becomes a turn. In groups the speaker's name goes in front of
//! the text.

use std::sync::Arc;

use teloxide_core::types::{Message, MessageEntityKind, Update, UpdateKind};

use super::{Gateway, media, slash, turn};
use crate::access::pairing::Stranger;
use crate::address::ChatAddress;

/// Handles one update (already known to be new).
pub async fn update(gateway: &Arc<Gateway>, update: Update) {
    match update.kind {
        UpdateKind::Message(message) => self::message(gateway, &message).await,
        UpdateKind::CallbackQuery(query) => {
            let allowed = match query.regular_message() {
                Some(message) if message.chat.is_private() => {
                    gateway.access.user_allowed(query.from.id.0 as i64)
                }
                Some(message) => gateway.access.member_allowed(
                    message.chat.id.0,
                    query.from.id.0 as i64,
                    &gateway.chats,
                ),
                None => false,
            };
            if allowed {
                gateway.asks.callback(gateway, &query).await;
            } else {
                tracing::info!(
                    user = query.from.id.0,
                    "a button press from someone who may not talk to the agent; ignored"
                );
                let _ = gateway.api.answer_callback(&query.id.0, None).await;
            }
        }
        UpdateKind::Error(value) => {
            let text = value.to_string();
            tracing::warn!(
                update = update.id.0,
                "an update the gateway cannot read was skipped: {}",
                text.chars().take(300).collect::<String>()
            );
        }
        _ => tracing::debug!(
            update = update.id.0,
            "an update of a kind the gateway does not use"
        ),
    }
}

/// Whom a message is from, for the agent and the logs.
fn speaker(message: &Message) -> String {
    let Some(from) = message.from.as_ref() else {
        return "someone".into();
    };
    match &from.username {
        Some(username) => format!("{} (@{username})", from.full_name()),
        None => from.full_name(),
    }
}

/// Whether a group message addresses the bot: an `@bot` mention, a
/// reply to one of its messages, or `/cmd@bot`.
pub fn addressed(gateway: &Gateway, message: &Message) -> bool {
    let me = gateway.me.username.to_lowercase();
    if message
        .reply_to_message()
        .and_then(|reply| reply.from.as_ref())
        .is_some_and(|from| from.id.0 == gateway.me.id)
    {
        return true;
    }
    let entities = message
        .parse_entities()
        .or_else(|| message.parse_caption_entities())
        .unwrap_or_default();
    entities.iter().any(|entity| match entity.kind() {
        MessageEntityKind::Mention => entity.text().trim_start_matches('@').to_lowercase() == me,
        MessageEntityKind::TextMention { user } => user.id.0 == gateway.me.id,
        MessageEntityKind::BotCommand => entity
            .text()
            .split_once('@')
            .is_some_and(|(_, bot)| bot.to_lowercase() == me),
        _ => false,
    })
}

/// The text without `@bot` mentions.
fn without_mention(gateway: &Gateway, text: &str) -> String {
    let mention = format!("@{}", gateway.me.username);
    if gateway.me.username.is_empty() {
        return text.trim().to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.to_lowercase().find(&mention.to_lowercase()) {
        out.push_str(&rest[..at]);
        rest = &rest[at + mention.len()..];
    }
    out.push_str(rest);
    out.trim().to_owned()
}

async fn message(gateway: &Arc<Gateway>, message: &Message) {
    let chat = message.chat.id.0;
    if let Some(new) = message.migrate_to_chat_id() {
        gateway
            .chats
            .migrated(gateway.chats.conversation_chat(chat), new.0);
        return;
    }
    if let Some(old) = message.migrate_from_chat_id() {
        gateway
            .chats
            .migrated(gateway.chats.conversation_chat(old.0), chat);
        return;
    }
    let Some(from) = message.from.as_ref() else {
        return;
    };
    if from.is_bot {
        return;
    }
    let private = message.chat.is_private();
    let title = if private {
        from.full_name()
    } else {
        message.chat.title().unwrap_or_default().to_owned()
    };
    let kind = if private {
        "private"
    } else if message.chat.is_supergroup() {
        "supergroup"
    } else if message.chat.is_group() {
        "group"
    } else {
        "channel"
    };
    let user = from.id.0 as i64;
    if private {
        if !gateway.access.user_allowed(user) {
            stranger(gateway, message, user).await;
            return;
        }
    } else {
        if !gateway.access.group_allowed(chat, &gateway.chats) {
            tracing::debug!(
                chat,
                "a message in a group that is not in `groups`; ignored"
            );
            return;
        }
        if !gateway.access.member_allowed(chat, user, &gateway.chats) {
            tracing::debug!(
                chat,
                user,
                "a message in a group from a user who is not in `allow` (the group is not in `open_groups`); ignored"
            );
            return;
        }
        if gateway.access.require_mention() && !addressed(gateway, message) {
            return;
        }
    }
    gateway
        .chats
        .seen(chat, kind, &title, message.chat.username());
    let topic = message
        .thread_id
        .filter(|_| message.is_topic_message)
        .map(|thread| thread.0.0);
    let address = ChatAddress {
        chat: gateway.chats.conversation_chat(chat),
        topic,
    };
    let conversation = gateway.conversation(address);
    let raw = message
        .text()
        .or_else(|| message.caption())
        .unwrap_or_default();
    let text = if private {
        raw.trim().to_owned()
    } else {
        without_mention(gateway, raw)
    };
    if let Some(command) = slash::Slash::parse(&text) {
        if let Some(bot) = command.bot
            && !bot.eq_ignore_ascii_case(&gateway.me.username)
        {
            return;
        }
        if let Some(content) = slash::handle(gateway, &conversation, &command).await {
            turn::start(gateway, conversation, content).await;
        }
        return;
    }
    if !text.is_empty() && gateway.asks.text(gateway, &conversation.sender(), &text) {
        return;
    }
    let attached = media::save(gateway, message).await;
    let mut content = text;
    if let Some(line) = attached {
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    if content.trim().is_empty() {
        tracing::debug!(
            chat,
            "a message with nothing the agent can read (a sticker, a poll…); ignored"
        );
        return;
    }
    if !private {
        content = format!("{}: {content}", speaker(message));
    }
    turn::start(gateway, conversation, content).await;
}

/// A message from someone who may not talk to the agent.
async fn stranger(gateway: &Arc<Gateway>, message: &Message, user: i64) {
    let Some(store) = gateway.access.pairing() else {
        tracing::info!(
            user,
            "a message from a user who is not in `allow`; ignored (pairing is off)"
        );
        return;
    };
    let from = message.from.as_ref();
    let who = Stranger {
        user_id: user,
        name: from.map(|f| f.full_name()).unwrap_or_default(),
        username: from.and_then(|f| f.username.clone()),
    };
    match store.stranger(&who, chrono::Utc::now()) {
        Ok(Some(reply)) => {
            let _ = gateway
                .outbox
                .prepared(ChatAddress::chat(message.chat.id.0), &reply, None);
        }
        Ok(None) => tracing::debug!(user, "a stranger wrote again; not answered"),
        Err(err) => tracing::warn!("pairing: {err}"),
    }
}
