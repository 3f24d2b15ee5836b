//! Protocol messages as JSON, one object per line, for scripts.
//!
//! The shape is stable and documented in `docs/src/tui.md`: every object has
//! a `type`; the other keys are the message's fields in snake case.

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::{AgentEventKind, AgentEventMsg, TokenUsage, ToolCallInfo};
use serde_json::{Value, json};

pub(crate) fn usage(usage: &TokenUsage) -> Value {
    let mut value = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    });
    for (key, field) in [
        ("cache_hit_tokens", usage.cache_hit_tokens),
        ("cache_miss_tokens", usage.cache_miss_tokens),
        ("reasoning_tokens", usage.reasoning_tokens),
    ] {
        if let Some(n) = field {
            value[key] = json!(n);
        }
    }
    value
}

fn calls(calls: &[ToolCallInfo]) -> Value {
    Value::Array(
        calls
            .iter()
            .map(|call| json!({"id": call.id, "name": call.name, "arguments": call.arguments}))
            .collect(),
    )
}

/// One event of a streamed turn.
pub(crate) fn stream_event(event: &Event) -> Value {
    match event {
        Event::Start(start) => {
            json!({"type": "start", "agent": start.agent, "run_id": start.run_id})
        }
        Event::Chunk(chunk) => json!({"type": "chunk", "content": chunk.content}),
        Event::Thinking(thinking) => json!({"type": "thinking", "content": thinking.content}),
        Event::ToolStart(start) => json!({"type": "tool_start", "calls": calls(&start.calls)}),
        Event::ToolResult(result) => json!({
            "type": "tool_result",
            "call_id": result.call_id,
            "output": result.output,
            "duration_ms": result.duration_ms,
            "is_error": result.is_error,
        }),
        Event::ToolsComplete(_) => json!({"type": "tools_complete"}),
        Event::AskUser(ask) => json!({
            "type": "ask_user",
            "call_id": ask.call_id,
            "questions": ask.questions.iter().map(|q| json!({
                "question": q.question,
                "header": q.header,
                "multi_select": q.multi_select,
                "options": q.options.iter().map(|o| json!({"label": o.label, "description": o.description})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
        Event::UserSteered(steered) => json!({"type": "user_steered", "content": steered.content}),
        Event::TextStart(_) => json!({"type": "text_start"}),
        Event::TextEnd(_) => json!({"type": "text_end"}),
        Event::ThinkingStart(_) => json!({"type": "thinking_start"}),
        Event::ThinkingEnd(_) => json!({"type": "thinking_end"}),
        Event::ContextUsage(context) => json!({
            "type": "context_usage",
            "usage": context.usage.as_ref().map(usage),
        }),
        Event::End(end) => json!({
            "type": "end",
            "agent": end.agent,
            "model": end.model,
            "error": end.error,
            "usage": end.usage.as_ref().map(usage),
        }),
    }
}

/// The snake-case name of an event kind.
pub(crate) fn kind_name(kind: i32) -> &'static str {
    match AgentEventKind::try_from(kind) {
        Ok(AgentEventKind::TextDelta) => "text_delta",
        Ok(AgentEventKind::ThinkingDelta) => "thinking_delta",
        Ok(AgentEventKind::ToolStart) => "tool_start",
        Ok(AgentEventKind::ToolResult) => "tool_result",
        Ok(AgentEventKind::ToolsComplete) => "tools_complete",
        Ok(AgentEventKind::Done) => "done",
        Ok(AgentEventKind::TextStart) => "text_start",
        Ok(AgentEventKind::TextEnd) => "text_end",
        Ok(AgentEventKind::ThinkingStart) => "thinking_start",
        Ok(AgentEventKind::ThinkingEnd) => "thinking_end",
        Ok(AgentEventKind::ContextUsage) => "context_usage",
        Ok(AgentEventKind::EventsDropped) => "events_dropped",
        Ok(AgentEventKind::AskUser) => "ask_user",
        Ok(AgentEventKind::UserMessage) => "user_message",
        Err(_) => "unknown",
    }
}

/// One event of the daemon's event stream.
pub(crate) fn agent_event(event: &AgentEventMsg) -> Value {
    let mut value = json!({
        "type": kind_name(event.kind),
        "agent": event.agent,
        "sender": event.sender,
        "timestamp": event.timestamp,
        "run_id": event.run_id,
    });
    if !event.content.is_empty() {
        value["content"] = json!(event.content);
    }
    if !event.tool_calls.is_empty() {
        value["tool_calls"] = calls(&event.tool_calls);
    }
    if !event.tool_output.is_empty() || event.kind == AgentEventKind::ToolResult as i32 {
        value["tool_output"] = json!(event.tool_output);
        value["tool_is_error"] = json!(event.tool_is_error);
    }
    if let Some(u) = &event.usage {
        value["usage"] = usage(u);
    }
    if !event.error.is_empty() {
        value["error"] = json!(event.error);
    }
    if !event.conversation_agent.is_empty() && event.conversation_agent != event.agent {
        value["conversation_agent"] = json!(event.conversation_agent);
    }
    value
}

/// A refused request, for `--json` output: the code is for programs.
pub(crate) fn error(code: u32, message: &str) -> Value {
    json!({"type": "error", "code": code, "message": message})
}
