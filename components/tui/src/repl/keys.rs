//! What the keys do: editing and submitting, queueing while a turn runs,
//! Ctrl-C (stop the turn, give the queue back, quit), and an `ask_user`
//! form taking the keys until it is answered.

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind};

use super::own_turn::OwnTurn;
use super::{Flow, Repl, is_ctrl_c};
use crate::ask::{AskOutcome, CANCELLED};
use crate::input::editor::EditorAction;
use crate::slash_commands::{self, Input};
use crate::text::{Line, Style};

impl Repl {
    /// Sends queued inputs while nothing runs and the daemon is there.
    pub(super) async fn drain_queue(&mut self) -> Flow {
        while !self.busy() && self.connected() {
            let Some(input) = self.queue.pop_front() else {
                break;
            };
            if self.submit(input).await == Flow::Quit {
                return Flow::Quit;
            }
        }
        Flow::Continue
    }

    pub(super) async fn terminal_event(&mut self, event: TermEvent) -> Flow {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.key(key).await,
            TermEvent::Paste(text) => {
                if self.turn.as_mut().and_then(OwnTurn::form).is_none() {
                    self.editor.insert(&text);
                }
                Flow::Continue
            }
            _ => Flow::Continue,
        }
    }

    pub(super) async fn key(&mut self, key: KeyEvent) -> Flow {
        let ctrl_c = is_ctrl_c(&key);
        if !ctrl_c {
            self.quit_armed = false;
            self.notice = None;
        }
        if self.busy() {
            if ctrl_c {
                self.interrupt_turn().await;
                return Flow::Continue;
            }
            if self.turn.as_mut().and_then(OwnTurn::form).is_some() {
                self.form_key(key).await;
                return Flow::Continue;
            }
        }
        if key.code == KeyCode::Tab {
            // Agents and skills created since the last look complete too.
            self.refresh_completion().await;
        }
        let action = self.editor.key(key, &self.history, &self.completer);
        match action {
            EditorAction::None | EditorAction::Redraw => {}
            EditorAction::ClearScreen => {
                let _ = self.terminal.clear_screen();
            }
            EditorAction::Interrupt if self.quit_armed => return Flow::Quit,
            EditorAction::Interrupt => {
                self.quit_armed = true;
                self.notice = Some("Press Ctrl-C again or Ctrl-D to quit.".into());
            }
            EditorAction::Eof if self.busy() => {
                self.notice = Some("A turn is running: Ctrl-C stops it, then Ctrl-D quits.".into());
            }
            EditorAction::Eof => return Flow::Quit,
            EditorAction::Submit(text) => {
                if text.trim().is_empty() {
                    return Flow::Continue;
                }
                if let Err(err) = self.history.add(&text) {
                    self.error(&format!("cannot save the input history: {err}"));
                }
                if self.busy() || !self.connected() || !self.queue.is_empty() {
                    self.queue.push_back(text);
                } else {
                    return self.submit(text).await;
                }
            }
        }
        Flow::Continue
    }

    /// Ctrl-C during a turn: kill it; a second one stops waiting for it.
    pub(super) async fn interrupt_turn(&mut self) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.killed {
            // The daemon did not end the turn: stop waiting.
            let frame = turn.view.close();
            self.print(&frame.commit);
            self.error("stopped waiting for the turn to end");
            self.end_turn();
            return;
        }
        turn.killed = true;
        // Open questions need no answer of their own: the kill withdraws
        // them, and the daemon closes each call as cancelled. Answering
        // "cancelled" first would let the agent start another model call
        // before the kill lands.
        turn.forms.clear();
        if let Err(err) = self.session.client.kill(self.session.kill_msg()).await {
            self.client_error(err).await;
        }
    }

    pub(super) async fn form_key(&mut self, key: KeyEvent) {
        let width = self.width();
        let Some(turn) = &mut self.turn else {
            return;
        };
        let Some(form) = turn.forms.front_mut() else {
            return;
        };
        let reply = match form.key(key) {
            AskOutcome::Pending => None,
            AskOutcome::Answered(answer) => Some((answer, form.summary(width))),
            AskOutcome::Cancelled => Some((
                CANCELLED.to_owned(),
                vec![Line::styled(
                    "? dismissed: answered \"cancelled\"",
                    Style::PLAIN.dim(),
                )],
            )),
        };
        let Some((answer, summary)) = reply else {
            return;
        };
        let call_id = form.call_id().to_owned();
        turn.forms.pop_front();
        self.print(&summary);
        let reply = self.session.reply(&call_id, &answer);
        if let Err(err) = self.session.client.reply_to_ask(reply).await {
            self.error(&format!("the answer did not reach the agent: {err}"));
        }
    }

    /// Runs one input: a message starts a turn, a command runs.
    pub(super) async fn submit(&mut self, text: String) -> Flow {
        let parsed = match slash_commands::parse(&text) {
            Ok(parsed) => parsed,
            Err(usage) => {
                self.echo(&text);
                self.error(&usage.to_string());
                return Flow::Continue;
            }
        };
        self.echo(&text);
        match parsed {
            Input::Empty => Flow::Continue,
            Input::Message(message) => {
                let request = self.session.message(&message);
                self.start_turn(request, &text).await;
                Flow::Continue
            }
            Input::Command(command) => self.command(command, &text).await,
        }
    }

    /// Puts a message the daemon did not take back into the input line.
    pub(super) fn give_back(&mut self, input: &str) {
        if self.editor.is_empty() {
            self.editor.set_text(input);
            self.info("(your message is back in the input)");
        }
    }
}
