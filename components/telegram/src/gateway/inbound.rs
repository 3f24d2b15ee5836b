//! One update from Telegram: who wrote, may they, and what to do.
//!
//! In order: a group's migration is recorded; bots and chats without a
//! sender are ignored; the chat is recorded (for `telegram_chats`); the
//! access table decides (strangers get a pairing code, or nothing); in a
//! group the bot must be addressed (unless `require_mention = false`);
//! then a command, an answer to an open question, or a message with its
//! media becomes a turn. In groups the speaker's name goes in front of
//! the text.
//!
//! A message with a file waits in its chat's queue ([`inbox`](super::inbox))
//! rather than holding up the poll loop. Places and contacts reach the
//! agent as a line of text; what the agent cannot read (a sticker, a
//! poll, a kind this version does not know) gets a short, polite reply,
//! never silence. An edited message reaches the agent as a correction
//! (`[correction: …]` and its new text); an edit that leaves no text (a
//! live location moving) is not passed on.

use std::sync::Arc;

use serde_json::Value;

use super::{Gateway, content, media, slash, turn};
use crate::access::pairing::Stranger;
use crate::address::ChatAddress;
use crate::api::update::{Message, Update, UpdateKind};

/// What an edited message's new text is introduced with.
pub const CORRECTION: &str = "[correction: the sender edited an earlier message; it now reads:]";

/// Handles one update (already known to be new) from the poll loop: now,
/// or in its chat's queue.
pub(crate) async fn update(gateway: &Arc<Gateway>, raw: &Value, update: Update) {
    if let Some(update) = gateway.inbox.admit(gateway, raw, update).await {
        handle(gateway, update).await;
    }
}

/// Handles one update.
pub(crate) async fn handle(gateway: &Arc<Gateway>, update: Update) {
    match update.kind {
        UpdateKind::Message(message) => self::message(gateway, &message, false).await,
        UpdateKind::Edited(message) => self::message(gateway, &message, true).await,
        UpdateKind::Callback(query) => {
            let access = gateway.access();
            let allowed = match query.regular_message() {
                Some(message) if message.chat.is_private() => access.user_allowed(query.from.id),
                Some(message) => {
                    access.member_allowed(message.chat.id, query.from.id, &gateway.chats)
                }
                None => false,
            };
            if allowed {
                gateway.asks.callback(gateway, &query).await;
            } else {
                tracing::info!(
                    user = query.from.id,
                    "a button press from someone who may not talk to the agent; ignored"
                );
                let _ = gateway.api.answer_callback(&query.id, None).await;
            }
        }
        UpdateKind::Other(kind) => tracing::debug!(
            update = update.id,
            "an update of a kind the gateway does not use ({kind})"
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
pub(crate) fn addressed(gateway: &Gateway, message: &Message) -> bool {
    let me = gateway.me.username.to_lowercase();
    if message
        .reply_to_message
        .as_ref()
        .and_then(|reply| reply.from.as_ref())
        .is_some_and(|from| from.id as u64 == gateway.me.id)
    {
        return true;
    }
    message
        .entities_with_text()
        .into_iter()
        .any(|(entity, text)| match entity.kind.as_str() {
            "mention" => text.trim_start_matches('@').to_lowercase() == me,
            "text_mention" => entity
                .user
                .as_ref()
                .is_some_and(|user| user.id as u64 == gateway.me.id),
            "bot_command" => text
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

async fn message(gateway: &Arc<Gateway>, message: &Message, edited: bool) {
    let chat = message.chat.id;
    if let Some(new) = message.migrate_to_chat_id {
        gateway
            .chats
            .migrated(gateway.chats.conversation_chat(chat), new);
        return;
    }
    if let Some(old) = message.migrate_from_chat_id {
        gateway
            .chats
            .migrated(gateway.chats.conversation_chat(old), chat);
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
        message.chat.title.clone().unwrap_or_default()
    };
    let kind = match message.chat.kind.as_str() {
        _ if private => "private",
        "supergroup" => "supergroup",
        "group" => "group",
        _ => "channel",
    };
    let user = from.id;
    let access = gateway.access();
    if private {
        if !access.user_allowed(user) {
            if !edited {
                stranger(gateway, message, user).await;
            }
            return;
        }
    } else {
        if !access.group_allowed(chat, &gateway.chats) {
            tracing::debug!(
                chat,
                "a message in a group that is not in `groups`; ignored"
            );
            return;
        }
        if !access.member_allowed(chat, user, &gateway.chats) {
            tracing::debug!(
                chat,
                user,
                "a message in a group from a user who is not in `allow` (the group is not in `open_groups`); ignored"
            );
            return;
        }
        if access.require_mention() && !addressed(gateway, message) {
            return;
        }
    }
    drop(access);
    gateway
        .chats
        .seen(chat, kind, &title, message.chat.username.as_deref());
    let address = ChatAddress {
        chat: gateway.chats.conversation_chat(chat),
        topic: message.topic(),
    };
    let conversation = gateway.conversation(address);
    let raw = message.text_or_caption().unwrap_or_default();
    let text = if private {
        raw.trim().to_owned()
    } else {
        without_mention(gateway, raw)
    };
    if edited {
        // The new text only: a command is not run again, the file not
        // saved again, and an edit without text (a live location moving)
        // is nothing to pass on.
        if text.is_empty() {
            return;
        }
        if gateway.asks.text(gateway, &conversation.sender(), &text) {
            return;
        }
        let mut content = format!("{CORRECTION}\n{text}");
        if !private {
            content = format!("{}: {content}", speaker(message));
        }
        turn::start(gateway, conversation, content).await;
        return;
    }
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
    let mut content = text;
    for line in [
        media::save(gateway, message).await,
        content::described(message),
    ]
    .into_iter()
    .flatten()
    {
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    if content.trim().is_empty() {
        if content::is_service(message) {
            return;
        }
        // Something a person sent that the agent cannot read: say so,
        // where it was said to the bot (in a group: addressed to it).
        let kind = content::unreadable(message);
        tracing::debug!(
            chat,
            "a message the agent cannot read ({}); answered",
            kind.unwrap_or("an unknown kind")
        );
        if private || addressed(gateway, message) {
            let _ = gateway
                .outbox
                .prepared(address, &content::cannot_read(kind), None);
        }
        return;
    }
    if !private {
        content = format!("{}: {content}", speaker(message));
    }
    turn::start(gateway, conversation, content).await;
}

/// A message from someone who may not talk to the agent.
async fn stranger(gateway: &Arc<Gateway>, message: &Message, user: i64) {
    let access = gateway.access();
    let Some(store) = access.pairing() else {
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
                .prepared(ChatAddress::chat(message.chat.id), &reply, None);
        }
        Ok(None) => tracing::debug!(user, "a stranger wrote again; not answered"),
        Err(err) => tracing::warn!("pairing: {err}"),
    }
}
