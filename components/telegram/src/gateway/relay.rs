//! The relay: replies of turns that something other than the gateway
//! started for a `tg:` conversation (a cron entry, a delegated task, an
//! event, another client) are sent to that chat.
//!
//! The gateway follows the daemon's event stream through the kit's
//! `DaemonLink`, which opens it again on every new connection (a restarted
//! daemon). For each `DONE` of a `tg:` sender whose trigger is not
//! `telegram`, the turn's final text goes to the chat through the
//! [`Ledger`](crate::state::ledger::Ledger): at most once per run and
//! chat, whether the relay or `telegram_send` with that run id comes first.
//! An empty reply, or exactly `[SILENT]`, is not sent. Questions such a
//! turn asks (`ASK_USER`) are shown as keyboards too.
//!
//! Events published while the gateway was not connected are not replayed
//! by the daemon, so a turn that ended in that window is not relayed.

use std::sync::Arc;

use crabtalk_kit::daemon::Followed;
use crabtalk_proto::msg::{AgentEventKind, AgentEventMsg, AskOption, AskQuestion, SubscribeEvents};
use futures::StreamExt;

use super::{Conversation, Gateway, TRIGGER};
use crate::address::ChatAddress;

/// A reply that is exactly this is not delivered (as cron's delivery).
pub(crate) const SILENT: &str = "[SILENT]";

/// Follows the daemon's events until shutdown.
pub(crate) async fn run(gateway: Arc<Gateway>) {
    let mut events = gateway.daemon.follow(SubscribeEvents {});
    while let Some(item) = events.next().await {
        match item {
            Ok(Followed::Started) | Ok(Followed::Resumed) => {
                tracing::info!("following the daemon's events (relay)");
                let gateway = gateway.clone();
                tokio::spawn(async move { super::slash::register(&gateway).await });
            }
            Ok(Followed::Item(event)) => handle(&gateway, event),
            Err(err) => {
                tracing::warn!(
                    "the daemon refused the event subscription ({err}); replies of other turns are not relayed"
                );
                return;
            }
        }
    }
}

fn handle(gateway: &Arc<Gateway>, event: AgentEventMsg) {
    if event.trigger == TRIGGER {
        return;
    }
    let Some(address) = ChatAddress::from_sender(&event.sender) else {
        return;
    };
    let kind = AgentEventKind::try_from(event.kind).unwrap_or(AgentEventKind::TextDelta);
    match kind {
        AgentEventKind::Done => {
            gateway
                .asks
                .close_run(gateway, Some(event.run_id), "(the turn ended)");
            let text = event.content.trim();
            if !event.error.is_empty() {
                tracing::info!(run = event.run_id, chat = %address, "a relayed turn failed ({}); nothing sent", event.error);
                return;
            }
            if text.is_empty() || text == SILENT {
                return;
            }
            if !gateway.access().may_send_to(address, &gateway.chats) {
                tracing::info!(chat = %address, "not relaying to a chat that may not talk to the agent");
                return;
            }
            let gateway = gateway.clone();
            let text = text.to_owned();
            let run_id = event.run_id;
            tokio::spawn(async move {
                let outbox = gateway.outbox.clone();
                let sent = gateway
                    .ledger
                    .deliver_once(run_id, address, || async move {
                        outbox.send(address, &text, None).await
                    })
                    .await;
                match sent {
                    Ok((ids, true)) => {
                        tracing::info!(run = run_id, chat = %address, "relayed a reply ({} messages)", ids.len())
                    }
                    Ok((_, false)) => tracing::debug!(run = run_id, "already delivered"),
                    Err(err) => {
                        tracing::warn!(run = run_id, chat = %address, "cannot relay a reply: {err}")
                    }
                }
            });
        }
        AgentEventKind::AskUser => {
            if !gateway.access().may_send_to(address, &gateway.chats) {
                return;
            }
            let Some((call_id, questions)) = parse_questions(&event.content) else {
                tracing::warn!("a question of a relayed turn could not be read");
                return;
            };
            let agent = if event.conversation_agent.is_empty() {
                event.agent.clone()
            } else {
                event.conversation_agent.clone()
            };
            let conversation = Conversation { address, agent };
            gateway.asks.open(
                gateway,
                conversation,
                Some(event.run_id),
                call_id,
                questions,
            );
        }
        AgentEventKind::ToolResult => {
            // `content` is the call id.
            gateway
                .asks
                .tool_result(gateway, &event.content, "(no answer in time)");
        }
        _ => {}
    }
}

/// The questions of an `ASK_USER` event's JSON.
fn parse_questions(json: &str) -> Option<(String, Vec<AskQuestion>)> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let call_id = value.get("call_id")?.as_str()?.to_owned();
    let text = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let questions = value
        .get("questions")?
        .as_array()?
        .iter()
        .map(|q| AskQuestion {
            question: text(q, "question"),
            header: text(q, "header"),
            multi_select: q
                .get("multi_select")
                .and_then(|m| m.as_bool())
                .unwrap_or(false),
            options: q
                .get("options")
                .and_then(|o| o.as_array())
                .map(|options| {
                    options
                        .iter()
                        .map(|o| AskOption {
                            label: text(o, "label"),
                            description: text(o, "description"),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    Some((call_id, questions))
}
