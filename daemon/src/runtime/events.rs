//! Where a turn's events go: to the client that asked for the turn (as
//! `StreamEvent`s, through its [`ClientOutlet`]) and to every subscriber of
//! `SubscribeEvents` (as `AgentEventMsg`s, through the [`EventHub`]).
//!
//! Both are bounded and neither ever makes a turn wait: a subscriber that
//! falls behind loses the oldest events and is told so by an
//! `EVENTS_DROPPED` event; a client that stops reading its turn is dropped
//! from it with an error. The turn itself runs on and is saved.

use std::sync::Arc;

use crabtalk_proto::msg::{
    AgentEventKind, AgentEventMsg, StreamEnd, StreamEvent, ToolCallInfo, stream_event::Event,
};

pub(crate) use super::client_outlet::{ClientOutlet, client_outlet};
pub(crate) use super::event_hub::{EventHub, SUBSCRIBER_BUFFER};
use crate::storage::now_rfc3339;

/// The event outlet of one turn.
#[derive(Clone)]
pub(crate) struct TurnSink {
    client: Option<ClientOutlet>,
    hub: Arc<EventHub>,
    /// The agent speaking (the guest, on a guest turn).
    agent: String,
    /// The agent whose conversation it is.
    conversation_agent: String,
    sender: String,
    run_id: u64,
    /// The trigger of the turn's chain, for subscribers.
    trigger: String,
}

impl TurnSink {
    pub(crate) fn new(
        client: Option<ClientOutlet>,
        hub: Arc<EventHub>,
        agent: &str,
        sender: &str,
        run_id: u64,
    ) -> Self {
        Self {
            client,
            hub,
            agent: agent.to_owned(),
            conversation_agent: agent.to_owned(),
            sender: sender.to_owned(),
            run_id,
            trigger: String::new(),
        }
    }

    /// Names the agent whose conversation the turn is in (another than the
    /// speaker on a guest's turn).
    pub(crate) fn in_conversation_of(mut self, agent: &str) -> Self {
        self.conversation_agent = agent.to_owned();
        self
    }

    /// Tells subscribers the user message that started the turn (the
    /// client that sent it knows it already).
    pub(crate) fn user_message(&self, content: &str) {
        if let Some(mut event) = self.base_event() {
            event.kind = AgentEventKind::UserMessage as i32;
            event.content = content.to_owned();
            self.hub.publish(event);
        }
    }

    /// This sink, reporting `trigger` as the turn's trigger.
    pub(crate) fn triggered_by(mut self, trigger: Option<&str>) -> Self {
        self.trigger = trigger.unwrap_or_default().to_owned();
        self
    }

    pub(crate) fn agent(&self) -> &str {
        &self.agent
    }

    pub(crate) fn run_id(&self) -> u64 {
        self.run_id
    }

    /// Sends an event to the client (if it is still there) and to the
    /// subscribers.
    pub(crate) fn emit(&self, event: impl Into<StreamEvent>) {
        let event = event.into();
        if let Some(agent_event) = self.agent_event(&event) {
            self.hub.publish(agent_event);
        }
        if let Some(client) = &self.client {
            client.send(event);
        }
    }

    /// Waits while the client has more than its budget of events queued,
    /// as long as it keeps reading (see [`ClientOutlet::room`]).
    pub(crate) async fn room(&self, stall: std::time::Duration) {
        if let Some(client) = &self.client {
            client.room(stall).await;
        }
    }

    /// Ends the turn: `StreamEnd` to the client, and to subscribers a `DONE`
    /// that carries the turn's final text.
    pub(crate) fn finish(&self, end: StreamEnd, final_text: &str) {
        let event = StreamEvent::from(end);
        if let Some(mut done) = self.agent_event(&event) {
            done.content = final_text.to_owned();
            self.hub.publish(done);
        }
        if let Some(client) = &self.client {
            client.send(event);
        }
    }

    /// An event of this turn, without kind or content.
    /// `None` while nobody is subscribed: a turn's every event would
    /// otherwise be copied, stamped and dropped unread.
    fn base_event(&self) -> Option<AgentEventMsg> {
        if !self.hub.has_subscribers() {
            return None;
        }
        Some(AgentEventMsg {
            agent: self.agent.clone(),
            conversation_agent: self.conversation_agent.clone(),
            sender: self.sender.clone(),
            timestamp: now_rfc3339(),
            run_id: self.run_id,
            trigger: self.trigger.clone(),
            ..Default::default()
        })
    }

    /// The subscriber form of a stream event, if it has one.
    fn agent_event(&self, event: &StreamEvent) -> Option<AgentEventMsg> {
        let mut out = self.base_event()?;
        let kind = match event.event.as_ref()? {
            Event::Chunk(chunk) => {
                out.content = chunk.content.clone();
                AgentEventKind::TextDelta
            }
            Event::Thinking(thinking) => {
                out.content = thinking.content.clone();
                AgentEventKind::ThinkingDelta
            }
            Event::ToolStart(start) => {
                out.tool_calls = start.calls.clone();
                AgentEventKind::ToolStart
            }
            Event::ToolResult(result) => {
                out.content = result.call_id.clone();
                out.tool_output = result.output.clone();
                out.tool_is_error = result.is_error;
                AgentEventKind::ToolResult
            }
            Event::ToolsComplete(_) => AgentEventKind::ToolsComplete,
            Event::End(end) => {
                out.error = end.error.clone();
                out.usage = end.usage;
                AgentEventKind::Done
            }
            Event::TextStart(_) => AgentEventKind::TextStart,
            Event::TextEnd(_) => AgentEventKind::TextEnd,
            Event::ThinkingStart(_) => AgentEventKind::ThinkingStart,
            Event::ThinkingEnd(_) => AgentEventKind::ThinkingEnd,
            Event::ContextUsage(usage) => {
                out.usage = usage.usage;
                AgentEventKind::ContextUsage
            }
            Event::AskUser(ask) => {
                out.content = serde_json::to_string(&questions_json(ask)).unwrap_or_default();
                AgentEventKind::AskUser
            }
            Event::UserSteered(steered) => {
                out.content = steered.content.clone();
                AgentEventKind::UserMessage
            }
            Event::Start(_) => return None,
        };
        out.kind = kind as i32;
        Some(out)
    }
}

fn questions_json(ask: &crabtalk_proto::msg::AskUserEvent) -> serde_json::Value {
    serde_json::json!({
        "call_id": ask.call_id,
        "questions": ask.questions.iter().map(|q| serde_json::json!({
            "question": q.question,
            "header": q.header,
            "multi_select": q.multi_select,
            "options": q.options.iter().map(|o| serde_json::json!({"label": o.label, "description": o.description})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// The tool-call list of a `ToolStart` event.
pub(crate) fn tool_call_infos(calls: &[crate::storage::ToolCallRecord]) -> Vec<ToolCallInfo> {
    calls
        .iter()
        .map(|call| ToolCallInfo {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            id: call.id.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crabtalk_proto::msg::{StreamChunk, StreamEnd};
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn no_agent_event_is_built_while_nobody_is_subscribed() {
        let hub = Arc::new(EventHub::new(16));
        let sink = TurnSink::new(None, hub.clone(), "crab", "tg:42", 7);
        let chunk = StreamEvent::from(StreamChunk {
            content: "hi".into(),
        });
        assert!(sink.agent_event(&chunk).is_none());
        let events = hub.subscribe();
        assert!(sink.agent_event(&chunk).is_some());
        drop(events);
        assert!(sink.agent_event(&chunk).is_none());
    }

    #[tokio::test]
    async fn subscribers_get_agent_events_with_sender_and_run_id() {
        let hub = Arc::new(EventHub::new(16));
        let mut events = Box::pin(hub.subscribe());
        let (client, client_rx) = client_outlet(None);
        let mut client_rx = Box::pin(client_rx);
        let sink = TurnSink::new(Some(client), hub.clone(), "crab", "tg:42", 7);
        sink.emit(StreamChunk {
            content: "hi".into(),
        });
        sink.emit(StreamEnd {
            agent: "crab".into(),
            error: "boom".into(),
            ..Default::default()
        });
        let first = events.next().await.unwrap();
        assert_eq!(first.kind, AgentEventKind::TextDelta as i32);
        assert_eq!(
            (first.sender.as_str(), first.run_id, first.content.as_str()),
            ("tg:42", 7, "hi")
        );
        let done = events.next().await.unwrap();
        assert_eq!(done.kind, AgentEventKind::Done as i32);
        assert_eq!(done.error, "boom");
        assert!(client_rx.next().await.unwrap().unwrap().event.is_some());
    }

    #[tokio::test]
    async fn a_slow_subscriber_loses_the_oldest_events_and_is_told() {
        let hub = Arc::new(EventHub::new(4));
        let mut events = Box::pin(hub.subscribe());
        let sink = TurnSink::new(None, hub.clone(), "crab", "user", 1);
        for i in 0..10 {
            sink.emit(StreamChunk {
                content: i.to_string(),
            });
        }
        let marker = events.next().await.unwrap();
        assert_eq!(marker.kind, AgentEventKind::EventsDropped as i32);
        assert!(marker.content.starts_with("6 events"), "{}", marker.content);
        let rest: Vec<String> = events.take(4).map(|e| e.content).collect().await;
        assert_eq!(rest, ["6", "7", "8", "9"]);
    }
}
