//! A turn's steps as MCP progress notifications.
//!
//! A host that wants progress puts a `progressToken` in the call's `_meta`;
//! each notification then carries that token, a `progress` that grows by
//! one per notification (a turn's length is not known in advance, so there
//! is no `total`), and a `message` saying what happened: a piece of the
//! reply, a tool called, a tool done. Text is sent in pieces of at least
//! [`TEXT_PIECE`] characters, or what has gathered when something else
//! happens or the turn pauses ([`Progress::flush`]): a host gets the reply
//! as it grows without a notification per token.
//!
//! A host that asked for no progress gets none; a notification that cannot
//! be sent (the host is gone) is dropped — the turn's result is what
//! counts.

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;

/// Text is sent once this many characters have gathered.
pub(super) const TEXT_PIECE: usize = 160;

/// The progress of one `ask_agent` call.
pub(super) struct Progress {
    target: Option<(ProgressToken, Peer<RoleServer>)>,
    sent: u32,
    text: String,
}

impl Progress {
    /// Progress for the call whose token is `token`, sent to `peer`.
    pub(super) fn new(token: Option<ProgressToken>, peer: Peer<RoleServer>) -> Self {
        Self {
            target: token.map(|token| (token, peer)),
            sent: 0,
            text: String::new(),
        }
    }

    /// A piece of the reply.
    pub(super) async fn text(&mut self, piece: &str) {
        if self.target.is_none() {
            return;
        }
        self.text.push_str(piece);
        if self.text.chars().count() >= TEXT_PIECE {
            self.flush().await;
        }
    }

    /// Something other than text: sent at once, after the text before it.
    pub(super) async fn step(&mut self, message: String) {
        self.flush().await;
        self.send(message).await;
    }

    /// Sends the text gathered so far, if any.
    pub(super) async fn flush(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        self.send(text).await;
    }

    /// Whether text is waiting to be sent.
    pub(super) fn has_text(&self) -> bool {
        !self.text.is_empty()
    }

    async fn send(&mut self, message: String) {
        let Some((token, peer)) = &self.target else {
            return;
        };
        self.sent += 1;
        let param = ProgressNotificationParam::new(token.clone(), f64::from(self.sent))
            .with_message(message);
        if let Err(err) = peer.notify_progress(param).await {
            tracing::debug!("a progress notification was not sent: {err}");
        }
    }
}
