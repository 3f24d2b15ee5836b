//! Turns that other clients run in the conversation on screen.
//!
//! The chat subscribes to the daemon's events and keeps those of its own
//! conversation (agent and sender). A turn another client started — a
//! `crabtalk-tui -p` in another terminal, a second chat — is drawn as it
//! streams, like one's own, under a line that says where it comes from.
//!
//! The chat's own turns come back through the subscription too; they are
//! told apart by their run id, which the turn's `StreamStart` carries.
//! Between sending a message and its `StreamStart`, events of turns not seen
//! before are held back, then shown or dropped once the own run id is known.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::{AgentEventKind, AgentEventMsg, StreamStart};

use crate::events::as_stream_event;
use crate::render::history::user_lines;
use crate::render::stream::{Frame, Layout};
use crate::render::tool::ToolRecord;
use crate::render::turn::TurnView;
use crate::text::{Line, Style, truncate};

/// Other clients' turns in one conversation.
#[derive(Default)]
pub(super) struct Follow {
    agent: String,
    sender: String,
    /// Run ids of this chat's own turns.
    own: HashSet<u64>,
    /// An own turn was sent and its run id is not known yet.
    awaiting_own: bool,
    /// The own turn started without saying its run id (an older daemon).
    own_unknown: bool,
    /// Events held while an own run id is awaited.
    held: Vec<AgentEventMsg>,
    /// Turns of other clients being drawn, by run id.
    others: BTreeMap<u64, TurnView>,
    /// Runs of other clients seen already (shown even while one's own
    /// run id is awaited).
    seen: HashSet<u64>,
    /// Tool calls of other clients' finished turns, for `/expand`.
    finished: Vec<ToolRecord>,
}

impl Follow {
    /// Follows the conversation of `agent` with `sender` (forgetting
    /// another one's turns).
    pub(super) fn retarget(&mut self, agent: &str, sender: &str) {
        *self = Self {
            agent: agent.to_owned(),
            sender: sender.to_owned(),
            own: std::mem::take(&mut self.own),
            ..Self::default()
        };
    }

    /// An own turn was sent: hold back turns not seen before until its run
    /// id is known.
    pub(super) fn own_turn_sent(&mut self) {
        self.awaiting_own = true;
    }

    /// The own turn's run id is `run_id` (0 from a daemon that does not
    /// say): what was held back is shown or dropped now.
    pub(super) fn own_turn_started(
        &mut self,
        run_id: u64,
        layout: Layout,
        first_tool: usize,
    ) -> Frame {
        if run_id == 0 {
            // A daemon that does not say its run id: turns on one
            // conversation run one at a time, so what is held until the own
            // turn ends is the own turn.
            self.own_unknown = true;
            return Frame::default();
        }
        self.own.insert(run_id);
        self.release(run_id, layout, first_tool)
    }

    /// The own turn ended (or never started): nothing is held back any
    /// more.
    pub(super) fn own_turn_ended(&mut self, layout: Layout, first_tool: usize) -> Frame {
        if std::mem::take(&mut self.own_unknown) {
            self.awaiting_own = false;
            let held = std::mem::take(&mut self.held);
            self.own.extend(held.iter().map(|event| event.run_id));
            return Frame::default();
        }
        self.release(0, layout, first_tool)
    }

    fn release(&mut self, own: u64, layout: Layout, first_tool: usize) -> Frame {
        self.awaiting_own = false;
        let held = std::mem::take(&mut self.held);
        let mut frame = Frame::default();
        for event in held.iter().filter(|event| event.run_id != own) {
            frame = frame.then(self.event(event, layout, first_tool));
        }
        frame
    }

    /// Whether `event` is about the conversation followed.
    fn concerns(&self, event: &AgentEventMsg) -> bool {
        let agent = if event.conversation_agent.is_empty() {
            &event.agent
        } else {
            &event.conversation_agent
        };
        *agent == self.agent && event.sender == self.sender
    }

    /// Takes one event of the daemon's stream; what to draw.
    pub(super) fn event(
        &mut self,
        event: &AgentEventMsg,
        layout: Layout,
        first_tool: usize,
    ) -> Frame {
        if !self.concerns(event) || self.own.contains(&event.run_id) {
            return Frame::default();
        }
        let run = event.run_id;
        if self.awaiting_own && !self.others.contains_key(&run) && !self.seen.contains(&run) {
            self.held.push(event.clone());
            return Frame::default();
        }
        let kind = AgentEventKind::try_from(event.kind).ok();
        let mut frame = Frame::default();
        if !self.others.contains_key(&run) {
            if kind == Some(AgentEventKind::Done) {
                // The end of a turn whose start was missed: nothing to draw.
                return frame;
            }
            self.seen.insert(run);
            let mut view = TurnView::new(layout, first_tool, &self.agent);
            frame.commit.push(Line::blank());
            frame.commit.push(Line::styled(
                truncate(
                    &format!("↪ from another client, as {}", self.sender),
                    layout.width,
                )
                .into_owned(),
                Style::PLAIN.dim(),
            ));
            if kind == Some(AgentEventKind::UserMessage) {
                frame
                    .commit
                    .extend(user_lines(&event.content, layout.width));
            }
            let start = Event::Start(StreamStart {
                agent: event.agent.clone(),
                run_id: run,
            });
            frame = frame.then(view.event(&start));
            self.others.insert(run, view);
            if kind == Some(AgentEventKind::UserMessage) {
                return frame;
            }
        }
        let Some(stream_event) = as_stream_event(event) else {
            return frame;
        };
        let view = self.others.get_mut(&run).expect("inserted above");
        view.set_layout(layout);
        frame = frame.then(view.event(&stream_event));
        if matches!(stream_event, Event::End(_))
            && let Some(view) = self.others.remove(&run)
        {
            self.finished.extend(view.into_records());
        }
        frame
    }

    /// The live tails of other clients' turns, as of `now`.
    pub(super) fn live(&self, now: Instant) -> Vec<Line> {
        self.others
            .values()
            .flat_map(|view| view.live(now))
            .collect()
    }

    /// Whether a tool of another client's turn is running.
    pub(super) fn is_running(&self) -> bool {
        self.others.values().any(TurnView::is_running)
    }

    /// Tool calls of other clients' turns that ended since the last call.
    pub(super) fn take_records(&mut self) -> Vec<ToolRecord> {
        std::mem::take(&mut self.finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::styled::plain_lines;

    const LAYOUT: Layout = Layout {
        width: 60,
        max_live: 5,
    };

    fn event(run_id: u64, kind: AgentEventKind, content: &str) -> AgentEventMsg {
        AgentEventMsg {
            agent: "crab".into(),
            conversation_agent: "crab".into(),
            sender: "tester".into(),
            kind: kind as i32,
            content: content.into(),
            run_id,
            ..Default::default()
        }
    }

    fn feed(follow: &mut Follow, events: &[AgentEventMsg]) -> String {
        let mut lines = Vec::new();
        for event in events {
            lines.extend(follow.event(event, LAYOUT, 1).commit);
        }
        plain_lines(&lines)
    }

    #[test]
    fn another_client_s_turn_is_drawn_under_where_it_comes_from() {
        let mut follow = Follow::default();
        follow.retarget("crab", "tester");
        let text = feed(
            &mut follow,
            &[
                event(5, AgentEventKind::UserMessage, "what time is it?"),
                event(5, AgentEventKind::TextStart, ""),
                event(5, AgentEventKind::TextDelta, "Noon.\n\n"),
                event(5, AgentEventKind::TextEnd, ""),
                event(5, AgentEventKind::Done, ""),
            ],
        );
        assert_eq!(
            text,
            "\n↪ from another client, as tester\n› what time is it?\n● crab\nNoon.\n"
        );
        // Another conversation's events are not shown.
        let mut other = event(6, AgentEventKind::UserMessage, "hi");
        other.sender = "someone".into();
        assert_eq!(feed(&mut follow, &[other]), "");
    }

    #[test]
    fn one_s_own_turn_is_not_drawn_twice() {
        let mut follow = Follow::default();
        follow.retarget("crab", "tester");
        follow.own_turn_sent();
        // Held until the own run id is known…
        assert_eq!(
            feed(
                &mut follow,
                &[event(9, AgentEventKind::UserMessage, "mine")]
            ),
            ""
        );
        // …then dropped, since it is the own turn.
        let frame = follow.own_turn_started(9, LAYOUT, 1);
        assert!(frame.commit.is_empty());
        assert_eq!(
            feed(&mut follow, &[event(9, AgentEventKind::TextDelta, "reply")]),
            ""
        );
        // A turn held back that is someone else's is shown on release.
        follow.own_turn_sent();
        feed(
            &mut follow,
            &[event(10, AgentEventKind::UserMessage, "theirs")],
        );
        let frame = follow.own_turn_started(11, LAYOUT, 1);
        assert!(plain_lines(&frame.commit).contains("› theirs"));
    }
}
