//! Everything the gateway shows in a chat goes through that chat's lane.
//!
//! A lane is a queue per chat, worked by one task at a time, that keeps
//! Telegram's per-chat pace: at least [`PRIVATE_GAP`] between sends and
//! edits in a private chat, [`GROUP_GAP`] in a group, measured from the
//! end of one request to the start of the next (so Telegram, which sees
//! requests arrive somewhere in between, sees at least that gap). Every
//! request also passes the global [`Throttle`](crate::api::Throttle).
//!
//! Items are served in order: a streamed [`LiveReply`] (sent, then edited
//! to its latest text; intermediate frames are dropped, the final text
//! never), then whatever was queued after it (a question, a keyboard
//! change). A 429 pauses the chat for `retry_after`; when the pause was
//! long, the chat is told the reply was delayed. A part Telegram cannot
//! parse is sent again as plain text. A group that became a supergroup is
//! followed to its new id.

pub mod live;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use teloxide_core::types::InlineKeyboardMarkup;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::address::ChatAddress;
use crate::api::{Api, ApiFailure, Text};
use crate::state::chats::ChatBook;
use live::Shown;
pub use live::{Delivery, LiveReply};

/// Between two messages or edits in a private chat.
pub const PRIVATE_GAP: Duration = Duration::from_millis(1000);
/// Between two messages or edits in a group.
pub const GROUP_GAP: Duration = Duration::from_millis(3000);
/// A flood-control pause at least this long is told to the chat.
pub const LONG_PAUSE: Duration = Duration::from_secs(10);
/// Attempts at a request that fails for lack of an answer.
const NETWORK_ATTEMPTS: u32 = 5;

/// A change to a message already shown.
pub struct Edit {
    pub message_id: i32,
    /// New text, if it changes.
    pub text: Option<Text>,
    /// The keyboard it should have (`None`: none). Only with `text` or
    /// `keyboard_only`.
    pub keyboard: Option<InlineKeyboardMarkup>,
    /// Change only the keyboard.
    pub keyboard_only: bool,
    pub done: Option<oneshot::Sender<Result<(), String>>>,
}

enum Item {
    Live(Arc<LiveReply>),
    Edit(Edit),
}

struct LaneState {
    items: VecDeque<Item>,
    running: bool,
    /// Where the chat's messages go now (a migrated group's new id).
    chat: i64,
    last_end: Option<Instant>,
    paused_until: Option<Instant>,
    /// A long pause the chat has not been told about yet.
    untold_pause: Option<Duration>,
}

struct Lane {
    gap: Duration,
    state: parking_lot::Mutex<LaneState>,
    wake: Notify,
}

/// The lanes of every chat.
#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
}

struct Inner {
    api: Api,
    chats: Arc<ChatBook>,
    lanes: parking_lot::Mutex<HashMap<i64, Arc<Lane>>>,
    idle: Notify,
}

impl Outbox {
    pub fn new(api: Api, chats: Arc<ChatBook>) -> Self {
        Self {
            inner: Arc::new(Inner {
                api,
                chats,
                lanes: parking_lot::Mutex::new(HashMap::new()),
                idle: Notify::new(),
            }),
        }
    }

    pub fn api(&self) -> &Api {
        &self.inner.api
    }

    /// A reply that streams into `to`, queued behind what the chat has.
    pub fn live(&self, to: ChatAddress) -> Arc<LiveReply> {
        let to = ChatAddress {
            chat: self.inner.chats.current_chat(to.chat),
            ..to
        };
        let reply = LiveReply::new(to);
        self.enqueue(to.chat, Item::Live(reply.clone()));
        reply
    }

    /// Sends `markdown` (split as needed) to `to`, with `keyboard` under
    /// the last message; the message ids.
    pub async fn send(
        &self,
        to: ChatAddress,
        markdown: &str,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<Vec<i32>, String> {
        let reply = self.prepared(to, markdown, keyboard);
        reply.delivered().await
    }

    /// [`Outbox::send`] without waiting: the reply to wait on.
    pub fn prepared(
        &self,
        to: ChatAddress,
        markdown: &str,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Arc<LiveReply> {
        let to = ChatAddress {
            chat: self.inner.chats.current_chat(to.chat),
            ..to
        };
        let reply = LiveReply::new(to);
        if let Some(keyboard) = keyboard {
            reply.set_keyboard(keyboard);
        }
        reply.push(markdown);
        reply.seal();
        self.enqueue(to.chat, Item::Live(reply.clone()));
        reply
    }

    /// Sends `html` (already in Telegram's subset, one message) with
    /// `keyboard`.
    pub fn prepared_html(
        &self,
        to: ChatAddress,
        html: String,
        keyboard: InlineKeyboardMarkup,
    ) -> Arc<LiveReply> {
        let to = ChatAddress {
            chat: self.inner.chats.current_chat(to.chat),
            ..to
        };
        let reply = LiveReply::new(to);
        reply.set_keyboard(keyboard);
        reply.set_html(html);
        reply.seal();
        self.enqueue(to.chat, Item::Live(reply.clone()));
        reply
    }

    /// Changes a message in `chat`, in the chat's order and pace.
    pub fn edit(&self, chat: i64, edit: Edit) {
        let chat = self.inner.chats.current_chat(chat);
        self.enqueue(chat, Item::Edit(edit));
    }

    /// Whether `chat` is paused by flood control right now.
    pub fn is_paused(&self, chat: i64) -> bool {
        self.inner.lanes.lock().get(&chat).is_some_and(|lane| {
            lane.state
                .lock()
                .paused_until
                .is_some_and(|until| until > Instant::now())
        })
    }

    /// Waits until every lane is empty, at most `grace`; whether they are.
    pub async fn drain(&self, grace: Duration) -> bool {
        let deadline = Instant::now() + grace;
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            let busy = self
                .inner
                .lanes
                .lock()
                .values()
                .any(|lane| lane.state.lock().running);
            if !busy {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return false;
            }
        }
    }

    fn enqueue(&self, chat: i64, item: Item) {
        let lane = self
            .inner
            .lanes
            .lock()
            .entry(chat)
            .or_insert_with(|| {
                Arc::new(Lane {
                    gap: if chat > 0 { PRIVATE_GAP } else { GROUP_GAP },
                    state: parking_lot::Mutex::new(LaneState {
                        items: VecDeque::new(),
                        running: false,
                        chat,
                        last_end: None,
                        paused_until: None,
                        untold_pause: None,
                    }),
                    wake: Notify::new(),
                })
            })
            .clone();
        let start = {
            let mut state = lane.state.lock();
            state.items.push_back(item);
            !std::mem::replace(&mut state.running, true)
        };
        if start {
            let worker = Worker {
                inner: self.inner.clone(),
                lane,
            };
            tokio::spawn(worker.run());
        } else {
            lane.wake.notify_one();
        }
    }
}

/// The task working one lane until it is empty.
struct Worker {
    inner: Arc<Inner>,
    lane: Arc<Lane>,
}

/// What one request came to.
enum Outcome {
    /// Try the same thing again (after a pause, a migration).
    Again,
    Failed(String),
}

impl Worker {
    async fn run(self) {
        loop {
            let item = {
                let mut state = self.lane.state.lock();
                match state.items.pop_front() {
                    Some(item) => item,
                    None => {
                        state.running = false;
                        drop(state);
                        self.inner.idle.notify_waiters();
                        return;
                    }
                }
            };
            match item {
                Item::Live(reply) => self.live(&reply).await,
                Item::Edit(edit) => self.edit(edit).await,
            }
        }
    }

    fn chat(&self) -> i64 {
        self.lane.state.lock().chat
    }

    /// Waits for the chat's next slot; tells the chat about a long pause
    /// first if there was one.
    async fn slot(&self) {
        loop {
            let ready = {
                let state = self.lane.state.lock();
                let after_gap = state.last_end.map(|end| end + self.lane.gap);
                [after_gap, state.paused_until].into_iter().flatten().max()
            };
            match ready {
                Some(at) if at > Instant::now() => tokio::time::sleep_until(at).await,
                _ => break,
            }
        }
        let untold = self.lane.state.lock().untold_pause.take();
        if let Some(pause) = untold {
            let to = ChatAddress::chat(self.chat());
            let notice = Text::Plain(format!(
                "⏳ Telegram paused this chat for {} s (flood control), so the reply is late; it continues now.",
                pause.as_secs()
            ));
            let sent = self.inner.api.send_message(to, &notice, None).await;
            self.ended();
            if let Err(err) = sent {
                tracing::warn!(
                    chat = to.chat,
                    "cannot tell the chat about the pause: {err}"
                );
            }
            Box::pin(self.slot()).await;
        }
    }

    fn ended(&self) {
        self.lane.state.lock().last_end = Some(Instant::now());
    }

    /// What a failure means for the request that got it.
    fn after_failure(&self, failure: &ApiFailure, attempts: &mut u32) -> Outcome {
        match failure {
            ApiFailure::RetryAfter(wait) => {
                let mut state = self.lane.state.lock();
                state.paused_until = Some(Instant::now() + *wait);
                if *wait >= LONG_PAUSE {
                    state.untold_pause = Some(*wait);
                }
                tracing::warn!(
                    chat = state.chat,
                    "Telegram's flood control: pausing the chat for {wait:?}"
                );
                Outcome::Again
            }
            ApiFailure::Migrated(new) => {
                let old = {
                    let mut state = self.lane.state.lock();
                    std::mem::replace(&mut state.chat, *new)
                };
                self.inner
                    .chats
                    .migrated(self.inner.chats.conversation_chat(old), *new);
                Outcome::Again
            }
            ApiFailure::Network(_) if *attempts + 1 < NETWORK_ATTEMPTS => {
                *attempts += 1;
                let backoff = Duration::from_millis(500 << *attempts);
                self.lane.state.lock().paused_until = Some(Instant::now() + backoff);
                tracing::warn!("{failure}; trying again in {backoff:?}");
                Outcome::Again
            }
            other => Outcome::Failed(other.to_string()),
        }
    }

    async fn live(&self, reply: &Arc<LiveReply>) {
        let mut attempts = 0;
        loop {
            let (parts, sealed) = reply.desired();
            let shown = reply.shown();
            let keyboard = reply.keyboard();
            let next =
                (0..parts.len().max(shown.len())).find(|i| match (parts.get(*i), shown.get(*i)) {
                    (Some(part), Some(shown)) => {
                        if shown.plain {
                            shown.html != part.text
                        } else {
                            shown.html != part.html
                        }
                    }
                    _ => true,
                });
            let Some(index) = next else {
                if sealed {
                    reply.finish(Delivery::Delivered(reply.message_ids()));
                    return;
                }
                reply.changed.notified().await;
                continue;
            };
            // While the reply streams, wait for the pace; the text it
            // sends is the newest when the slot comes.
            self.slot().await;
            let (parts, sealed) = reply.desired();
            let shown = reply.shown();
            if index >= parts.len() && index < shown.len() {
                // The text got shorter in parts: a message too many.
                let result = self
                    .inner
                    .api
                    .delete_message(self.chat(), shown[index].id)
                    .await;
                self.ended();
                if let Err(err) = result {
                    tracing::debug!("cannot delete a surplus part: {err}");
                }
                reply.forget_shown_from(index);
                continue;
            }
            let Some(part) = parts.get(index) else {
                continue;
            };
            let last = index + 1 == parts.len();
            let keyboard = if last && sealed {
                keyboard.clone()
            } else {
                None
            };
            let plain = shown.get(index).is_some_and(|s| s.plain);
            let text = if plain {
                Text::Plain(part.text.clone())
            } else {
                Text::Html(part.html.clone())
            };
            reply.moved_to(self.chat());
            let to = reply.to();
            let result = match shown.get(index) {
                Some(existing) => self
                    .inner
                    .api
                    .edit_message_text(to.chat, existing.id, &text, keyboard)
                    .await
                    .map(|()| existing.id),
                None => self.inner.api.send_message(to, &text, keyboard).await,
            };
            self.ended();
            let record = |id: i32, plain: bool| Shown {
                id,
                html: if plain {
                    part.text.clone()
                } else {
                    part.html.clone()
                },
                plain,
            };
            match result {
                Ok(id) => {
                    attempts = 0;
                    reply.set_shown(index, record(id, plain));
                }
                Err(ApiFailure::NotModified) => {
                    if let Some(existing) = shown.get(index) {
                        reply.set_shown(index, record(existing.id, plain));
                    }
                }
                Err(ApiFailure::CantParseEntities(why)) if !plain => {
                    tracing::warn!(
                        chat = to.chat,
                        "Telegram refused the formatting ({why}); sending that part as plain text"
                    );
                    // Shown as plain from now on: the next try sends text.
                    let id = shown.get(index).map(|s| s.id);
                    match id {
                        Some(id) => reply.set_shown(
                            index,
                            Shown {
                                id,
                                html: String::new(),
                                plain: true,
                            },
                        ),
                        None => {
                            let sent = self
                                .inner
                                .api
                                .send_message(to, &Text::Plain(part.text.clone()), None)
                                .await;
                            self.ended();
                            match sent {
                                Ok(id) => reply.set_shown(index, record(id, true)),
                                Err(err) => match self.after_failure(&err, &mut attempts) {
                                    Outcome::Failed(why) => return self.give_up(reply, &why),
                                    _ => continue,
                                },
                            }
                        }
                    }
                }
                Err(failure) => match self.after_failure(&failure, &mut attempts) {
                    Outcome::Again => {}
                    Outcome::Failed(why) if shown.get(index).is_some() => {
                        // The message cannot be edited (deleted, too old):
                        // the rest goes in new messages.
                        tracing::warn!(
                            chat = to.chat,
                            "cannot edit a reply ({why}); continuing in a new message"
                        );
                        reply.forget_shown_from(index);
                        attempts += 1;
                        if attempts >= NETWORK_ATTEMPTS {
                            return self.give_up(reply, &why);
                        }
                    }
                    Outcome::Failed(why) => return self.give_up(reply, &why),
                },
            }
        }
    }

    fn give_up(&self, reply: &LiveReply, why: &str) {
        tracing::warn!(
            chat = reply.to().chat,
            "a reply could not be delivered: {why}"
        );
        reply.finish(Delivery::Failed(why.to_owned()));
    }

    async fn edit(&self, mut edit: Edit) {
        let mut attempts = 0;
        let result = loop {
            self.slot().await;
            let chat = self.chat();
            let result = if edit.keyboard_only {
                self.inner
                    .api
                    .edit_keyboard(chat, edit.message_id, edit.keyboard.clone())
                    .await
            } else if let Some(text) = &edit.text {
                let keyboard = edit
                    .keyboard
                    .clone()
                    .or_else(|| Some(InlineKeyboardMarkup::new(Vec::<Vec<_>>::new())));
                match self
                    .inner
                    .api
                    .edit_message_text(chat, edit.message_id, text, keyboard)
                    .await
                {
                    Err(ApiFailure::CantParseEntities(_)) if matches!(text, Text::Html(_)) => {
                        let html = match text {
                            Text::Html(html) | Text::Plain(html) => html,
                        };
                        let plain = Text::Plain(crate::render::strip_html(html));
                        self.ended();
                        edit.text = Some(plain);
                        continue;
                    }
                    other => other,
                }
            } else {
                Ok(())
            };
            self.ended();
            match result {
                Ok(()) | Err(ApiFailure::NotModified) => break Ok(()),
                Err(failure) => match self.after_failure(&failure, &mut attempts) {
                    Outcome::Again => continue,
                    Outcome::Failed(why) => {
                        tracing::debug!(chat, "an edit failed: {why}");
                        break Err(why);
                    }
                },
            }
        };
        if let Some(done) = edit.done.take() {
            let _ = done.send(result);
        }
    }
}
