//! What the index holds for one message, read from a conversation's
//! message or from a log line; and a window item made from a log line.

use std::borrow::Cow;

use serde::Deserialize;

use crabtalk_session_index::{Role as SearchRole, SourceMessage};

use crate::storage::Role;

/// What the index holds for one message.
pub(super) struct Document<'a> {
    pub(super) role: SearchRole,
    pub(super) text: Cow<'a, str>,
    pub(super) tool_name: Option<Cow<'a, str>>,
}

impl<'a> Document<'a> {
    /// The document for a message: user and assistant text as it is; an
    /// assistant message that calls tools with the calls' arguments after
    /// its text and their names as the tool name; a tool result with its
    /// tool's name. System messages are not indexed.
    pub(super) fn of(
        role: Role,
        content: &'a str,
        calls: impl ExactSizeIterator<Item = (&'a str, &'a str)> + Clone,
        tool_name: Option<&'a str>,
    ) -> Option<Self> {
        let document = match role {
            Role::System => return None,
            Role::User => Self {
                role: SearchRole::User,
                text: Cow::Borrowed(content),
                tool_name: None,
            },
            Role::Assistant if calls.len() == 0 => Self {
                role: SearchRole::Assistant,
                text: Cow::Borrowed(content),
                tool_name: None,
            },
            Role::Assistant => {
                let mut text = content.to_owned();
                let mut names = String::new();
                for (name, arguments) in calls {
                    if !names.is_empty() {
                        names.push_str(", ");
                    }
                    names.push_str(name);
                    text.push('\n');
                    text.push_str(arguments);
                }
                Self {
                    role: SearchRole::ToolCall,
                    text: Cow::Owned(text),
                    tool_name: Some(Cow::Owned(names)),
                }
            }
            Role::Tool => Self {
                role: SearchRole::ToolResult,
                text: Cow::Borrowed(content),
                tool_name: tool_name.map(Cow::Borrowed),
            },
        };
        Some(document)
    }
}

/// A log line, parsed only as far as indexing needs (borrowing its text
/// where it has no escapes: the rebuild parses every message on disk).
#[derive(Deserialize)]
pub(super) struct IndexedLine<'a> {
    pub(super) role: Role,
    #[serde(borrow, default)]
    pub(super) content: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) tool_calls: Vec<IndexedCall<'a>>,
    #[serde(borrow, default)]
    pub(super) tool_name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct IndexedCall<'a> {
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) arguments: Cow<'a, str>,
}

/// A window item's message, from its log line.
pub(super) fn source_message(number: u32, line: &[u8]) -> Option<SourceMessage> {
    let parsed: IndexedLine<'_> = serde_json::from_slice(line).ok()?;
    let calls = parsed
        .tool_calls
        .iter()
        .map(|call| (call.name.as_ref(), call.arguments.as_ref()));
    let document = Document::of(
        parsed.role,
        &parsed.content,
        calls,
        parsed.tool_name.as_deref(),
    )?;
    Some(SourceMessage {
        msg_idx: number,
        role: document.role,
        text: document.text.into_owned(),
        tool_name: document.tool_name.map(Cow::into_owned),
    })
}
