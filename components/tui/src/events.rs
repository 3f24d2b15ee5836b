//! The daemon's event stream as lines for people.
//!
//! Text and thinking arrive as many small deltas; [`EventTail`] gathers
//! them per turn (`run_id`) and prints a line when a line of text is
//! complete or the segment ends, so a tail reads like a log:
//!
//! ```text
//! 14:02:07 crab/alice  text      Hello there!
//! 14:02:07 crab/alice  tool      bash  command: "ls"
//! 14:02:08 crab/alice  result    a.txt
//! 14:02:08 crab/alice  done      scripted · 21 in · 7 out
//! ```
//!
//! Text still gathering is not hidden: [`EventTail::live`] gives it as
//! lines that change until they are complete, for a screen to show live.
//! [`as_stream_event`] turns an event into the stream event a turn's own
//! client gets, so a turn another client started can be drawn like one's
//! own.

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use serde_json::Value;

use crate::render::tool::summarize_arguments;
use crate::render::turn::usage_summary;
use crate::text::{sanitize, truncate};

/// Text gathered before a line is forced out (bounded memory).
const MAX_PENDING: usize = 4096;

/// Turns with unfinished text tracked at once.
const MAX_RUNS: usize = 64;

/// Widest line printed by [`EventTail`].
const LINE_WIDTH: usize = 240;

struct Pending {
    run_id: u64,
    agent: String,
    sender: String,
    timestamp: String,
    kind: &'static str,
    text: String,
}

/// Turns events into lines, optionally only one agent's.
#[derive(Default)]
pub(crate) struct EventTail {
    agent: Option<String>,
    pending: Vec<Pending>,
}

impl EventTail {
    pub(crate) fn new(agent: Option<String>) -> Self {
        Self {
            agent: agent.filter(|agent| !agent.is_empty()),
            pending: Vec::new(),
        }
    }

    /// Whether `event` passes the agent filter.
    pub(crate) fn wants(&self, event: &AgentEventMsg) -> bool {
        match &self.agent {
            // Dropped-event markers concern every subscriber.
            Some(agent) => {
                event.agent == *agent || event.kind == AgentEventKind::EventsDropped as i32
            }
            None => true,
        }
    }

    /// The lines `event` completes.
    pub(crate) fn event(&mut self, event: &AgentEventMsg) -> Vec<String> {
        if !self.wants(event) {
            return Vec::new();
        }
        let kind = AgentEventKind::try_from(event.kind).ok();
        match kind {
            Some(AgentEventKind::TextDelta) => return self.delta(event, "text"),
            Some(AgentEventKind::ThinkingDelta) => return self.delta(event, "thinking"),
            Some(AgentEventKind::TextStart)
            | Some(AgentEventKind::ThinkingStart)
            | Some(AgentEventKind::ToolsComplete) => return Vec::new(),
            _ => {}
        }
        let mut lines = self.flush(event.run_id);
        let line = |label: &str, text: &str| line(event, label, text);
        match kind {
            Some(AgentEventKind::TextEnd) | Some(AgentEventKind::ThinkingEnd) => {}
            Some(AgentEventKind::ToolStart) => {
                for call in &event.tool_calls {
                    let summary = summarize_arguments(&call.name, &call.arguments, 120);
                    lines.push(line(
                        "tool",
                        &format!("{}  {summary}", sanitize(&call.name)),
                    ));
                }
            }
            Some(AgentEventKind::ToolResult) => {
                let label = if event.tool_is_error {
                    "error"
                } else {
                    "result"
                };
                lines.push(line(label, &event.tool_output));
            }
            Some(AgentEventKind::Done) => {
                let summary = usage_summary("", event.usage.as_ref(), None);
                if event.error.is_empty() {
                    lines.push(line("done", &summary));
                } else {
                    lines.push(line("failed", &event.error));
                }
            }
            Some(AgentEventKind::ContextUsage) => {
                lines.push(line(
                    "usage",
                    &usage_summary("", None, event.usage.as_ref()),
                ));
            }
            Some(AgentEventKind::EventsDropped) => lines.push(line("dropped", &event.content)),
            Some(AgentEventKind::AskUser) => {
                lines.push(line("ask", &ask_questions(&event.content)));
            }
            Some(AgentEventKind::UserMessage) => lines.push(line("user", &event.content)),
            _ => lines.push(line(crate::json::kind_name(event.kind), &event.content)),
        }
        lines
    }

    /// The text still gathering, one line per turn, as it stands.
    pub(crate) fn live(&self) -> Vec<String> {
        self.pending
            .iter()
            .filter(|pending| !pending.text.trim().is_empty())
            .map(|pending| pending_line(pending, pending.text.trim_end()))
            .collect()
    }

    /// Lines still gathering (at the end of the stream).
    pub(crate) fn finish(&mut self) -> Vec<String> {
        let runs: Vec<u64> = self.pending.iter().map(|p| p.run_id).collect();
        runs.into_iter().flat_map(|run| self.flush(run)).collect()
    }

    fn delta(&mut self, event: &AgentEventMsg, kind: &'static str) -> Vec<String> {
        let mut lines = Vec::new();
        if self
            .pending
            .iter()
            .any(|p| p.run_id == event.run_id && p.kind != kind)
        {
            lines.extend(self.flush(event.run_id));
        }
        if !self.pending.iter().any(|p| p.run_id == event.run_id) {
            if self.pending.len() >= MAX_RUNS {
                let oldest = self.pending[0].run_id;
                lines.extend(self.flush(oldest));
            }
            self.pending.push(Pending {
                run_id: event.run_id,
                agent: event.agent.clone(),
                sender: event.sender.clone(),
                timestamp: event.timestamp.clone(),
                kind,
                text: String::new(),
            });
        }
        let pending = self
            .pending
            .iter_mut()
            .find(|p| p.run_id == event.run_id)
            .expect("just inserted");
        pending.text.push_str(&event.content);
        while let Some(newline) = pending.text.find('\n') {
            let rest = pending.text.split_off(newline + 1);
            let done = std::mem::replace(&mut pending.text, rest);
            if !done.trim().is_empty() {
                lines.push(pending_line(pending, done.trim_end()));
            }
        }
        if pending.text.len() > MAX_PENDING {
            let text = std::mem::take(&mut pending.text);
            lines.push(pending_line(pending, &text));
        }
        lines
    }

    fn flush(&mut self, run_id: u64) -> Vec<String> {
        let Some(index) = self.pending.iter().position(|p| p.run_id == run_id) else {
            return Vec::new();
        };
        let pending = self.pending.remove(index);
        if pending.text.trim().is_empty() {
            return Vec::new();
        }
        vec![pending_line(&pending, pending.text.trim_end())]
    }
}

fn pending_line(pending: &Pending, text: &str) -> String {
    format_line(
        &pending.timestamp,
        &pending.agent,
        &pending.sender,
        pending.kind,
        text,
    )
}

fn line(event: &AgentEventMsg, label: &str, text: &str) -> String {
    format_line(&event.timestamp, &event.agent, &event.sender, label, text)
}

fn format_line(timestamp: &str, agent: &str, sender: &str, label: &str, text: &str) -> String {
    let time = chrono::DateTime::parse_from_rfc3339(timestamp)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| sanitize(timestamp));
    let who = if agent.is_empty() {
        "daemon".to_owned()
    } else if sender.is_empty() {
        sanitize(agent)
    } else {
        format!("{}/{}", sanitize(agent), sanitize(sender))
    };
    let text = sanitize(text).trim().replace('\n', " ⏎ ");
    let line = format!("{time} {who}  {label:<8}  {text}");
    truncate(line.trim_end(), LINE_WIDTH).into_owned()
}

/// The stream event a turn's own client got for `event`, if there is one
/// (a user message becomes `UserSteered` — [`AgentEventKind::UserMessage`]
/// that starts a turn is for the caller to show as it likes).
pub(crate) fn as_stream_event(event: &AgentEventMsg) -> Option<Event> {
    let event = match AgentEventKind::try_from(event.kind).ok()? {
        AgentEventKind::TextDelta => Event::Chunk(StreamChunk {
            content: event.content.clone(),
        }),
        AgentEventKind::ThinkingDelta => Event::Thinking(StreamThinking {
            content: event.content.clone(),
        }),
        AgentEventKind::ToolStart => Event::ToolStart(ToolStartEvent {
            calls: event.tool_calls.clone(),
        }),
        AgentEventKind::ToolResult => Event::ToolResult(ToolResultEvent {
            call_id: event.content.clone(),
            output: event.tool_output.clone(),
            duration_ms: 0,
            is_error: event.tool_is_error,
        }),
        AgentEventKind::ToolsComplete => Event::ToolsComplete(ToolsCompleteEvent {}),
        AgentEventKind::Done => Event::End(StreamEnd {
            agent: event.agent.clone(),
            error: event.error.clone(),
            model: String::new(),
            usage: event.usage,
        }),
        AgentEventKind::TextStart => Event::TextStart(TextStartEvent {
            agent: event.agent.clone(),
        }),
        AgentEventKind::TextEnd => Event::TextEnd(TextEndEvent {
            agent: event.agent.clone(),
        }),
        AgentEventKind::ThinkingStart => Event::ThinkingStart(ThinkingStartEvent {
            agent: event.agent.clone(),
        }),
        AgentEventKind::ThinkingEnd => Event::ThinkingEnd(ThinkingEndEvent {
            agent: event.agent.clone(),
        }),
        AgentEventKind::ContextUsage => {
            Event::ContextUsage(ContextUsageEvent { usage: event.usage })
        }
        AgentEventKind::UserMessage => Event::UserSteered(UserSteeredEvent {
            content: event.content.clone(),
        }),
        AgentEventKind::AskUser | AgentEventKind::EventsDropped => return None,
    };
    Some(event)
}

/// The questions of an `ASK_USER` event's JSON content.
fn ask_questions(content: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(content) else {
        return content.to_owned();
    };
    value["questions"]
        .as_array()
        .map(|questions| {
            questions
                .iter()
                .filter_map(|q| q["question"].as_str())
                .collect::<Vec<_>>()
                .join(" · ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crabtalk_proto::msg::{TokenUsage, ToolCallInfo};

    use super::*;

    fn event(kind: AgentEventKind, content: &str) -> AgentEventMsg {
        AgentEventMsg {
            agent: "crab".into(),
            sender: "alice".into(),
            kind: kind as i32,
            content: content.into(),
            timestamp: "not a time".into(),
            run_id: 7,
            ..Default::default()
        }
    }

    #[test]
    fn deltas_gather_into_lines() {
        let mut tail = EventTail::new(None);
        assert!(tail.event(&event(AgentEventKind::TextStart, "")).is_empty());
        assert!(
            tail.event(&event(AgentEventKind::TextDelta, "Hel"))
                .is_empty()
        );
        assert_eq!(
            tail.event(&event(AgentEventKind::TextDelta, "lo\nwor")),
            ["not a time crab/alice  text      Hello"]
        );
        assert_eq!(
            tail.event(&event(AgentEventKind::TextEnd, "")),
            ["not a time crab/alice  text      wor"]
        );
        let mut start = event(AgentEventKind::ToolStart, "");
        start.tool_calls = vec![ToolCallInfo {
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
            id: "c1".into(),
        }];
        assert_eq!(
            tail.event(&start),
            ["not a time crab/alice  tool      bash  command: \"ls\""]
        );
        let mut done = event(AgentEventKind::Done, "");
        done.usage = Some(TokenUsage {
            prompt_tokens: 21,
            completion_tokens: 7,
            total_tokens: 28,
            ..Default::default()
        });
        assert_eq!(
            tail.event(&done),
            ["not a time crab/alice  done      21 in · 7 out"]
        );
    }

    #[test]
    fn text_still_gathering_is_live() {
        let mut tail = EventTail::new(None);
        assert!(tail.live().is_empty());
        tail.event(&event(AgentEventKind::TextDelta, "Once upon"));
        assert_eq!(tail.live(), ["not a time crab/alice  text      Once upon"]);
        tail.event(&event(AgentEventKind::TextDelta, " a time\nthe"));
        assert_eq!(tail.live(), ["not a time crab/alice  text      the"]);
        tail.event(&event(AgentEventKind::Done, ""));
        assert!(tail.live().is_empty());
    }

    #[test]
    fn events_become_the_stream_events_of_the_turn() {
        let mut result = event(AgentEventKind::ToolResult, "c1");
        result.tool_output = "fine".into();
        assert_eq!(
            as_stream_event(&result),
            Some(Event::ToolResult(ToolResultEvent {
                call_id: "c1".into(),
                output: "fine".into(),
                duration_ms: 0,
                is_error: false,
            }))
        );
        assert_eq!(
            as_stream_event(&event(AgentEventKind::TextDelta, "hi")),
            Some(Event::Chunk(StreamChunk {
                content: "hi".into()
            }))
        );
        assert_eq!(
            as_stream_event(&event(AgentEventKind::EventsDropped, "")),
            None
        );
    }

    #[test]
    fn other_agents_are_filtered_out() {
        let mut tail = EventTail::new(Some("ranger".into()));
        assert!(tail.event(&event(AgentEventKind::Done, "")).is_empty());
        let mut dropped = event(AgentEventKind::EventsDropped, "3 events were dropped");
        dropped.agent.clear();
        assert_eq!(tail.event(&dropped).len(), 1);
    }
}
