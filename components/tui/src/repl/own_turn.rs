//! The turn this chat runs: its stream, how it is drawn, the questions it
//! asks, and whether the daemon has taken the message.
//!
//! A message counts as taken once the turn's first event arrives. If the
//! connection is lost before that, the daemon never acknowledged it, and
//! the chat sends it again once it has reconnected (see the REPL); after
//! that, the daemon has it on disk and runs the turn whatever happens to
//! the connection.

use std::collections::VecDeque;

use crabtalk_proto::ReplyStream;
use crabtalk_proto::msg::StreamEvent;

use crate::ask::AskForm;
use crate::render::turn::TurnView;

pub(super) struct OwnTurn {
    pub stream: ReplyStream<StreamEvent>,
    pub view: TurnView,
    /// Questions waiting for an answer, oldest first; the first takes the
    /// keys.
    pub forms: VecDeque<AskForm>,
    /// Ctrl-C sent `KillMsg` already (a second one stops waiting).
    pub killed: bool,
    /// The daemon sent the turn's first event: the message is its now.
    pub acknowledged: bool,
    /// What the person typed, to send again or give back when the daemon
    /// never took it.
    pub input: String,
}

impl OwnTurn {
    pub(super) fn new(stream: ReplyStream<StreamEvent>, view: TurnView, input: &str) -> Self {
        Self {
            stream,
            view,
            forms: VecDeque::new(),
            killed: false,
            acknowledged: false,
            input: input.to_owned(),
        }
    }

    /// The question that takes the keys, if one is open.
    pub(super) fn form(&mut self) -> Option<&mut AskForm> {
        self.forms.front_mut()
    }
}
