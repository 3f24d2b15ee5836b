//! Driving turns from tests.

use crabtalk_proto::Client;
use crabtalk_proto::ReplyStream;
use crabtalk_proto::msg::{
    ReplyToAsk, StreamEnd, StreamEvent, StreamMsg, ToolResultEvent, stream_event::Event,
};
use futures::StreamExt;

/// A `StreamMsg` for `agent` from `sender`.
pub fn message(agent: &str, sender: &str, content: &str) -> StreamMsg {
    StreamMsg {
        agent: agent.into(),
        sender: Some(sender.into()),
        content: content.into(),
        ..Default::default()
    }
}

/// The events of one turn, in order.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub events: Vec<Event>,
}

impl Turn {
    /// Reads a turn's stream to its end.
    pub async fn collect(mut stream: ReplyStream<StreamEvent>) -> Self {
        let mut turn = Self::default();
        turn.read_until(&mut stream, |_| false).await;
        turn
    }

    /// Reads events until `stop` says so (inclusive) or the stream ends.
    pub async fn read_until(
        &mut self,
        stream: &mut ReplyStream<StreamEvent>,
        mut stop: impl FnMut(&Event) -> bool,
    ) {
        crate::within("turn events", async {
            while let Some(event) = stream.next().await {
                let event = event.expect("a turn event").event.expect("an event body");
                let done = stop(&event);
                self.events.push(event);
                if done {
                    return;
                }
            }
        })
        .await
    }

    /// Runs a turn and collects it.
    pub async fn run(client: &Client, request: StreamMsg) -> Self {
        Self::collect(client.stream(request).await.expect("start the turn")).await
    }

    /// The streamed text, concatenated.
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Chunk(chunk) => Some(chunk.content.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The `StreamEnd`.
    pub fn end(&self) -> &StreamEnd {
        match self.events.last() {
            Some(Event::End(end)) => end,
            other => panic!("the turn did not end with StreamEnd: {other:?}"),
        }
    }

    /// The tool results, in the order they arrived.
    pub fn tool_results(&self) -> Vec<ToolResultEvent> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::ToolResult(result) => Some(result.clone()),
                _ => None,
            })
            .collect()
    }

    /// A compact name for each event, for order assertions.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(kind).collect()
    }
}

/// Answers the question `call_id` (or the oldest, when empty) waiting on
/// `(agent, sender)`.
pub async fn answer(
    client: &Client,
    agent: &str,
    sender: &str,
    content: &str,
    call_id: &str,
) -> Result<(), crabtalk_proto::ClientError> {
    let reply = ReplyToAsk {
        agent: agent.into(),
        sender: sender.into(),
        content: content.into(),
        call_id: call_id.into(),
    };
    client.reply_to_ask(reply).await.map(drop)
}

/// A short name for an event.
pub fn kind(event: &Event) -> &'static str {
    match event {
        Event::Start(_) => "start",
        Event::Chunk(_) => "chunk",
        Event::Thinking(_) => "thinking",
        Event::ToolStart(_) => "tool_start",
        Event::ToolResult(_) => "tool_result",
        Event::ToolsComplete(_) => "tools_complete",
        Event::End(_) => "end",
        Event::AskUser(_) => "ask_user",
        Event::UserSteered(_) => "user_steered",
        Event::TextStart(_) => "text_start",
        Event::TextEnd(_) => "text_end",
        Event::ThinkingStart(_) => "thinking_start",
        Event::ThinkingEnd(_) => "thinking_end",
        Event::ContextUsage(_) => "context_usage",
    }
}
