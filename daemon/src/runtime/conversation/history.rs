//! [`History`]: a conversation's messages since its last compact marker,
//! held by the running turn; every change goes to the log first, then to
//! memory and the session index. And the title a conversation is given.

use std::io;

use crate::runtime::request::{KeptTools, WireHistory};
use crate::sessions::SessionFeed;
use crate::storage::{CompactMarker, Entry, Message, Meta, Role, SessionLog, now_rfc3339};

/// The history of a conversation, held by the running turn.
pub(crate) struct History {
    pub(super) loaded: bool,
    /// Messages since the last compact marker. Changed only through
    /// [`append`](Self::append) and [`append_marker`](Self::append_marker),
    /// which keep `wire` beside it.
    pub messages: Vec<Message>,
    /// `messages` in the provider's shape, lent to each model call.
    pub(crate) wire: WireHistory,
    /// The last turn's tools in the provider's shape, for the next turn.
    pub(crate) tools: KeptTools,
    pub marker: Option<CompactMarker>,
    pub meta: Meta,
    pub(super) log: SessionLog,
    /// The number the next message gets in the whole log (see
    /// `storage::numbering`); session search refers to messages by it.
    pub(super) next_number: u64,
    pub(super) feed: SessionFeed,
}

impl History {
    /// Appends a message to the log, then to memory and the session index.
    pub(crate) fn append(&mut self, message: Message) -> io::Result<()> {
        self.log.append_message(&message)?;
        self.feed.message(self.next_number, &message);
        self.next_number += 1;
        self.wire.push(&message);
        self.messages.push(message);
        self.meta.message_count = self.next_number;
        self.meta.updated_at = now_rfc3339();
        Ok(())
    }

    /// How many messages the whole log holds (before and after markers).
    #[cfg(test)]
    pub(crate) fn message_count(&self) -> u64 {
        self.next_number
    }

    /// Appends a compact marker: the history continues from its summary
    /// (from nothing, for a marker without one: a fresh start). The marker
    /// records how many messages came before it.
    pub(crate) fn append_marker(&mut self, mut marker: CompactMarker) -> io::Result<()> {
        marker.messages_before = Some(self.next_number);
        self.log.append(&Entry::Compact(marker.clone()))?;
        let summary = Some(marker.compact.clone()).filter(|summary| !summary.trim().is_empty());
        self.feed.summary(summary.as_deref());
        self.messages.clear();
        self.wire.clear();
        if summary.is_none() {
            // A fresh start: the next first message names the conversation.
            self.meta.title.clear();
        }
        self.meta.summary = summary;
        self.meta.compactions += 1;
        self.meta.updated_at = now_rfc3339();
        self.marker = Some(marker);
        Ok(())
    }

    /// Names the conversation after its first message, if it has no title
    /// yet: the message's first line, cut to [`MAX_TITLE_CHARS`].
    pub(crate) fn title_from(&mut self, message: &str) {
        if !self.meta.title.is_empty() {
            return;
        }
        let title = title_of(message);
        if title.is_empty() {
            return;
        }
        // Not indexed: the message it comes from is.
        self.meta.title = title;
        self.meta.auto_title = true;
    }

    /// What the model is told in place of the history before the last
    /// compaction (nothing after a fresh start).
    pub(crate) fn summary_message(&self) -> Option<Message> {
        self.marker
            .as_ref()
            .filter(|marker| !marker.compact.trim().is_empty())
            .map(|marker| {
                Message::user(format!(
                    "Summary of the earlier part of this conversation:\n\n{}",
                    marker.compact
                ))
            })
    }

    /// Gives every tool call of the last assistant message that has no
    /// result a result saying why (a cancelled turn must leave a history
    /// every provider accepts).
    pub(crate) fn close_dangling_calls(&mut self, reason: &str) -> io::Result<()> {
        let Some(position) = self
            .messages
            .iter()
            .rposition(|m| m.role == Role::Assistant)
        else {
            return Ok(());
        };
        let answered: Vec<String> = self.messages[position + 1..]
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        let missing: Vec<_> = self.messages[position]
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(&call.id))
            .cloned()
            .collect();
        for call in missing {
            self.append(Message::tool_result(&call, reason, true))?;
        }
        Ok(())
    }
}

/// The longest title taken from a first message, in characters.
pub(crate) const MAX_TITLE_CHARS: usize = 60;

/// A title from a message: its first non-empty line, whitespace collapsed,
/// cut between words to [`MAX_TITLE_CHARS`] (with `…` when cut).
pub(crate) fn title_of(message: &str) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    let words: Vec<&str> = line.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= MAX_TITLE_CHARS {
        return line;
    }
    let mut title = String::new();
    for word in words {
        let next = if title.is_empty() {
            word.to_owned()
        } else {
            format!("{title} {word}")
        };
        if next.chars().count() > MAX_TITLE_CHARS - 1 {
            break;
        }
        title = next;
    }
    if title.is_empty() {
        // One long word: cut it between characters.
        title = line.chars().take(MAX_TITLE_CHARS - 1).collect();
    }
    title.push('…');
    title
}
