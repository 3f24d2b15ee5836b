//! The runtime's side of the tool contract: it implements the narrow traits
//! of [`crate::hook`] that a tool call reaches the daemon through.
//!
//! - [`Turns`] for [`Runtime`]: `delegate` starts and cancels turns.
//! - [`TurnConversation`]: a turn's conversation and event sink, as the
//!   [`ToolConversation`] its calls see.
//!
//! A turn builds both into every call's [`ToolContext`](crate::hook::ToolContext),
//! so the tools need no reference back to the runtime (RFC 0041).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use crabtalk_proto::msg::AskUserEvent;

use super::conversation::Conversation;
use super::events::TurnSink;
use super::{Runtime, TurnRequest};
use crate::config::agent::UnknownAgent;
use crate::hook::{
    FileStamp, TaskError, TaskHandle, TaskOutcome, TaskRequest, ToolConversation, Turns,
};

impl Turns for Runtime {
    fn next_id(&self) -> u64 {
        Runtime::next_id(self)
    }

    fn check_agent(&self, name: &str) -> Result<(), UnknownAgent> {
        self.snapshot().agent(name).map(|_| ())
    }

    fn start(self: Arc<Self>, task: TaskRequest) -> Result<TaskHandle, TaskError> {
        let turn = self
            .start_turn(TurnRequest {
                agent: task.agent,
                sender: task.sender,
                content: task.content,
                cwd: Some(task.cwd),
                guest: None,
                tool_choice: None,
                created_by: task.created_by,
                client: None,
                chain: Some(task.chain),
                trigger: None,
                origin: None,
            })
            .map_err(|error| TaskError::Refused(error.to_string()))?;
        Ok(Box::pin(async move {
            let outcome = turn.await.map_err(|err| TaskError::Lost(err.to_string()))?;
            Ok(TaskOutcome {
                final_text: outcome.final_text,
                error: outcome.error.map(|failure| failure.to_string()),
            })
        }))
    }

    fn kill(&self, agent: &str, sender: &str) -> bool {
        Runtime::kill(self, agent, sender)
    }
}

/// A turn's conversation as its tool calls see it: the conversation, and
/// the turn's sink for the questions they put to the user.
pub(super) struct TurnConversation {
    conversation: Arc<Conversation>,
    sink: TurnSink,
}

impl TurnConversation {
    pub(super) fn new(conversation: Arc<Conversation>, sink: TurnSink) -> Self {
        Self { conversation, sink }
    }
}

impl ToolConversation for TurnConversation {
    fn agent(&self) -> &str {
        &self.conversation.key.agent
    }

    fn ask(&self, question: AskUserEvent) -> Pin<Box<dyn Future<Output = Option<String>> + Send>> {
        // Register before announcing, so a fast reply is never missed.
        let ticket = self.conversation.register_ask(&question.call_id);
        self.sink.emit(question);
        Box::pin(ticket.answer())
    }

    fn record_read(&self, path: PathBuf, stamp: FileStamp) {
        self.conversation.record_read(path, stamp);
    }

    fn read_stamp(&self, path: &Path) -> Option<FileStamp> {
        self.conversation.read_stamp(path)
    }
}
