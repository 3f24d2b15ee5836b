//! A stored conversation as the chat shows it when it is opened: the last
//! few turns, drawn as they were drawn when they happened — the person's
//! messages after a `›`, each reply under the name of the agent who gave it,
//! tool calls with their results — after a marker for what came before
//! (a compaction's summary, or a fresh start).
//!
//! The input is `GetConversationHistory`'s messages: roles `user`,
//! `assistant` (a guest's reply wrapped in `<from agent="…">`), `tool_call`
//! (`name arguments`), `tool` (a result), `compact` (a marker; empty for a
//! fresh start) and `system` (a note from the daemon).

use std::collections::VecDeque;

use crabtalk_proto::msg::ConversationMessage;

use super::markdown;
use super::tool::ToolRecord;
use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, sanitize, truncate};

/// What opening a conversation shows.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    pub lines: Vec<Line>,
    /// The tool calls shown, numbered for `/expand`.
    pub records: Vec<ToolRecord>,
}

/// The person's message line: `› text`, wrapped under itself.
pub(crate) fn user_lines(text: &str, width: usize) -> Vec<Line> {
    let prompt = Line::styled("› ", Style::PLAIN.bold().fg(Color::Cyan));
    wrap(
        &[Span::plain(sanitize(text))],
        &Wrap::words(width)
            .with_first(prompt)
            .with_rest(Line::plain_text("  ")),
    )
}

/// `● name` (with the guest mark when `name` is not the host).
fn speaker_line(name: &str, host: &str, width: usize) -> Line {
    let mut line = Line::new(vec![
        Span::new("● ", Style::PLAIN.fg(Color::Magenta)),
        Span::new(
            truncate(&sanitize(name), width / 2).into_owned(),
            Style::PLAIN.bold().fg(Color::Magenta),
        ),
    ]);
    if name != host {
        line.push(Span::new(
            truncate(
                &format!(" · guest in {}'s conversation", sanitize(host)),
                width.saturating_sub(line.width()),
            )
            .into_owned(),
            Style::PLAIN.dim(),
        ));
    }
    line
}

fn note(text: &str, width: usize) -> Line {
    Line::styled(truncate(text, width).into_owned(), Style::PLAIN.dim())
}

/// A user message as typed: a skill's expansion shown as the `/name` that
/// asked for it.
fn as_typed(content: &str) -> String {
    let Some(rest) = content.strip_prefix("<skill name=\"") else {
        return content.to_owned();
    };
    let Some((name, rest)) = rest.split_once("\">") else {
        return content.to_owned();
    };
    let after = rest
        .split_once("</skill>")
        .map_or("", |(_, after)| after.trim());
    if after.is_empty() {
        format!("/{name}")
    } else {
        format!("/{name} {after}")
    }
}

/// A guest's reply (`<from agent="x">…</from>`): the guest and the text.
fn guest_reply(content: &str) -> Option<(String, &str)> {
    let rest = content.strip_prefix("<from agent=\"")?;
    let (name, rest) = rest.split_once("\">")?;
    let body = rest.strip_suffix("</from>").unwrap_or(rest);
    Some((
        name.replace("&quot;", "\"").replace("&amp;", "&"),
        body.trim(),
    ))
}

/// The tail of `messages` (the conversation of `host`): its last `turns`
/// turns since the last marker, at `width`, tool calls numbered from
/// `first_tool_number`.
pub(crate) fn tail(
    messages: &[ConversationMessage],
    host: &str,
    turns: usize,
    width: usize,
    first_tool_number: usize,
) -> Tail {
    let mut out = Tail::default();
    let marker = messages.iter().rposition(|m| m.role == "compact");
    let current = &messages[marker.map_or(0, |m| m + 1)..];
    if let Some(marker) = marker {
        let summary = messages[marker].content.trim();
        if summary.is_empty() {
            out.lines.push(note(
                "── a fresh start: the messages before it are kept, not sent ──",
                width,
            ));
        } else {
            out.lines
                .push(note("── summary of the conversation so far ──", width));
            out.lines.extend(markdown::render(summary, width));
            out.lines.push(note("── end of the summary ──", width));
        }
    }
    let users: Vec<usize> = current
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == "user")
        .map(|(i, _)| i)
        .collect();
    let start = if users.len() > turns {
        users[users.len() - turns]
    } else {
        0
    };
    if start > 0 {
        out.lines.push(note(
            &format!("… {start} earlier messages (/sessions lists the stored conversations)"),
            width,
        ));
    }
    let mut number = first_tool_number;
    let mut pending: VecDeque<ToolRecord> = VecDeque::new();
    let mut labelled = false;
    for message in &current[start..] {
        match message.role.as_str() {
            "user" => {
                flush_unanswered(&mut pending, &mut out, width);
                out.lines.push(Line::blank());
                out.lines
                    .extend(user_lines(&as_typed(&message.content), width));
                labelled = false;
            }
            "assistant" => {
                let (speaker, text) = match guest_reply(&message.content) {
                    Some((guest, text)) => (guest, text),
                    None => (host.to_owned(), message.content.trim()),
                };
                if !labelled || speaker != host {
                    out.lines.push(speaker_line(&speaker, host, width));
                    labelled = speaker == host;
                }
                if !text.is_empty() {
                    out.lines.extend(markdown::render(text, width));
                }
            }
            "tool_call" => {
                let (name, arguments) = message
                    .content
                    .split_once(' ')
                    .unwrap_or((message.content.as_str(), ""));
                pending.push_back(ToolRecord {
                    number,
                    call_id: String::new(),
                    name: name.to_owned(),
                    arguments: arguments.to_owned(),
                    output: None,
                    is_error: false,
                    duration_ms: 0,
                });
                number += 1;
            }
            "tool" => {
                let Some(mut record) = pending.pop_front() else {
                    continue;
                };
                record.output = Some(message.content.clone());
                out.lines.push(record.call_line(width));
                out.lines.extend(record.result_lines(width));
                out.records.push(record);
            }
            _ => out.lines.push(note(&sanitize(&message.content), width)),
        }
    }
    flush_unanswered(&mut pending, &mut out, width);
    out
}

fn flush_unanswered(pending: &mut VecDeque<ToolRecord>, out: &mut Tail, width: usize) {
    for record in pending.drain(..) {
        out.lines.push(record.call_line(width));
        out.lines.push(note("  ⎿ (no result)", width));
        out.records.push(record);
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::text::styled::plain_lines;

    fn message(role: &str, content: &str) -> ConversationMessage {
        ConversationMessage {
            role: role.into(),
            content: content.into(),
        }
    }

    #[test]
    fn the_last_turns_show_after_the_summary() {
        let messages = vec![
            message("user", "very old"),
            message("compact", "We planned a **festival**."),
            message("user", "first"),
            message("assistant", "one"),
            message(
                "user",
                "<skill name=\"greet\">\nBe kind.\n</skill>\n\nFerris",
            ),
            message("assistant", ""),
            message("tool_call", "bash {\"command\":\"ls\"}"),
            message("tool", "a.txt"),
            message("assistant", "Hello, Ferris."),
            message("user", "third"),
            message("assistant", "<from agent=\"owl\">\nHoot.\n</from>"),
            message("assistant", "Back to me."),
        ];
        let tail = tail(&messages, "crab", 2, 40, 4);
        expect![[r#"
            ── summary of the conversation so far ──
            We planned a festival.
            ── end of the summary ──
            … 2 earlier messages (/sessions lists t…

            › /greet Ferris
            ● crab
            ⚙ bash  command: "ls"
              ⎿ a.txt
            Hello, Ferris.

            › third
            ● owl · guest in crab's conversation
            Hoot.
            ● crab
            Back to me.
        "#]]
        .assert_eq(&plain_lines(&tail.lines));
        assert_eq!(tail.records.len(), 1);
        assert_eq!(tail.records[0].number, 4);
    }

    #[test]
    fn a_fresh_start_is_marked_and_what_came_before_is_not_shown() {
        let messages = vec![
            message("user", "old"),
            message("assistant", "old reply"),
            message("compact", ""),
        ];
        let tail = tail(&messages, "crab", 3, 80, 1);
        assert_eq!(
            plain_lines(&tail.lines),
            "── a fresh start: the messages before it are kept, not sent ──\n"
        );
    }
}
