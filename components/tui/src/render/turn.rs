//! A turn's events, in order, as lines for the screen.
//!
//! [`TurnView`] takes every [`Event`] of a streamed turn and answers with a
//! [`Frame`]: lines that are final and the live tail. The reply opens with
//! the name of the agent who speaks (marked as a guest in another agent's
//! conversation). Text is Markdown, thinking is dimmed; a tool call stays in
//! the live tail while it runs, with a spinner and the time it has taken
//! ([`TurnView::running_lines`]), and is printed with its result when that
//! arrives. The turn closes with its usage (or its error). The view knows
//! nothing of terminals, so tests feed it events and read lines.

use std::time::{Duration, Instant};

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::{StreamEnd, TokenUsage, ToolCallInfo, ToolResultEvent};

use super::stream::{Frame, Layout, MarkdownStream, TextStream};
use super::tool::ToolRecord;
use crate::text::{Color, Line, Span, Style, sanitize, truncate};

/// What kind of output came last, to separate kinds by a blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Text,
    Thinking,
    Tools,
    Note,
}

/// The frames of the spinner shown beside a running tool.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// How often the spinner moves (the REPL redraws at this pace while a tool
/// runs).
pub(crate) const SPINNER_STEP: Duration = Duration::from_millis(100);

/// One turn on the screen.
pub(crate) struct TurnView {
    layout: Layout,
    /// The agent whose conversation this is: a reply by anyone else is a
    /// guest's.
    host: String,
    text: Option<MarkdownStream>,
    thinking: Option<TextStream>,
    section: Option<Section>,
    live: Vec<Line>,
    records: Vec<ToolRecord>,
    /// Calls without a result yet: their record's index, and when they
    /// started.
    running: Vec<(usize, Instant)>,
    next_number: usize,
    context: Option<TokenUsage>,
    /// The whole reply text, for callers that want it.
    reply: String,
}

impl TurnView {
    /// A view of a turn in `host`'s conversation, whose tool calls are
    /// numbered from `first_tool_number`.
    pub(crate) fn new(layout: Layout, first_tool_number: usize, host: &str) -> Self {
        Self {
            layout,
            host: host.to_owned(),
            text: None,
            thinking: None,
            section: None,
            live: Vec::new(),
            records: Vec::new(),
            running: Vec::new(),
            next_number: first_tool_number,
            context: None,
            reply: String::new(),
        }
    }

    /// Adapts to a resized terminal.
    pub(crate) fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
    }

    pub(crate) fn into_records(self) -> Vec<ToolRecord> {
        self.records
    }

    /// Whether a tool call is running (its spinner needs redrawing).
    pub(crate) fn is_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// A line per running tool call: spinner, name, arguments and how long
    /// it has run, as of `now`.
    pub(crate) fn running_lines(&self, now: Instant) -> Vec<Line> {
        self.running
            .iter()
            .map(|(index, started)| {
                let elapsed = now.saturating_duration_since(*started);
                let frame =
                    (elapsed.as_millis() / SPINNER_STEP.as_millis()) as usize % SPINNER.len();
                let record = &self.records[*index];
                let suffix = format!(" · {}s", elapsed.as_secs());
                let mut line = record.call_line(
                    self.layout
                        .width
                        .saturating_sub(crate::text::display_width(&suffix)),
                );
                if let Some(first) = line.spans.first_mut() {
                    *first =
                        Span::new(format!("{} ", SPINNER[frame]), Style::PLAIN.fg(Color::Cyan));
                }
                line.push(Span::new(suffix, Style::PLAIN.dim()));
                line
            })
            .collect()
    }

    /// The live tail as of `now`: the text being written and the running
    /// tool calls.
    pub(crate) fn live(&self, now: Instant) -> Vec<Line> {
        let mut live = self.live.clone();
        live.extend(self.running_lines(now));
        live
    }

    pub(crate) fn event(&mut self, event: &Event) -> Frame {
        let mut frame = Frame::default();
        match event {
            Event::ToolsComplete(_) => {}
            Event::Start(start) => {
                if !start.agent.is_empty() {
                    frame.commit.push(self.speaker_line(&start.agent));
                }
            }
            Event::TextStart(_) => {
                frame.commit.extend(self.close_thinking());
                self.open_text(&mut frame);
            }
            Event::Chunk(chunk) => {
                frame.commit.extend(self.close_thinking());
                self.open_text(&mut frame);
                self.reply.push_str(&chunk.content);
                if let Some(text) = &mut self.text {
                    let update = text.push(&chunk.content, self.layout);
                    frame.commit.extend(update.commit);
                    self.live = update.live;
                }
            }
            Event::TextEnd(_) => frame.commit.extend(self.close_text()),
            Event::ThinkingStart(_) => {
                frame.commit.extend(self.close_text());
                self.open_thinking(&mut frame);
            }
            Event::Thinking(thinking) => {
                frame.commit.extend(self.close_text());
                self.open_thinking(&mut frame);
                if let Some(stream) = &mut self.thinking {
                    let update = stream.push(&thinking.content, self.layout);
                    frame.commit.extend(update.commit);
                    self.live = update.live;
                }
            }
            Event::ThinkingEnd(_) => frame.commit.extend(self.close_thinking()),
            Event::ToolStart(start) => {
                frame.commit.extend(self.close_streams());
                for call in &start.calls {
                    self.start_tool(call);
                }
            }
            Event::ToolResult(result) => {
                frame.commit.extend(self.close_streams());
                self.begin(Section::Tools, &mut frame);
                frame.commit.extend(self.finish_tool(result));
            }
            Event::AskUser(_) => frame.commit.extend(self.close_streams()),
            Event::UserSteered(steered) => {
                frame.commit.extend(self.close_streams());
                self.begin(Section::Note, &mut frame);
                let text = format!("» {}", sanitize(&steered.content).replace('\n', " "));
                frame.commit.push(Line::styled(
                    truncate(&text, self.layout.width).into_owned(),
                    Style::PLAIN.fg(Color::Cyan),
                ));
            }
            Event::ContextUsage(usage) => self.context = usage.usage,
            Event::End(end) => {
                frame.commit.extend(self.close_streams());
                frame.commit.extend(self.unfinished_tools());
                frame.commit.extend(self.end_lines(end));
            }
        }
        frame.live = self.live(Instant::now());
        frame
    }

    /// Ends whatever is streaming (the turn was cut short).
    pub(crate) fn close(&mut self) -> Frame {
        let mut lines = self.close_streams();
        lines.extend(self.unfinished_tools());
        Frame::commit(lines)
    }

    /// `● name`, or `● name · guest` for another agent than the host.
    fn speaker_line(&self, agent: &str) -> Line {
        let mut line = Line::new(vec![
            Span::new("● ", Style::PLAIN.fg(Color::Magenta)),
            Span::new(
                truncate(&sanitize(agent), self.layout.width / 2).into_owned(),
                Style::PLAIN.bold().fg(Color::Magenta),
            ),
        ]);
        if !self.host.is_empty() && agent != self.host {
            line.push(Span::new(
                truncate(
                    &format!(" · guest in {}'s conversation", sanitize(&self.host)),
                    self.layout.width.saturating_sub(line.width()),
                )
                .into_owned(),
                Style::PLAIN.dim(),
            ));
        }
        line
    }

    /// Calls that never got a result (the turn ended first), printed so
    /// the screen does not lose them.
    fn unfinished_tools(&mut self) -> Vec<Line> {
        let running = std::mem::take(&mut self.running);
        let mut lines = Vec::new();
        for (index, _) in running {
            let record = &self.records[index];
            lines.push(record.call_line(self.layout.width));
            lines.push(Line::styled("  ⎿ (no result)", Style::PLAIN.dim()));
        }
        lines
    }

    fn begin(&mut self, section: Section, frame: &mut Frame) {
        if self.section.is_some_and(|last| last != section) {
            frame.commit.push(Line::blank());
        }
        self.section = Some(section);
    }

    fn open_text(&mut self, frame: &mut Frame) {
        if self.text.is_none() {
            self.begin(Section::Text, frame);
            self.text = Some(MarkdownStream::new());
        }
    }

    fn open_thinking(&mut self, frame: &mut Frame) {
        if self.thinking.is_none() {
            self.begin(Section::Thinking, frame);
            let dim = Style::PLAIN.dim().italic();
            self.thinking = Some(TextStream::new(dim, Line::styled("┊ ", Style::PLAIN.dim())));
        }
    }

    fn close_text(&mut self) -> Vec<Line> {
        self.live.clear();
        match self.text.take() {
            Some(mut text) => text.finish(self.layout),
            None => Vec::new(),
        }
    }

    fn close_thinking(&mut self) -> Vec<Line> {
        self.live.clear();
        match self.thinking.take() {
            Some(mut thinking) => thinking.finish(self.layout),
            None => Vec::new(),
        }
    }

    fn close_streams(&mut self) -> Vec<Line> {
        let mut lines = self.close_thinking();
        lines.extend(self.close_text());
        lines
    }

    fn start_tool(&mut self, call: &ToolCallInfo) {
        let record = ToolRecord {
            number: self.next_number,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            output: None,
            is_error: false,
            duration_ms: 0,
        };
        self.next_number += 1;
        self.records.push(record);
        self.running.push((self.records.len() - 1, Instant::now()));
    }

    /// The call and its result, printed together when the result arrives
    /// (parallel calls in the order they finish).
    fn finish_tool(&mut self, result: &ToolResultEvent) -> Vec<Line> {
        let position = self
            .records
            .iter()
            .position(|record| record.call_id == result.call_id && record.output.is_none());
        let index = match position {
            Some(index) => index,
            None => {
                // A result without a start we saw: still show it.
                self.records.push(ToolRecord {
                    number: self.next_number,
                    call_id: result.call_id.clone(),
                    name: "tool".into(),
                    arguments: String::new(),
                    output: None,
                    is_error: false,
                    duration_ms: 0,
                });
                self.next_number += 1;
                self.records.len() - 1
            }
        };
        self.running.retain(|(running, _)| *running != index);
        let record = &mut self.records[index];
        record.output = Some(result.output.clone());
        record.is_error = result.is_error;
        record.duration_ms = result.duration_ms;
        let mut lines = vec![record.call_line(self.layout.width)];
        lines.extend(record.result_lines(self.layout.width));
        lines
    }

    fn end_lines(&mut self, end: &StreamEnd) -> Vec<Line> {
        let mut lines = Vec::new();
        let summary = usage_summary(&end.model, end.usage.as_ref(), self.context.as_ref());
        if self.section.is_some() && (!end.error.is_empty() || !summary.is_empty()) {
            lines.push(Line::blank());
        }
        self.section = Some(Section::Note);
        if !end.error.is_empty() {
            let text = format!("✗ {}", sanitize(&end.error).replace('\n', " "));
            lines.push(Line::styled(
                truncate(&text, self.layout.width).into_owned(),
                Style::PLAIN.fg(Color::Red),
            ));
        }
        if !summary.is_empty() {
            lines.push(Line::styled(
                truncate(&summary, self.layout.width).into_owned(),
                Style::PLAIN.dim(),
            ));
        }
        lines
    }
}

/// `model · 21 in · 7 out · context 28`.
pub(crate) fn usage_summary(
    model: &str,
    usage: Option<&TokenUsage>,
    context: Option<&TokenUsage>,
) -> String {
    let mut parts = Vec::new();
    if !model.is_empty() {
        parts.push(sanitize(model));
    }
    if let Some(usage) = usage {
        parts.push(format!("{} in", tokens(usage.prompt_tokens)));
        parts.push(format!("{} out", tokens(usage.completion_tokens)));
        if let Some(cached) = usage.cache_hit_tokens.filter(|n| *n > 0) {
            parts.push(format!("{} cached", tokens(cached)));
        }
    }
    if let Some(context) = context {
        let used = if context.total_tokens > 0 {
            context.total_tokens
        } else {
            context
                .prompt_tokens
                .saturating_add(context.completion_tokens)
        };
        parts.push(format!("context {}", tokens(used)));
    }
    parts.join(" · ")
}

/// A token count for people: `950`, `12.3k`, `1.2M`.
fn tokens(n: u32) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use crabtalk_proto::msg::*;
    use expect_test::expect;

    use super::*;
    use crate::text::styled::plain_lines;

    fn run(events: Vec<Event>) -> String {
        let mut view = TurnView::new(
            Layout {
                width: 50,
                max_live: 5,
            },
            1,
            "crab",
        );
        let mut lines = Vec::new();
        for event in &events {
            lines.extend(view.event(event).commit);
        }
        plain_lines(&lines)
    }

    fn chunks(text: &str) -> Vec<Event> {
        text.chars()
            .collect::<Vec<_>>()
            .chunks(3)
            .map(|piece| {
                Event::Chunk(StreamChunk {
                    content: piece.iter().collect(),
                })
            })
            .collect()
    }

    #[test]
    fn a_turn_with_thinking_tools_and_usage() {
        let mut events = vec![
            Event::Start(StreamStart {
                agent: "crab".into(),
                run_id: 7,
            }),
            Event::ThinkingStart(ThinkingStartEvent::default()),
            Event::Thinking(StreamThinking {
                content: "the user wants files".into(),
            }),
            Event::ThinkingEnd(ThinkingEndEvent::default()),
            Event::TextStart(TextStartEvent::default()),
        ];
        events.extend(chunks("Let me **look**."));
        events.extend([
            Event::TextEnd(TextEndEvent::default()),
            Event::ToolStart(ToolStartEvent {
                calls: vec![ToolCallInfo {
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                    id: "c1".into(),
                }],
            }),
            Event::ToolResult(ToolResultEvent {
                call_id: "c1".into(),
                output: "a.txt\nb.txt".into(),
                duration_ms: 3,
                is_error: false,
            }),
            Event::ToolsComplete(ToolsCompleteEvent::default()),
            Event::TextStart(TextStartEvent::default()),
        ]);
        events.extend(chunks("Two files: `a.txt` and `b.txt`."));
        events.extend([
            Event::TextEnd(TextEndEvent::default()),
            Event::ContextUsage(ContextUsageEvent {
                usage: Some(TokenUsage {
                    prompt_tokens: 1200,
                    completion_tokens: 30,
                    total_tokens: 1230,
                    ..Default::default()
                }),
            }),
            Event::End(StreamEnd {
                agent: "crab".into(),
                model: "scripted".into(),
                usage: Some(TokenUsage {
                    prompt_tokens: 2000,
                    completion_tokens: 50,
                    total_tokens: 2050,
                    ..Default::default()
                }),
                ..Default::default()
            }),
        ]);
        expect![[r#"
            ● crab
            ┊ the user wants files

            Let me look.

            ⚙ bash  command: "ls"
              ⎿ a.txt
                b.txt

            Two files: a.txt and b.txt.

            scripted · 2.0k in · 50 out · context 1.2k
        "#]]
        .assert_eq(&run(events));
    }

    #[test]
    fn a_failed_turn_shows_its_error() {
        let mut events = chunks("partial");
        events.push(Event::End(StreamEnd {
            agent: "crab".into(),
            error: "cancelled by the user".into(),
            ..Default::default()
        }));
        expect![[r#"
            partial

            ✗ cancelled by the user
        "#]]
        .assert_eq(&run(events));
    }

    #[test]
    fn parallel_calls_are_printed_with_their_results_as_they_finish() {
        let call = |id: &str, name: &str| ToolCallInfo {
            name: name.into(),
            arguments: "{}".into(),
            id: id.into(),
        };
        let result = |id: &str, output: &str, is_error| {
            Event::ToolResult(ToolResultEvent {
                call_id: id.into(),
                output: output.into(),
                duration_ms: 1,
                is_error,
            })
        };
        let events = vec![
            Event::ToolStart(ToolStartEvent {
                calls: vec![call("a", "first"), call("b", "second")],
            }),
            result("b", "no such thing", true),
            result("a", "fine", false),
        ];
        expect![[r#"
            ⚙ second
              ✗ no such thing
            ⚙ first
              ⎿ fine
        "#]]
        .assert_eq(&run(events));
    }

    #[test]
    fn a_guest_is_named_as_one_and_running_tools_spin_with_their_time() {
        let mut view = TurnView::new(
            Layout {
                width: 60,
                max_live: 5,
            },
            1,
            "ranger",
        );
        let frame = view.event(&Event::Start(StreamStart {
            agent: "crab".into(),
            run_id: 1,
        }));
        assert_eq!(
            plain_lines(&frame.commit),
            "● crab · guest in ranger's conversation\n"
        );
        let frame = view.event(&Event::ToolStart(ToolStartEvent {
            calls: vec![ToolCallInfo {
                name: "bash".into(),
                arguments: r#"{"command":"sleep 5"}"#.into(),
                id: "c1".into(),
            }],
        }));
        assert!(frame.commit.is_empty());
        assert!(view.is_running());
        let started = Instant::now();
        let later = |ms| started + Duration::from_millis(ms);
        let line = |ms| plain_lines(&view.running_lines(later(ms)));
        assert_eq!(line(0), "⠋ bash  command: \"sleep 5\" · 0s\n");
        assert_eq!(line(2_150), "⠙ bash  command: \"sleep 5\" · 2s\n");
        let frame = view.event(&Event::End(StreamEnd {
            agent: "crab".into(),
            error: "cancelled by the user".into(),
            ..Default::default()
        }));
        assert!(!view.is_running());
        assert!(
            plain_lines(&frame.commit)
                .starts_with("⚙ bash  command: \"sleep 5\"\n  ⎿ (no result)\n"),
            "{}",
            plain_lines(&frame.commit)
        );
    }
}
