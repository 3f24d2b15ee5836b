//! [`LiveReply`]: a message that grows while a turn streams.
//!
//! The turn appends text; the chat's lane makes Telegram show it: it
//! renders the whole text, compares each part with what Telegram shows,
//! and sends or edits the first part that differs — once per pace slot,
//! always from the latest text, so frames that came in between are
//! dropped. Once the reply is sealed and Telegram shows every part as
//! rendered, it is delivered; the final text is never dropped.

use std::sync::Arc;

use teloxide_core::types::InlineKeyboardMarkup;
use tokio::sync::{Notify, watch};

use crate::address::ChatAddress;
use crate::render::{Part, render};

/// What Telegram shows of one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    pub id: i32,
    pub html: String,
    /// Sent as plain text (Telegram refused the HTML).
    pub plain: bool,
}

/// How a reply ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delivery {
    Pending,
    /// Every part is shown; the message ids in order.
    Delivered(Vec<i32>),
    Failed(String),
}

#[derive(Debug, Default)]
struct State {
    markdown: String,
    /// HTML made elsewhere, shown as it is (one message).
    fixed: Option<Part>,
    sealed: bool,
    shown: Vec<Shown>,
}

/// Why a reply was not delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotDelivered {
    /// Telegram refused it, or did not answer through every attempt; the
    /// Bot API's reason.
    #[error("{0}")]
    Failed(String),
    /// The gateway stopped before it was.
    #[error("the gateway is shutting down")]
    ShuttingDown,
}

/// A reply being streamed to a chat.
pub(crate) struct LiveReply {
    to: parking_lot::Mutex<ChatAddress>,
    keyboard: parking_lot::Mutex<Option<InlineKeyboardMarkup>>,
    state: parking_lot::Mutex<State>,
    pub(crate) changed: Notify,
    delivery: watch::Sender<Delivery>,
}

impl LiveReply {
    pub(crate) fn new(to: ChatAddress) -> Arc<Self> {
        Arc::new(Self {
            to: parking_lot::Mutex::new(to),
            keyboard: parking_lot::Mutex::new(None),
            state: parking_lot::Mutex::new(State::default()),
            changed: Notify::new(),
            delivery: watch::channel(Delivery::Pending).0,
        })
    }

    pub(crate) fn to(&self) -> ChatAddress {
        *self.to.lock()
    }

    pub(crate) fn moved_to(&self, chat: i64) {
        self.to.lock().chat = chat;
    }

    /// Puts a keyboard under the reply's last message.
    pub(crate) fn set_keyboard(&self, keyboard: InlineKeyboardMarkup) {
        *self.keyboard.lock() = Some(keyboard);
    }

    pub(crate) fn keyboard(&self) -> Option<InlineKeyboardMarkup> {
        self.keyboard.lock().clone()
    }

    /// Appends streamed text.
    pub(crate) fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut state = self.state.lock();
        if state.sealed {
            return;
        }
        state.markdown.push_str(text);
        drop(state);
        self.changed.notify_one();
    }

    /// Appends a line of its own (a tool's status, an error).
    pub(crate) fn push_line(&self, line: &str) {
        let mut state = self.state.lock();
        if state.sealed {
            return;
        }
        let text = &mut state.markdown;
        if !text.is_empty() {
            let trimmed = text.trim_end_matches('\n').len();
            text.truncate(trimmed);
            text.push_str("\n\n");
        }
        text.push_str(line);
        text.push_str("\n\n");
        drop(state);
        self.changed.notify_one();
    }

    /// No more text comes: deliver what there is.
    pub(crate) fn seal(&self) {
        self.state.lock().sealed = true;
        self.changed.notify_one();
    }

    /// Shows `html` (Telegram's subset, short) instead of Markdown.
    pub(crate) fn set_html(&self, html: String) {
        let text = crate::render::strip_html(&html);
        self.state.lock().fixed = Some(Part { html, text });
    }

    /// The parts as they should be shown, and whether that is final.
    pub(crate) fn desired(&self) -> (Vec<Part>, bool) {
        let state = self.state.lock();
        if let Some(fixed) = &state.fixed {
            return (vec![fixed.clone()], state.sealed);
        }
        let parts = render(state.markdown.trim_end());
        (parts, state.sealed)
    }

    pub(crate) fn shown(&self) -> Vec<Shown> {
        self.state.lock().shown.clone()
    }

    pub(crate) fn set_shown(&self, index: usize, shown: Shown) {
        let mut state = self.state.lock();
        if index < state.shown.len() {
            state.shown[index] = shown;
        } else {
            state.shown.push(shown);
        }
    }

    pub(crate) fn forget_shown_from(&self, index: usize) {
        self.state.lock().shown.truncate(index);
    }

    pub(crate) fn finish(&self, delivery: Delivery) {
        self.delivery.send_replace(delivery);
    }

    /// Waits until the reply is delivered or failed.
    pub(crate) async fn delivered(&self) -> Result<Vec<i32>, NotDelivered> {
        let mut delivery = self.delivery.subscribe();
        let done = delivery
            .wait_for(|d| !matches!(d, Delivery::Pending))
            .await
            .map(|d| d.clone());
        match done {
            Ok(Delivery::Delivered(ids)) => Ok(ids),
            Ok(Delivery::Failed(why)) => Err(NotDelivered::Failed(why)),
            _ => Err(NotDelivered::ShuttingDown),
        }
    }

    /// The ids of the messages shown so far.
    pub(crate) fn message_ids(&self) -> Vec<i32> {
        self.state.lock().shown.iter().map(|s| s.id).collect()
    }
}
