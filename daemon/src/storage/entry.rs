//! What one line of a conversation log holds: a message, or a compact marker.
//!
//! ```text
//! {"role":"user","content":"hello","at":"2026-11-22T10:00:00Z"}
//! {"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"ask_user","arguments":"{…}"}]}
//! {"role":"tool","content":"blue","tool_call_id":"c1","tool_name":"ask_user"}
//! {"role":"assistant","content":"Blue it is.","agent":"guest"}
//! {"compact":"summary…","archive_name":"…","archived_at":"…","title":"…"}
//! ```
//!
//! A marker's first key is always `compact`, which is how the loader finds
//! the last marker without parsing the whole file.

use serde::{Deserialize, Serialize};

/// One line of a conversation log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entry {
    Compact(CompactMarker),
    Message(Message),
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// A tool call made by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    /// The raw JSON arguments, as the model wrote them.
    pub arguments: String,
}

/// A history message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    /// A guest agent's name on guest replies; empty for the primary agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRecord>,
    /// On tool results: the call they answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On tool results: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The model's reasoning, kept for the record; never sent back.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thinking: String,
    /// When the message was written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            agent: String::new(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            thinking: String::new(),
            at: Some(now_rfc3339()),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    pub fn tool_result(call: &ToolCallRecord, output: impl Into<String>, is_error: bool) -> Self {
        Self {
            tool_call_id: Some(call.id.clone()),
            tool_name: Some(call.name.clone()),
            is_error,
            ..Self::new(Role::Tool, output)
        }
    }
}

/// Where a compaction cut the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactMarker {
    /// The summary the history continues from.
    pub compact: String,
    #[serde(default)]
    pub archive_name: String,
    #[serde(default)]
    pub archived_at: String,
    #[serde(default)]
    pub title: String,
    /// How many numbered lines (messages) the log holds before this marker,
    /// so loading from the marker knows the next message number (see
    /// `storage::numbering`). Absent in markers from older logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_before: Option<u64>,
}

/// What a marker line starts with: a [`CompactMarker`]'s first key, as
/// serde writes it (the log and the message numbers tell markers by it).
pub(super) const MARKER_PREFIX: &[u8] = b"{\"compact\":";

/// Now, as RFC 3339 with seconds.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_markers_start_with_compact() {
        let marker = Entry::Compact(CompactMarker {
            compact: "sum".into(),
            archive_name: "a1".into(),
            archived_at: "t".into(),
            title: "T".into(),
            messages_before: Some(3),
        });
        let line = serde_json::to_string(&marker).unwrap();
        assert!(line.as_bytes().starts_with(MARKER_PREFIX), "{line}");
        assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), marker);

        let call = ToolCallRecord {
            id: "c1".into(),
            name: "ask_user".into(),
            arguments: "{}".into(),
        };
        let mut assistant = Message::assistant("");
        assistant.tool_calls.push(call.clone());
        for message in [
            Message::user("hi"),
            assistant,
            Message::tool_result(&call, "blue", false),
        ] {
            let entry = Entry::Message(message);
            let line = serde_json::to_string(&entry).unwrap();
            assert!(line.starts_with("{\"role\":"), "{line}");
            assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), entry);
        }
    }

    #[test]
    fn older_lines_without_new_fields_still_load() {
        let entry: Entry =
            serde_json::from_str(r#"{"role":"assistant","content":"hi there"}"#).unwrap();
        assert!(matches!(
            entry,
            Entry::Message(Message {
                role: Role::Assistant,
                ..
            })
        ));
        let entry: Entry = serde_json::from_str(r#"{"compact":"Summary"}"#).unwrap();
        assert!(matches!(entry, Entry::Compact(_)));
    }
}
