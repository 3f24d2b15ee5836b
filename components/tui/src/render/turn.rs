//! A turn's events, in order, as lines for the screen.
//!
//! [`TurnView`] takes every [`Event`] of a streamed turn and answers with a
//! [`Frame`]: lines that are final and the live tail. Text is Markdown,
//! thinking is dimmed, tool calls appear as they start and their results as
//! they finish, and the turn closes with its usage (or its error). The view
//! knows nothing of terminals, so tests feed it events and read lines.

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

/// One turn on the screen.
pub struct TurnView {
    layout: Layout,
    text: Option<MarkdownStream>,
    thinking: Option<TextStream>,
    section: Option<Section>,
    live: Vec<Line>,
    records: Vec<ToolRecord>,
    next_number: usize,
    context: Option<TokenUsage>,
    /// The whole reply text, for callers that want it.
    reply: String,
}

impl TurnView {
    /// A view whose tool calls are numbered from `first_tool_number`.
    pub fn new(layout: Layout, first_tool_number: usize) -> Self {
        Self {
            layout,
            text: None,
            thinking: None,
            section: None,
            live: Vec::new(),
            records: Vec::new(),
            next_number: first_tool_number,
            context: None,
            reply: String::new(),
        }
    }

    /// Adapts to a resized terminal.
    pub fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
    }

    /// The tool calls of this turn.
    pub fn records(&self) -> &[ToolRecord] {
        &self.records
    }

    pub fn into_records(self) -> Vec<ToolRecord> {
        self.records
    }

    /// The streamed reply so far.
    pub fn reply(&self) -> &str {
        &self.reply
    }

    pub fn event(&mut self, event: &Event) -> Frame {
        let mut frame = Frame::default();
        match event {
            Event::Start(_) | Event::ToolsComplete(_) => {}
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
                self.begin(Section::Tools, &mut frame);
                for call in &start.calls {
                    frame.commit.push(self.start_tool(call));
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
                frame.commit.extend(self.end_lines(end));
            }
        }
        frame.live = self.live.clone();
        frame
    }

    /// Ends whatever is streaming (the turn was cut short).
    pub fn close(&mut self) -> Frame {
        Frame::commit(self.close_streams())
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

    fn start_tool(&mut self, call: &ToolCallInfo) -> Line {
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
        let line = record.call_line(self.layout.width);
        self.records.push(record);
        line
    }

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
        let record = &mut self.records[index];
        record.output = Some(result.output.clone());
        record.is_error = result.is_error;
        record.duration_ms = result.duration_ms;
        let mut lines = Vec::new();
        if position.is_none() || self.records.iter().filter(|r| r.output.is_none()).count() > 0 {
            // Results of parallel calls: say which call this one answers.
            let record = &self.records[index];
            lines.push(Line::new(vec![
                Span::new("  ↳ ", Style::PLAIN.dim()),
                Span::new(
                    truncate(&sanitize(&record.name), self.layout.width).into_owned(),
                    Style::PLAIN.dim().bold(),
                ),
            ]));
        }
        lines.extend(self.records[index].result_lines(self.layout.width));
        lines
    }

    fn end_lines(&mut self, end: &StreamEnd) -> Vec<Line> {
        let mut lines = Vec::new();
        if self.section.is_some() {
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
        let summary = usage_summary(&end.model, end.usage.as_ref(), self.context.as_ref());
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
pub fn usage_summary(
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
            Event::Start(StreamStart::default()),
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
    fn parallel_results_say_which_call_they_answer() {
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
            ⚙ first
            ⚙ second
              ↳ second
              ✗ no such thing
              ⎿ fine
        "#]]
        .assert_eq(&run(events));
    }
}
