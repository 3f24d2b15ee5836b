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
//! long, the chat (the topic the reply was for) is told the reply was
//! delayed. A part Telegram cannot parse is sent again as plain text. A
//! group that became a supergroup is followed to its new id.
//!
//! When the Bot API is unavailable — no answer, a 5xx, an answer that is
//! not JSON — the same request is tried again with a growing pause (1 s,
//! doubling up to 30 s, [`TRANSIENT_ATTEMPTS`] tries, about 90 s in all):
//! an edit that failed that way is tried again as an edit, never turned
//! into a second copy of the reply. Only a message Telegram says cannot
//! be edited (deleted, too old) is continued in a new one.
//!
//! A reply that finally could not be delivered is not only a log line
//! ([`Undelivered`]): `GET /health` lists it (so `crabup ps` and `doctor`
//! show the gateway degraded) until the chat was told, which happens
//! before the next thing sent there; and the agent is told with the next
//! message from that conversation that the person never saw its reply.

pub(crate) mod live;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crabtalk_kit::Problems;
use teloxide_core::types::InlineKeyboardMarkup;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::address::ChatAddress;
use crate::api::{Api, ApiFailure, Text};
use crate::state::chats::ChatBook;
use live::Shown;
pub(crate) use live::{Delivery, LiveReply, NotDelivered};

/// Between two messages or edits in a private chat.
pub(crate) const PRIVATE_GAP: Duration = Duration::from_millis(1000);
/// Between two messages or edits in a group.
pub(crate) const GROUP_GAP: Duration = Duration::from_millis(3000);
/// A flood-control pause at least this long is told to the chat.
pub(crate) const LONG_PAUSE: Duration = Duration::from_secs(10);
/// Attempts at a request while the Bot API is unavailable.
pub(crate) const TRANSIENT_ATTEMPTS: u32 = 8;
/// The longest pause between two of them.
const TRANSIENT_PAUSE_CAP: Duration = Duration::from_secs(30);
/// Attempts at continuing a reply in new messages when its messages
/// cannot be edited.
const EDIT_ATTEMPTS: u32 = 5;

/// A change to a message already shown.
pub(crate) struct Edit {
    pub message_id: i32,
    /// New text, if it changes.
    pub text: Option<Text>,
    /// The keyboard it should have (`None`: none). Only with `text` or
    /// `keyboard_only`.
    pub keyboard: Option<InlineKeyboardMarkup>,
    /// Change only the keyboard.
    pub keyboard_only: bool,
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
    /// A long pause the chat has not been told about yet, and the topic
    /// of the reply it held up.
    untold_pause: Option<(Duration, Option<i32>)>,
}

struct Lane {
    gap: Duration,
    state: parking_lot::Mutex<LaneState>,
    wake: Notify,
}

/// The lanes of every chat.
#[derive(Clone)]
pub(crate) struct Outbox {
    inner: Arc<Inner>,
}

struct Inner {
    api: Api,
    chats: Arc<ChatBook>,
    lanes: parking_lot::Mutex<HashMap<i64, Arc<Lane>>>,
    idle: Notify,
    problems: Problems,
    /// Replies that could not be delivered, by conversation (the chat's
    /// first id and topic).
    undelivered: parking_lot::Mutex<HashMap<ChatAddress, Undelivered>>,
}

/// A reply that could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Undelivered {
    /// When it was given up, `HH:MM:SS UTC`.
    pub at: String,
    pub why: String,
    /// The chat has been told.
    pub told_chat: bool,
    /// The agent has been told.
    pub told_agent: bool,
}

impl Outbox {
    pub(crate) fn new(api: Api, chats: Arc<ChatBook>, problems: Problems) -> Self {
        Self {
            inner: Arc::new(Inner {
                api,
                chats,
                lanes: parking_lot::Mutex::new(HashMap::new()),
                idle: Notify::new(),
                problems,
                undelivered: Default::default(),
            }),
        }
    }

    /// What to tell the agent with the next message from `conversation`
    /// (its chat's first id and topic): that its last reply never reached
    /// the chat, if so. Told once.
    pub(crate) fn undelivered_note(&self, conversation: ChatAddress) -> Option<String> {
        let mut undelivered = self.inner.undelivered.lock();
        let entry = undelivered.get_mut(&conversation)?;
        if entry.told_agent {
            return None;
        }
        entry.told_agent = true;
        let note = format!(
            "[note from the Telegram gateway: a reply to this chat could not be delivered at {} ({}); the person has not seen it]",
            entry.at, entry.why
        );
        if entry.told_chat {
            undelivered.remove(&conversation);
        }
        Some(note)
    }

    /// A reply that streams into `to`, queued behind what the chat has.
    pub(crate) fn live(&self, to: ChatAddress) -> Arc<LiveReply> {
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
    pub(crate) async fn send(
        &self,
        to: ChatAddress,
        markdown: &str,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<Vec<i32>, NotDelivered> {
        let reply = self.prepared(to, markdown, keyboard);
        reply.delivered().await
    }

    /// [`Outbox::send`] without waiting: the reply to wait on.
    pub(crate) fn prepared(
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
    pub(crate) fn prepared_html(
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
    pub(crate) fn edit(&self, chat: i64, edit: Edit) {
        let chat = self.inner.chats.current_chat(chat);
        self.enqueue(chat, Item::Edit(edit));
    }

    /// Whether `chat` is paused by flood control right now.
    pub(crate) fn is_paused(&self, chat: i64) -> bool {
        self.inner.lanes.lock().get(&chat).is_some_and(|lane| {
            lane.state
                .lock()
                .paused_until
                .is_some_and(|until| until > Instant::now())
        })
    }

    /// Waits until every lane is empty, at most `grace`; whether they are.
    pub(crate) async fn drain(&self, grace: Duration) -> bool {
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

impl Inner {
    /// Records that a reply to `to` could not be delivered.
    fn undelivered(&self, to: ChatAddress, why: &str) {
        let conversation = ChatAddress {
            chat: self.chats.conversation_chat(to.chat),
            ..to
        };
        self.undelivered.lock().insert(
            conversation,
            Undelivered {
                at: chrono::Utc::now().format("%H:%M:%S UTC").to_string(),
                why: why.to_owned(),
                told_chat: false,
                told_agent: false,
            },
        );
        self.report();
    }

    /// A conversation in `chat` (its current id) whose chat has not been
    /// told of an undelivered reply.
    fn untold_failure(&self, chat: i64) -> Option<ChatAddress> {
        self.undelivered
            .lock()
            .iter()
            .find(|(conversation, entry)| {
                !entry.told_chat && self.chats.current_chat(conversation.chat) == chat
            })
            .map(|(conversation, _)| *conversation)
    }

    fn chat_told(&self, conversation: ChatAddress) {
        {
            let mut undelivered = self.undelivered.lock();
            if let Some(entry) = undelivered.get_mut(&conversation) {
                entry.told_chat = true;
                if entry.told_agent {
                    undelivered.remove(&conversation);
                }
            }
        }
        self.report();
    }

    /// Lists the replies whose chats have not been told in the health
    /// problems.
    fn report(&self) {
        let undelivered = self.undelivered.lock();
        let mut untold: Vec<(&ChatAddress, &Undelivered)> =
            undelivered.iter().filter(|(_, e)| !e.told_chat).collect();
        untold.sort_by(|a, b| a.1.at.cmp(&b.1.at));
        let Some((last_chat, last)) = untold.last() else {
            self.problems.clear("delivery");
            return;
        };
        let chats: Vec<String> = untold.iter().map(|(c, _)| c.to_string()).collect();
        self.problems.set(
            "delivery",
            format!(
                "{} could not be delivered (chats {}); the last, to {last_chat} at {}: {}. \
                 Each chat is told before the next message sent there.",
                if untold.len() == 1 {
                    "a reply".to_owned()
                } else {
                    format!("{} replies", untold.len())
                },
                chats.join(", "),
                last.at,
                last.why
            ),
        );
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

    /// Waits for the chat's next slot; first tells the chat about a long
    /// pause, and about a reply that could not be delivered, if there was
    /// one (each notice takes a slot of its own; a notice that fails is
    /// not tried again before this item).
    async fn slot(&self) {
        let mut told_failure = false;
        loop {
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
            if let Some((pause, topic)) = untold {
                let to = ChatAddress {
                    chat: self.chat(),
                    topic,
                };
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
                continue;
            }
            if told_failure {
                return;
            }
            let Some(conversation) = self.inner.untold_failure(self.chat()) else {
                return;
            };
            told_failure = true;
            let to = ChatAddress {
                chat: self.chat(),
                topic: conversation.topic,
            };
            let notice = Text::Plain(
                "⚠️ An earlier reply could not be delivered: Telegram did not take it. The agent knows; ask again if you need it."
                    .into(),
            );
            let sent = self.inner.api.send_message(to, &notice, None).await;
            self.ended();
            match sent {
                Ok(_) => self.inner.chat_told(conversation),
                Err(err) => tracing::warn!(
                    chat = to.chat,
                    "cannot tell the chat about an undelivered reply: {err}"
                ),
            }
        }
    }

    fn ended(&self) {
        self.lane.state.lock().last_end = Some(Instant::now());
    }

    /// What a failure means for the request that got it.
    /// What to do after `failure` of a request for a reply to `topic`.
    fn after_failure(
        &self,
        failure: &ApiFailure,
        attempts: &mut u32,
        topic: Option<i32>,
    ) -> Outcome {
        match failure {
            ApiFailure::RetryAfter(wait) => {
                let mut state = self.lane.state.lock();
                state.paused_until = Some(Instant::now() + *wait);
                if *wait >= LONG_PAUSE {
                    state.untold_pause = Some((*wait, topic));
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
            ApiFailure::Unavailable(_) if *attempts + 1 < TRANSIENT_ATTEMPTS => {
                let pause =
                    Duration::from_secs(1u64 << (*attempts).min(10)).min(TRANSIENT_PAUSE_CAP);
                *attempts += 1;
                let mut state = self.lane.state.lock();
                state.paused_until = Some(Instant::now() + pause);
                tracing::warn!(
                    chat = state.chat,
                    "{failure}; trying again in {} s (attempt {} of {TRANSIENT_ATTEMPTS})",
                    pause.as_secs(),
                    *attempts + 1
                );
                Outcome::Again
            }
            other => Outcome::Failed(other.to_string()),
        }
    }

    async fn live(&self, reply: &Arc<LiveReply>) {
        let mut attempts = 0;
        let mut edit_refusals = 0;
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
                                Err(err) => match self.after_failure(&err, &mut attempts, to.topic)
                                {
                                    Outcome::Failed(why) => return self.give_up(reply, &why),
                                    _ => continue,
                                },
                            }
                        }
                    }
                }
                Err(failure) => match self.after_failure(&failure, &mut attempts, to.topic) {
                    Outcome::Again => {}
                    Outcome::Failed(why)
                        if shown.get(index).is_some() && !failure.is_transient() =>
                    {
                        // Telegram says the message cannot be edited
                        // (deleted, too old): the rest goes in new
                        // messages. An edit that failed for want of an
                        // answer is never taken for this: the message may
                        // well show the text, and a copy would duplicate it.
                        tracing::warn!(
                            chat = to.chat,
                            "cannot edit a reply ({why}); continuing in a new message"
                        );
                        reply.forget_shown_from(index);
                        edit_refusals += 1;
                        if edit_refusals >= EDIT_ATTEMPTS {
                            return self.give_up(reply, &why);
                        }
                    }
                    Outcome::Failed(why) => return self.give_up(reply, &why),
                },
            }
        }
    }

    fn give_up(&self, reply: &LiveReply, why: &str) {
        let to = reply.to();
        tracing::warn!(
            chat = to.chat,
            "a reply could not be delivered: {why}; the chat is told before the next message \
             sent there, the agent with the chat's next message"
        );
        self.inner.undelivered(to, why);
        reply.finish(Delivery::Failed(why.to_owned()));
    }

    async fn edit(&self, mut edit: Edit) {
        let mut attempts = 0;
        loop {
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
                Ok(()) | Err(ApiFailure::NotModified) => return,
                Err(failure) => match self.after_failure(&failure, &mut attempts, None) {
                    Outcome::Again => continue,
                    Outcome::Failed(why) => {
                        return tracing::debug!(chat, "an edit failed: {why}");
                    }
                },
            }
        }
    }
}
