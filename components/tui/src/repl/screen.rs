//! What the chat shows: the scrollback it prints (notes, errors, Markdown,
//! the banner) and the live area it redraws (the turn's tail, the queue,
//! the input line and its notice).

use std::time::Instant;

use super::{QUEUE_SHOWN, Repl};
use crate::input::editor::Editor;
use crate::render::markdown;
use crate::render::stream::Layout;
use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, display_width, sanitize, truncate};

impl Repl {
    pub(super) fn layout(&self) -> Layout {
        self.terminal.layout()
    }

    pub(super) fn width(&self) -> usize {
        self.layout().width
    }

    /// The prompt: the agent spoken to, and `›` when nothing runs, `…`
    /// while a turn runs (Enter queues then).
    pub(super) fn prompt(&self) -> String {
        let mark = if self.busy() { "…" } else { "›" };
        format!("{} {mark} ", sanitize(self.session.agent_label()))
    }

    /// Prints lines for good above the live region (terminal write errors
    /// cannot be reported anywhere better than the terminal, so they are
    /// dropped).
    pub(super) fn print(&mut self, lines: &[Line]) {
        let _ = self.terminal.print(lines);
    }

    pub(super) fn note(&mut self, text: &str, style: Style) {
        let lines = wrap(
            &[Span::new(sanitize(text), style)],
            &Wrap::words(self.width()),
        );
        self.print(&lines);
    }

    pub(super) fn info(&mut self, text: &str) {
        self.note(text, Style::PLAIN.dim());
    }

    pub(super) fn error(&mut self, text: &str) {
        self.note(text, Style::PLAIN.fg(Color::Red));
    }

    pub(super) fn markdown(&mut self, text: &str) {
        let lines = markdown::render(text, self.width());
        self.print(&lines);
    }

    /// Redraws the live region: the running turn (or another client's),
    /// the queue, then the input line (or the open question).
    pub(super) fn draw(&mut self) {
        let layout = self.layout();
        let now = Instant::now();
        let prompt = self.prompt();
        self.editor.set_width(display_width(&prompt), layout.width);
        let busy = self.busy();
        let editor_rows = if busy {
            (layout.max_live / 3).max(1)
        } else {
            layout.max_live
        };
        let (mut input, cursor) = self
            .editor
            .render_window(&prompt, layout.width, editor_rows);
        if let Some(notice) = &self.notice {
            input.push(Line::styled(
                truncate(notice, layout.width).into_owned(),
                Style::PLAIN.dim(),
            ));
        }
        let queued = self.queued_lines(layout.width);
        let mut live = Vec::new();
        let form = self
            .turn
            .as_ref()
            .and_then(|turn| turn.forms.front())
            .map(|form| form.render(layout.width));
        if let Some(turn) = &mut self.turn {
            let budget = layout
                .max_live
                .saturating_sub(input.len() + queued.len())
                .max(1);
            turn.view.set_layout(Layout {
                width: layout.width,
                max_live: budget,
            });
            live.extend(turn.view.live(now));
        }
        live.extend(self.follow.live(now));
        live.extend(queued);
        let cursor = match form {
            Some(form) => {
                live.extend(form);
                None
            }
            None => {
                let top = live.len();
                live.extend(input);
                Some((top + cursor.0, cursor.1))
            }
        };
        let _ = self.terminal.show(&[], &live, cursor);
    }

    pub(super) fn queued_lines(&self, width: usize) -> Vec<Line> {
        let mut lines: Vec<Line> = self
            .queue
            .iter()
            .take(QUEUE_SHOWN)
            .map(|input| {
                let first = input.lines().next().unwrap_or_default();
                let more = if input.contains('\n') { " …" } else { "" };
                let why = if self.connected() {
                    "queued"
                } else {
                    "waiting for the daemon"
                };
                Line::new(vec![
                    Span::new(format!("⧗ {why}: "), Style::PLAIN.fg(Color::Yellow)),
                    Span::new(
                        truncate(
                            &sanitize(&format!("{first}{more}")),
                            width.saturating_sub(24),
                        )
                        .into_owned(),
                        Style::PLAIN.dim(),
                    ),
                ])
            })
            .collect();
        if self.queue.len() > QUEUE_SHOWN {
            lines.push(Line::styled(
                format!("  … and {} more", self.queue.len() - QUEUE_SHOWN),
                Style::PLAIN.dim(),
            ));
        }
        lines
    }

    /// The input, as it was typed, into the scrollback.
    pub(super) fn echo(&mut self, text: &str) {
        let mut shown = Editor::new();
        shown.set_text(text);
        let prompt = self.prompt();
        let (rows, _) = shown.render(&prompt, self.width());
        self.print(&rows);
    }

    pub(super) async fn banner(&mut self) {
        let model = self.conversation_model().await;
        let mut line = Line::new(vec![
            Span::new("crabtalk", Style::PLAIN.bold().fg(Color::Magenta)),
            Span::plain(" · "),
            Span::new(self.session.agent_label().to_owned(), Style::PLAIN.bold()),
            Span::new(format!(" with {}", self.session.sender), Style::PLAIN.dim()),
        ]);
        if let Some((model, _)) = model {
            line.push(Span::new(format!(" · {model}"), Style::PLAIN.dim()));
        }
        let lines = wrap(&line.spans, &Wrap::words(self.width()));
        self.print(&lines);
        self.info("/help for commands · Ctrl-D to quit");
    }
}
