//! `ask_user` as inline keyboards.
//!
//! The questions of one call are shown one at a time, each as a message
//! with a button per option and "✍️ Other…":
//!
//! - single choice: a press answers;
//! - multiple choice: a press toggles a ✅ mark; "Done" answers with the
//!   marked options;
//! - "Other…": the next text message in the conversation is the answer.
//!
//! Every button press is answered (`answerCallbackQuery`), also one for a
//! question that is no longer open (it says so, and its keyboard is
//! removed). When every question has an answer, one `ReplyToAsk` carries
//! them all (one question: the answer; several: a `question: answer`
//! line each, as the terminal client does). When the agent stops waiting
//! (its `ask_user` call ends: a timeout) or the turn ends (`/stop`), the
//! keyboard is cleared — also when that happens while the question still
//! waits in the chat's lane (flood control): its keyboard is removed as
//! soon as Telegram shows it.
//!
//! Button data is `a:<ask>:<question>:<option|o|d>`, well within
//! Telegram's 64 bytes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crabtalk_proto::msg::{AskQuestion, ReplyToAsk};
use teloxide_core::types::{InlineKeyboardButton, InlineKeyboardMarkup};

use super::{Conversation, Gateway};
use crate::api::Text;
use crate::api::update::CallbackQuery;
use crate::outbox::Edit;
use crate::render::escape;

/// One open `ask_user` call.
struct Ask {
    conversation: Conversation,
    run_id: Option<u64>,
    call_id: String,
    questions: Vec<AskQuestion>,
    current: usize,
    answers: Vec<String>,
    /// Marks of the current multiple-choice question.
    ticked: Vec<bool>,
    /// The current question's message, once shown.
    message_id: Option<i32>,
    /// The next text message answers the current question.
    awaiting_text: bool,
}

/// The open questions of the gateway.
#[derive(Default)]
pub(crate) struct Asks {
    next: AtomicU32,
    open: parking_lot::Mutex<HashMap<u32, Ask>>,
}

/// What a button press asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Press {
    Option(usize),
    Other,
    Done,
}

fn parse_data(data: &str) -> Option<(u32, usize, Press)> {
    let mut fields = data.strip_prefix("a:")?.split(':');
    let ask = fields.next()?.parse().ok()?;
    let question = fields.next()?.parse().ok()?;
    let press = match fields.next()? {
        "o" => Press::Other,
        "d" => Press::Done,
        n => Press::Option(n.parse().ok()?),
    };
    fields.next().is_none().then_some((ask, question, press))
}

impl Asks {
    /// Shows the questions of call `call_id` in `conversation`.
    pub(crate) fn open(
        &self,
        gateway: &Arc<Gateway>,
        conversation: Conversation,
        run_id: Option<u64>,
        call_id: String,
        questions: Vec<AskQuestion>,
    ) {
        if questions.is_empty() {
            return;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let ask = Ask {
            conversation,
            run_id,
            call_id,
            ticked: vec![false; questions[0].options.len()],
            answers: Vec::new(),
            questions,
            current: 0,
            message_id: None,
            awaiting_text: false,
        };
        self.open.lock().insert(id, ask);
        self.show(gateway, id);
    }

    /// Sends the current question of ask `id`.
    fn show(&self, gateway: &Arc<Gateway>, id: u32) {
        let Some((address, html, keyboard, question)) = self.open.lock().get(&id).map(|ask| {
            (
                ask.conversation.address,
                ask.question_html(),
                ask.keyboard(id),
                ask.current,
            )
        }) else {
            return;
        };
        let reply = gateway.outbox.prepared_html(address, html, keyboard);
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let ids = match reply.delivered().await {
                Ok(ids) => ids,
                Err(err) => return tracing::warn!("a question could not be shown: {err}"),
            };
            let Some(message_id) = ids.last().copied() else {
                return;
            };
            let mut open = gateway.asks.open.lock();
            match open.get_mut(&id) {
                Some(ask) if ask.current == question => ask.message_id = Some(message_id),
                _ => {
                    // Closed (a timeout, /stop) while Telegram held the
                    // message back (flood control): its buttons lead
                    // nowhere, so they go.
                    drop(open);
                    tracing::info!(chat = %address, "a question closed before it was shown; removing its keyboard");
                    gateway.outbox.edit(
                        address.chat,
                        Edit {
                            message_id,
                            text: None,
                            keyboard: None,
                            keyboard_only: true,
                        },
                    );
                }
            }
        });
    }

    /// A button was pressed.
    pub(crate) async fn callback(&self, gateway: &Arc<Gateway>, query: &CallbackQuery) {
        let data = query.data.as_deref().unwrap_or_default();
        let message = query.regular_message();
        let outcome = match parse_data(data) {
            Some((id, question, press)) => self.press(gateway, id, question, press),
            None => Pressed::Stale,
        };
        let notice = match &outcome {
            Pressed::Stale => Some("This question is no longer open."),
            Pressed::PickFirst => Some("Mark at least one option, or choose Other…"),
            Pressed::TypeAnswer => Some("Type your answer as a message."),
            Pressed::Ok => None,
        };
        if let Err(err) = gateway.api.answer_callback(&query.id, notice).await {
            tracing::warn!("cannot answer a button press: {err}");
        }
        if matches!(outcome, Pressed::Stale) {
            tracing::info!(
                data,
                "a button of a question that is no longer open was pressed; removing its keyboard"
            );
            if let Some(message) = message {
                gateway.outbox.edit(
                    message.chat.id,
                    Edit {
                        message_id: message.message_id,
                        text: None,
                        keyboard: None,
                        keyboard_only: true,
                    },
                );
            }
        }
    }

    fn press(&self, gateway: &Arc<Gateway>, id: u32, question: usize, press: Press) -> Pressed {
        let mut open = self.open.lock();
        let Some(ask) = open.get_mut(&id) else {
            return Pressed::Stale;
        };
        if ask.current != question {
            return Pressed::Stale;
        }
        let q = &ask.questions[ask.current];
        let answer = match press {
            Press::Option(index) if index < q.options.len() => {
                if q.multi_select {
                    ask.ticked[index] = !ask.ticked[index];
                    if let Some(message_id) = ask.message_id {
                        gateway.outbox.edit(
                            ask.conversation.address.chat,
                            Edit {
                                message_id,
                                text: None,
                                keyboard: Some(ask.keyboard(id)),
                                keyboard_only: true,
                            },
                        );
                    }
                    return Pressed::Ok;
                }
                q.options[index].label.clone()
            }
            Press::Option(_) => return Pressed::Stale,
            Press::Done => {
                let chosen: Vec<String> = q
                    .options
                    .iter()
                    .zip(&ask.ticked)
                    .filter(|(_, ticked)| **ticked)
                    .map(|(option, _)| option.label.clone())
                    .collect();
                if chosen.is_empty() {
                    return Pressed::PickFirst;
                }
                chosen.join(", ")
            }
            Press::Other => {
                ask.awaiting_text = true;
                if let Some(message_id) = ask.message_id {
                    let html = format!(
                        "{}\n\n<i>✍️ Type your answer as a message.</i>",
                        ask.question_html()
                    );
                    gateway.outbox.edit(
                        ask.conversation.address.chat,
                        Edit {
                            message_id,
                            text: Some(Text::Html(html)),
                            keyboard: None,
                            keyboard_only: false,
                        },
                    );
                }
                return Pressed::TypeAnswer;
            }
        };
        drop(open);
        self.answered(gateway, id, answer);
        Pressed::Ok
    }

    /// A text message in `conversation`: the answer, if a question waits
    /// for one. Whether it was taken.
    pub(crate) fn text(&self, gateway: &Arc<Gateway>, sender: &str, text: &str) -> bool {
        let id = self
            .open
            .lock()
            .iter()
            .find(|(_, ask)| ask.awaiting_text && ask.conversation.sender() == sender)
            .map(|(id, _)| *id);
        let Some(id) = id else {
            return false;
        };
        self.answered(gateway, id, text.trim().to_owned());
        true
    }

    /// The current question of `id` is answered: record it, show the next
    /// or reply to the daemon.
    fn answered(&self, gateway: &Arc<Gateway>, id: u32, answer: String) {
        let mut open = self.open.lock();
        let Some(ask) = open.get_mut(&id) else {
            return;
        };
        if let Some(message_id) = ask.message_id {
            let html = format!("{}\n→ <b>{}</b>", ask.question_html(), escape(&answer));
            gateway.outbox.edit(
                ask.conversation.address.chat,
                Edit {
                    message_id,
                    text: Some(Text::Html(html)),
                    keyboard: None,
                    keyboard_only: false,
                },
            );
        }
        ask.answers.push(answer);
        ask.awaiting_text = false;
        ask.message_id = None;
        ask.current += 1;
        if ask.current < ask.questions.len() {
            ask.ticked = vec![false; ask.questions[ask.current].options.len()];
            drop(open);
            self.show(gateway, id);
            return;
        }
        let ask = open.remove(&id).expect("present above");
        drop(open);
        let reply = ReplyToAsk {
            agent: ask.conversation.agent.clone(),
            sender: ask.conversation.sender(),
            content: ask.reply(),
            call_id: ask.call_id.clone(),
        };
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let sent = match gateway.daemon.current() {
                Some(client) => client
                    .reply_to_ask(reply)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string()),
                None => Err("the daemon is not reachable".into()),
            };
            if let Err(err) = sent {
                tracing::warn!("the answer could not be passed on: {err}");
                let _ = gateway.outbox.prepared(
                    ask.conversation.address,
                    &format!("⚠️ Your answer did not reach the agent: {err}"),
                    None,
                );
            }
        });
    }

    /// The agent's call `call_id` ended (it stopped waiting).
    pub(crate) fn tool_result(&self, gateway: &Gateway, call_id: &str, why: &str) {
        let id = self
            .open
            .lock()
            .iter()
            .find(|(_, ask)| ask.call_id == call_id)
            .map(|(id, _)| *id);
        if let Some(id) = id {
            self.close(gateway, id, why);
        }
    }

    /// Closes every question of run `run_id`.
    pub(crate) fn close_run(&self, gateway: &Gateway, run_id: Option<u64>, why: &str) {
        let Some(run_id) = run_id else { return };
        let ids: Vec<u32> = self
            .open
            .lock()
            .iter()
            .filter(|(_, ask)| ask.run_id == Some(run_id))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.close(gateway, id, why);
        }
    }

    fn close(&self, gateway: &Gateway, id: u32, why: &str) {
        let Some(ask) = self.open.lock().remove(&id) else {
            return;
        };
        tracing::info!(chat = %ask.conversation.address, "a question closed unanswered: {why}");
        if let Some(message_id) = ask.message_id {
            let html = format!("{}\n<i>{}</i>", ask.question_html(), escape(why));
            gateway.outbox.edit(
                ask.conversation.address.chat,
                Edit {
                    message_id,
                    text: Some(Text::Html(html)),
                    keyboard: None,
                    keyboard_only: false,
                },
            );
        }
    }
}

enum Pressed {
    Ok,
    Stale,
    PickFirst,
    TypeAnswer,
}

impl Ask {
    fn question_html(&self) -> String {
        let q = &self.questions[self.current];
        let mut html = String::new();
        if self.questions.len() > 1 {
            html.push_str(&format!("({}/{}) ", self.current + 1, self.questions.len()));
        }
        if !q.header.trim().is_empty() {
            html.push_str(&format!("<b>{}</b>\n", escape(q.header.trim())));
        }
        html.push_str(&escape(q.question.trim()));
        for option in q
            .options
            .iter()
            .filter(|o| !o.description.trim().is_empty())
        {
            html.push_str(&format!(
                "\n• <b>{}</b> — {}",
                escape(option.label.trim()),
                escape(option.description.trim())
            ));
        }
        if q.multi_select {
            html.push_str("\n<i>Mark any, then Done.</i>");
        }
        html
    }

    fn keyboard(&self, id: u32) -> InlineKeyboardMarkup {
        let q = &self.questions[self.current];
        let mut rows: Vec<Vec<InlineKeyboardButton>> = q
            .options
            .iter()
            .enumerate()
            .map(|(index, option)| {
                let label = if q.multi_select {
                    let mark = if self.ticked.get(index).copied().unwrap_or(false) {
                        "✅"
                    } else {
                        "▫️"
                    };
                    format!("{mark} {}", option.label)
                } else {
                    option.label.clone()
                };
                vec![InlineKeyboardButton::callback(
                    label,
                    format!("a:{id}:{}:{index}", self.current),
                )]
            })
            .collect();
        rows.push(vec![InlineKeyboardButton::callback(
            "✍️ Other…",
            format!("a:{id}:{}:o", self.current),
        )]);
        if q.multi_select {
            rows.push(vec![InlineKeyboardButton::callback(
                "Done",
                format!("a:{id}:{}:d", self.current),
            )]);
        }
        InlineKeyboardMarkup::new(rows)
    }

    /// The `ReplyToAsk` content.
    fn reply(&self) -> String {
        if let [only] = self.answers.as_slice() {
            return only.clone();
        }
        self.questions
            .iter()
            .zip(&self.answers)
            .map(|(q, answer)| {
                let label = if q.header.trim().is_empty() {
                    &q.question
                } else {
                    &q.header
                };
                format!("{}: {answer}", label.trim())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_data_parses_and_junk_does_not() {
        assert_eq!(parse_data("a:3:0:2"), Some((3, 0, Press::Option(2))));
        assert_eq!(parse_data("a:3:1:o"), Some((3, 1, Press::Other)));
        assert_eq!(parse_data("a:3:1:d"), Some((3, 1, Press::Done)));
        for junk in [
            "",
            "a:",
            "a:x:0:1",
            "a:1:0",
            "a:1:0:1:2",
            "b:1:0:1",
            "a:1:0:z",
        ] {
            assert_eq!(parse_data(junk), None, "{junk}");
        }
    }
}
