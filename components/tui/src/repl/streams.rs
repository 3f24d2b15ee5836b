//! The turn this chat runs, streamed as it comes, and the turns other
//! clients run in the same conversation (`follow`).

use crabtalk_proto::ClientError;
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;

use super::Repl;
use super::own_turn::OwnTurn;
use crate::ask::AskForm;
use crate::render::stream::Layout;
use crate::render::turn::TurnView;

impl Repl {
    /// Sends a turn; `input` is what the person typed, kept until the daemon
    /// acknowledges the turn.
    pub(super) async fn start_turn(&mut self, request: StreamMsg, input: &str) {
        let layout = self.layout();
        let view = TurnView::new(layout, self.tools.len() + 1, &self.session.agent);
        match self.session.client.stream(request).await {
            Ok(stream) => {
                self.follow.own_turn_sent();
                self.turn = Some(OwnTurn::new(stream, view, input));
            }
            Err(ClientError::Closed { .. }) => {
                self.queue.push_front(input.to_owned());
                self.info("not sent: the connection to the daemon is lost; it is sent again once the daemon is back");
                self.lost();
            }
            Err(err) => {
                self.client_error(err).await;
                self.give_back(input);
            }
        }
    }

    pub(super) async fn turn_event(&mut self, event: Option<Result<StreamEvent, ClientError>>) {
        let layout = self.layout();
        let first_tool = self.tools.len() + 1;
        let event = match event {
            Some(Ok(event)) => event,
            None => {
                if let Some(turn) = &mut self.turn {
                    let frame = turn.view.close();
                    self.print(&frame.commit);
                }
                self.error("the turn ended without its end: the daemon stopped answering it");
                self.end_turn();
                return;
            }
            Some(Err(err)) => return self.turn_failed(err).await,
        };
        let Some(event) = event.event else { return };
        let Some(turn) = &mut self.turn else { return };
        turn.acknowledged = true;
        turn.view.set_layout(Layout {
            width: layout.width,
            max_live: turn.view_budget(layout),
        });
        let frame = turn.view.event(&event);
        if let Event::AskUser(ask) = &event
            && !turn.killed
        {
            turn.forms.push_back(AskForm::new(ask));
        }
        self.print(&frame.commit);
        match &event {
            Event::Start(start) => {
                let released = self
                    .follow
                    .own_turn_started(start.run_id, layout, first_tool);
                self.print(&released.commit);
            }
            Event::End(_) => self.end_turn(),
            _ => {}
        }
    }

    /// The turn's stream failed.
    pub(super) async fn turn_failed(&mut self, err: ClientError) {
        let Some(mut turn) = self.turn.take() else {
            return;
        };
        let frame = turn.view.close();
        self.print(&frame.commit);
        self.tools.extend(turn.view.into_records());
        let layout = self.layout();
        let released = self.follow.own_turn_ended(layout, self.tools.len() + 1);
        self.print(&released.commit);
        if matches!(err, ClientError::Closed { .. }) {
            if turn.acknowledged {
                self.error("the connection to the daemon was lost during the turn; the daemon finishes it on its own, and its end is in the conversation");
            } else {
                self.queue.push_front(turn.input);
                self.info("the daemon did not take the message before the connection was lost; it is sent again once the daemon is back");
            }
            self.lost();
            return;
        }
        let acknowledged = turn.acknowledged;
        self.client_error(err).await;
        if !acknowledged {
            self.give_back(&turn.input);
        }
    }

    /// The turn is over: keep its tool calls; after a kill, what was queued
    /// goes back to the input line rather than out.
    pub(super) fn end_turn(&mut self) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        self.tools.extend(turn.view.into_records());
        let layout = self.layout();
        let released = self.follow.own_turn_ended(layout, self.tools.len() + 1);
        self.print(&released.commit);
        if turn.killed && !self.queue.is_empty() {
            let mut inputs: Vec<String> = self.queue.drain(..).collect();
            if !self.editor.is_empty() {
                inputs.push(self.editor.text().to_owned());
            }
            self.editor.set_text(&inputs.join("\n"));
            self.info("the turn was stopped: what you queued is back in the input");
        }
    }

    pub(super) fn follow_event(&mut self, event: Option<Result<AgentEventMsg, ClientError>>) {
        match event {
            Some(Ok(event)) => {
                let layout = self.layout();
                let frame = self.follow.event(&event, layout, self.tools.len() + 1);
                self.print(&frame.commit);
                let records = self.follow.take_records();
                self.tools.extend(records);
            }
            // A daemon without subscriptions: nothing to follow.
            Some(Err(err)) if err.code() == Some(ErrorMsg::NOT_IMPLEMENTED) => self.events = None,
            // The subscription ends when the daemon shuts down (or the
            // connection goes).
            Some(Err(_)) | None => self.lost(),
        }
    }
}
