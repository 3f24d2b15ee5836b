//! [`SessionFeed`]: one conversation's messages and summary, indexed as
//! the conversation appends them.

use crabtalk_session_index::{ConversationRef, SessionIndex};

use super::document::Document;
use crate::storage::Message;

/// Feeds one conversation's changes to the index.
#[derive(Clone, Default)]
pub struct SessionFeed {
    index: SessionIndex,
    agent: String,
    sender: String,
    conversation: String,
}

impl SessionFeed {
    pub fn new(index: SessionIndex, agent: &str, sender: &str, conversation: &str) -> Self {
        Self {
            index,
            agent: agent.to_owned(),
            sender: sender.to_owned(),
            conversation: conversation.to_owned(),
        }
    }

    fn conv(&self) -> ConversationRef<'_> {
        ConversationRef {
            agent: &self.agent,
            sender: &self.sender,
            conversation: &self.conversation,
        }
    }

    /// Indexes message `number` of the conversation.
    pub fn message(&self, number: u64, message: &Message) {
        let Ok(number) = u32::try_from(number) else {
            return;
        };
        let calls = message
            .tool_calls
            .iter()
            .map(|call| (call.name.as_str(), call.arguments.as_str()));
        if let Some(document) = Document::of(
            message.role,
            &message.content,
            calls,
            message.tool_name.as_deref(),
        ) {
            self.index.add_message(
                self.conv(),
                number,
                document.role,
                &document.text,
                document.tool_name.as_deref(),
            );
        }
    }

    /// Sets the conversation's summary (compaction); `None` after a fresh
    /// start.
    pub fn summary(&self, summary: Option<&str>) {
        self.index.set_summary(self.conv(), summary);
    }
}
