//! The MCP tools the gateway offers agents (`telegram__telegram_send`,
//! `telegram__telegram_chats`, as the daemon names them).
//!
//! `telegram_send {chat_id?, topic?, text, run_id?}` sends Markdown text
//! (rendered and split like every reply) and answers
//! `{"message_ids": [..], "chat_id": .., "sent": bool}`. Without
//! `chat_id` it sends to the calling conversation, when that is a
//! Telegram one (`ai.crabtalk/sender` = `tg:…` in the call's `_meta`, RFC
//! 0005). With `run_id` it is idempotent per run and chat: if that run's
//! reply was sent there already (by the relay or an earlier call), it
//! sends nothing and answers the message ids it got — what cron relies on
//! to record a delivery without sending twice. It sends only to chats
//! that may talk to the agent.
//!
//! `telegram_chats {}` lists the chats the gateway knows.
//!
//! A call from a gateway chain (`ai.crabtalk/gateway` in `_meta`: someone
//! let in through a gateway began the chain) acts only for that sender: it
//! sends only to that sender's own chat and lists only it.

use std::sync::Arc;

use crabtalk_kit::tool_server::{
    Hints, Input, OnCancel, ToolCall, ToolError, ToolServer, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::address::ChatAddress;
use crate::gateway::Gateway;

/// `_meta` key: the calling conversation's sender (RFC 0005).
pub(crate) const META_SENDER: &str = "ai.crabtalk/sender";
/// `_meta` key: the gateway sender behind the calling chain, if any.
pub(crate) const META_GATEWAY: &str = "ai.crabtalk/gateway";

/// The chat a gateway chain may reach: its own, when `meta` says the call
/// comes from one. `Err` when it does but names no Telegram chat.
fn gateway_chat(meta: &serde_json::Map<String, Value>) -> Result<Option<ChatAddress>, ToolError> {
    match meta.get(META_GATEWAY).and_then(Value::as_str) {
        None | Some("") => Ok(None),
        Some(sender) => ChatAddress::from_sender(sender).map(Some).ok_or_else(|| {
            ToolError::failed(format_args!(
                "this conversation came through another gateway ({sender}); it cannot use Telegram"
            ))
        }),
    }
}

/// What the tools share. The gateway is there once it knows who the bot
/// is.
pub(crate) struct TelegramTools {
    gateway: watch::Receiver<Option<Arc<Gateway>>>,
    problems: crabtalk_kit::Problems,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    /// The chat: a numeric chat id (`42`, `-1001234567890`, as a number or
    /// a string) or a `tg:` sender. Default: the calling conversation.
    #[serde(default)]
    chat_id: Option<Value>,
    /// A forum topic (message thread id) in that chat.
    #[serde(default)]
    topic: Option<i32>,
    /// The message, in Markdown.
    text: String,
    /// The daemon run whose reply this is: sent at most once per run and
    /// chat (what cron passes).
    #[serde(default)]
    run_id: Option<u64>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// The tools, served as one MCP server. A send its client cancels runs to
/// its end: a message half handed to the chat's lane, or a run's delivery
/// half recorded, would be sent twice or lost.
pub(crate) fn server(
    gateway: watch::Receiver<Option<Arc<Gateway>>>,
    problems: crabtalk_kit::Problems,
) -> ToolServer {
    ToolServer::builder(
        crabtalk_kit::this_program!(),
        TelegramTools { gateway, problems },
    )
    .instructions("crabtalk's Telegram gateway: send messages to the Telegram chats that may talk to the agent, and list them.")
    .tool(
        ToolSpec {
            name: "telegram_send",
            title: "Send a Telegram message",
            description: "Send a Telegram message (Markdown). Without chat_id it goes to this conversation's chat when it is a Telegram one. Answers the sent message ids.",
            input: Input::of::<SendArgs>(),
            hints: Hints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
            on_cancel: OnCancel::Finish,
        },
        TelegramTools::send,
    )
    .tool(
        ToolSpec {
            name: "telegram_chats",
            title: "List Telegram chats",
            description: "List the Telegram chats the gateway knows: id, kind, title, the conversation's sender, whether it may talk to the agent.",
            input: Input::of::<NoArgs>(),
            hints: Hints {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            on_cancel: OnCancel::Finish,
        },
        TelegramTools::chats,
    )
    .build()
}

impl TelegramTools {
    fn gateway(&self) -> Result<Arc<Gateway>, ToolError> {
        self.gateway.borrow().clone().ok_or_else(|| {
            let problems = self.problems.list();
            if problems.is_empty() {
                ToolError::failed(
                    "the gateway is not connected to Telegram yet; try again in a moment",
                )
            } else {
                ToolError::failed(format_args!(
                    "the gateway is not connected to Telegram: {}",
                    problems.join("; ")
                ))
            }
        })
    }

    async fn chats(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let _: NoArgs = call.read()?;
        let own = gateway_chat(call.meta())?;
        let gateway = self.gateway()?;
        let mut chats: Vec<Value> = gateway
            .chats
            .list()
            .into_iter()
            .map(|chat| {
                let address = ChatAddress::chat(gateway.chats.conversation_chat(chat.chat_id));
                json!({
                    "chat_id": chat.chat_id,
                    "kind": chat.kind,
                    "title": chat.title,
                    "username": chat.username,
                    "sender": address.sender(),
                    "allowed": gateway.access().may_send_to(ChatAddress::chat(chat.chat_id), &gateway.chats),
                    "last_seen": chat.last_seen,
                    "agent": chat.agent,
                })
            })
            .collect();
        let seen: Vec<i64> = chats.iter().filter_map(|c| c["chat_id"].as_i64()).collect();
        for chat in gateway.access().known_chats() {
            if !seen.contains(&chat) {
                chats.push(json!({
                    "chat_id": chat,
                    "kind": if chat > 0 { "private" } else { "group" },
                    "sender": ChatAddress::chat(chat).sender(),
                    "allowed": true,
                    "last_seen": Value::Null,
                }));
            }
        }
        if let Some(own) = own {
            chats.retain(|chat| chat["chat_id"].as_i64() == Some(own.chat));
        }
        Ok(json!({ "chats": chats }))
    }

    async fn send(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let args: SendArgs = call.read()?;
        let meta = call.meta();
        let gateway = self.gateway()?;
        let address = match &args.chat_id {
            Some(value) => {
                let mut address = chat_of(value)?;
                if args.topic.is_some() {
                    address.topic = args.topic;
                }
                address
            }
            None => {
                let sender = meta
                    .get(META_SENDER)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                ChatAddress::from_sender(sender).ok_or_else(|| {
                    ToolError::arguments(format_args!(
                        "no chat_id, and the calling conversation ({}) is not a Telegram chat; give chat_id (telegram_chats lists them)",
                        if sender.is_empty() { "unknown" } else { sender }
                    ))
                })?
            }
        };
        if args.text.trim().is_empty() {
            return Err(ToolError::arguments("`text` is empty"));
        }
        if let Some(own) = gateway_chat(meta)?
            && own.chat != address.chat
        {
            return Err(ToolError::failed(format_args!(
                "chat {address}: a conversation that came through Telegram sends only to its own chat ({})",
                own.chat
            )));
        }
        if !gateway.access().may_send_to(address, &gateway.chats) {
            return Err(ToolError::failed(format_args!(
                "chat {address} may not talk to the agent (not in allow or groups of telegram.toml, not approved), so nothing is sent there"
            )));
        }
        let outbox = gateway.outbox.clone();
        let text = args.text.clone();
        let send = move || async move { outbox.send(address, &text, None).await };
        let (ids, sent) = match args.run_id {
            Some(run_id) => gateway
                .ledger
                .deliver_once(run_id, address, send)
                .await
                .map_err(ToolError::failed)?,
            None => (send().await.map_err(ToolError::failed)?, true),
        };
        let mut answer = json!({ "message_ids": ids, "chat_id": address.chat, "sent": sent });
        if let Some(topic) = address.topic {
            answer["topic"] = json!(topic);
        }
        Ok(answer)
    }
}

/// The chat a `chat_id` argument names.
fn chat_of(value: &Value) -> Result<ChatAddress, ToolError> {
    let bad = || {
        ToolError::arguments(format_args!(
            "chat_id {value}: give a numeric chat id (42, -1001234567890) or a tg: sender"
        ))
    };
    match value {
        Value::Number(n) => n
            .as_i64()
            .filter(|c| *c != 0)
            .map(ChatAddress::chat)
            .ok_or_else(bad),
        Value::String(text) => {
            let text = text.trim();
            if let Some(address) = ChatAddress::from_sender(text) {
                return Ok(address);
            }
            if text.starts_with('@') {
                return Err(ToolError::arguments(format_args!(
                    "chat_id {text:?}: @names are not supported; use the chat's numeric id (telegram_chats lists them)"
                )));
            }
            text.parse::<i64>()
                .ok()
                .filter(|c| *c != 0)
                .map(ChatAddress::chat)
                .ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_ids_are_numbers_strings_or_senders() {
        assert_eq!(chat_of(&json!(42)), Ok(ChatAddress::chat(42)));
        assert_eq!(chat_of(&json!("-100123")), Ok(ChatAddress::chat(-100123)));
        assert_eq!(
            chat_of(&json!("tg:-100123:7")),
            Ok(ChatAddress::topic(-100123, 7))
        );
        let named = chat_of(&json!("@news")).unwrap_err();
        assert!(matches!(&named, ToolError::Arguments(text) if text.contains("not supported")));
        assert!(chat_of(&json!(0)).is_err());
        assert!(chat_of(&json!([1])).is_err());
    }
}
