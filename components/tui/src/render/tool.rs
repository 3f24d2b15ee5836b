//! Tool calls and results, summarised.
//!
//! A call is one line: the tool's name and its arguments as `key: value`
//! pairs, cut to the width. A result is its first few lines, cut, with a
//! note of how much more there is and how to see it (`/expand N`); errors
//! are red and marked `✗`. The answers of the web tools are shown as
//! people read them (the kit's [`tool_view`]): the hits' titles, addresses
//! and engines, a page's title and length — not the JSON the model reads.
//! The full output is kept in a [`ToolRecord`].

use crabtalk_kit::tool_view::{self, ToolView};
use serde_json::Value;

use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, display_width, sanitize, truncate};

/// Result lines shown before "… N more lines".
pub(crate) const RESULT_PREVIEW_LINES: usize = 3;

/// Longest summary of one argument value, in columns.
const MAX_VALUE_WIDTH: usize = 48;

/// A tool call of this session, kept so its result can be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolRecord {
    /// 1-based, counted over the session: what `/expand N` names.
    pub number: usize,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    pub output: Option<String>,
    pub is_error: bool,
    pub duration_ms: u64,
}

/// `key: value, …` for a call's JSON arguments, one line, at most `width`.
pub(crate) fn summarize_arguments(tool: &str, arguments: &str, width: usize) -> String {
    let summary = match serde_json::from_str::<Value>(arguments) {
        Ok(value) if tool == "ask_user" => ask_summary(&value).unwrap_or_else(|| summarize(&value)),
        Ok(value) => summarize(&value),
        Err(_) => one_line(arguments),
    };
    truncate(&summary, width).into_owned()
}

fn summarize(value: &Value) -> String {
    match value {
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| format!("{key}: {}", summarize_value(value)))
            .collect::<Vec<_>>()
            .join(", "),
        other => summarize_value(other),
    }
}

fn summarize_value(value: &Value) -> String {
    let text = match value {
        Value::String(text) => format!("{:?}", one_line(text)),
        other => other.to_string(),
    };
    truncate(&text, MAX_VALUE_WIDTH).into_owned()
}

/// The questions of an `ask_user` call, which say more than its JSON.
fn ask_summary(value: &Value) -> Option<String> {
    let questions = value.get("questions")?.as_array()?;
    let texts: Vec<String> = questions
        .iter()
        .filter_map(|q| q.get("question")?.as_str())
        .map(one_line)
        .collect();
    (!texts.is_empty()).then(|| texts.join(" · "))
}

/// `text` on one line: sanitised, runs of whitespace as one space.
fn one_line(text: &str) -> String {
    sanitize(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl ToolRecord {
    /// `⚙ name  arguments`.
    pub(crate) fn call_line(&self, width: usize) -> Line {
        let mut line = Line::new(vec![
            Span::new("⚙ ", Style::PLAIN.fg(Color::Cyan)),
            Span::new(
                truncate(&sanitize(&self.name), width / 2).into_owned(),
                Style::PLAIN.bold(),
            ),
        ]);
        let room = width.saturating_sub(line.width() + 2);
        let summary = summarize_arguments(&self.name, &self.arguments, room);
        if !summary.is_empty() {
            line.push(Span::plain("  "));
            line.push(Span::new(summary, Style::PLAIN.dim()));
        }
        line
    }

    /// The result's first lines, and how to see the rest.
    pub(crate) fn result_lines(&self, width: usize) -> Vec<Line> {
        let Some(output) = &self.output else {
            return Vec::new();
        };
        if !self.is_error
            && let Some(view) = tool_view::view(&self.name, output)
        {
            return self.view_lines(&view, width, RESULT_PREVIEW_LINES);
        }
        let output = sanitize(output);
        let style = if self.is_error {
            Style::PLAIN.fg(Color::Red)
        } else {
            Style::PLAIN.dim()
        };
        let marker = if self.is_error { "  ✗ " } else { "  ⎿ " };
        let body: Vec<&str> = output.trim_matches('\n').lines().collect();
        let mut lines = Vec::new();
        let room = width.saturating_sub(display_width(marker));
        let shown = if body.is_empty() {
            vec!["(no output)"]
        } else {
            body.clone()
        };
        for (index, text) in shown.iter().take(RESULT_PREVIEW_LINES).enumerate() {
            let prefix = if index == 0 { marker } else { "    " };
            lines.push(Line::new(vec![
                Span::new(prefix, style),
                Span::new(truncate(text, room).into_owned(), style),
            ]));
        }
        let hidden = body.len().saturating_sub(RESULT_PREVIEW_LINES);
        let cut = body
            .iter()
            .take(RESULT_PREVIEW_LINES)
            .any(|text| display_width(text) > room);
        if hidden > 0 || cut {
            let more = if hidden > 0 {
                format!("    … {hidden} more lines · /expand {}", self.number)
            } else {
                format!("    … /expand {} for the whole output", self.number)
            };
            lines.push(Line::styled(
                truncate(&more, width).into_owned(),
                Style::PLAIN.dim(),
            ));
        }
        lines
    }

    /// A web tool's answer: a headline, then up to `hits` results, each
    /// its title, the engines that found it, and its address.
    fn view_lines(&self, view: &ToolView, width: usize, hits: usize) -> Vec<Line> {
        let style = Style::PLAIN.dim();
        let room = width.saturating_sub(4);
        let cut = |text: &str| truncate(&sanitize(text), room).into_owned();
        let mut lines = Vec::new();
        match view {
            ToolView::Search(found) => {
                lines.push(Line::new(vec![
                    Span::new("  ⎿ ", style),
                    Span::new(cut(&found.headline()), style),
                ]));
                for (n, hit) in found.hits.iter().take(hits).enumerate() {
                    let title = format!("{}. {}", n + 1, hit.title);
                    let engines = hit.engines.join(", ");
                    let mut line = Line::new(vec![
                        Span::plain("    "),
                        Span::new(
                            truncate(&sanitize(&title), room.saturating_sub(engines.len() + 3))
                                .into_owned(),
                            Style::PLAIN,
                        ),
                    ]);
                    if !engines.is_empty() {
                        line.push(Span::new(format!(" · {engines}"), style));
                    }
                    lines.push(line);
                    lines.push(Line::new(vec![
                        Span::plain("       "),
                        Span::new(
                            truncate(&sanitize(&hit.url), width.saturating_sub(7)).into_owned(),
                            Style::PLAIN.fg(Color::Cyan),
                        ),
                    ]));
                }
                let hidden = found.hits.len().saturating_sub(hits);
                if hidden > 0 {
                    lines.push(Line::styled(
                        truncate(
                            &format!("    … {hidden} more · /expand {}", self.number),
                            width,
                        )
                        .into_owned(),
                        style,
                    ));
                }
            }
            ToolView::Page(page) => {
                lines.push(Line::new(vec![
                    Span::new("  ⎿ ", style),
                    Span::new(cut(&page.headline()), style),
                ]));
                if hits < usize::MAX {
                    lines.push(Line::styled(
                        truncate(
                            &format!("    … /expand {} for the page", self.number),
                            width,
                        )
                        .into_owned(),
                        style,
                    ));
                }
            }
        }
        lines
    }

    /// The call and its whole output, wrapped (for `/expand`).
    pub(crate) fn expanded(&self, width: usize) -> Vec<Line> {
        let mut lines = vec![self.call_line(width)];
        let arguments = serde_json::from_str::<Value>(&self.arguments)
            .ok()
            .and_then(|value| serde_json::to_string_pretty(&value).ok())
            .unwrap_or_else(|| self.arguments.clone());
        let dim = Line::styled("  │ ", Style::PLAIN.dim());
        lines.extend(wrap(
            &[Span::new(sanitize(&arguments), Style::PLAIN.dim())],
            &Wrap::words(width).prefixed(dim).clusters(),
        ));
        match &self.output {
            None => lines.push(Line::styled("  (still running)", Style::PLAIN.dim())),
            Some(output)
                if !self.is_error
                    && matches!(
                        tool_view::view(&self.name, output),
                        Some(ToolView::Search(_))
                    ) =>
            {
                // Every hit, readable; the model's JSON says nothing more
                // a person needs.
                if let Some(view) = tool_view::view(&self.name, output) {
                    lines.extend(self.view_lines(&view, width, usize::MAX));
                }
            }
            Some(output) => {
                let style = if self.is_error {
                    Style::PLAIN.fg(Color::Red)
                } else {
                    Style::PLAIN
                };
                let bar = Line::styled(if self.is_error { "  ✗ " } else { "  ⎿ " }, style);
                lines.extend(wrap(
                    &[Span::new(sanitize(output), style)],
                    &Wrap::words(width).prefixed(bar).clusters(),
                ));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::text::styled::plain_lines;

    fn record(output: &str, is_error: bool) -> ToolRecord {
        ToolRecord {
            number: 3,
            call_id: "c1".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls -la\n/tmp","timeout":30}"#.into(),
            output: Some(output.into()),
            is_error,
            duration_ms: 12,
        }
    }

    #[test]
    fn arguments_are_summarised_on_one_line() {
        assert_eq!(
            summarize_arguments("bash", r#"{"command":"ls -la\n/tmp","timeout":30}"#, 80),
            r#"command: "ls -la /tmp", timeout: 30"#
        );
        assert_eq!(
            summarize_arguments("bash", r#"{"command":"ls -la\n/tmp","timeout":30}"#, 12),
            "command: \"l…"
        );
        assert_eq!(
            summarize_arguments("x", "not json\u{1b}[2J", 80),
            "not json"
        );
        assert_eq!(
            summarize_arguments(
                "ask_user",
                r#"{"questions":[{"question":"Colour?"},{"question":"Size?"}]}"#,
                80
            ),
            "Colour? · Size?"
        );
    }

    #[test]
    fn results_are_short_and_expandable() {
        let long = (1..=10)
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let record = record(&long, false);
        let mut lines = vec![record.call_line(60)];
        lines.extend(record.result_lines(60));
        expect![[r#"
            ⚙ bash  command: "ls -la /tmp", timeout: 30
              ⎿ line 1
                line 2
                line 3
                … 7 more lines · /expand 3
        "#]]
        .assert_eq(&plain_lines(&lines));
        assert_eq!(record.expanded(60).len(), 1 + 4 + 10);
    }

    #[test]
    fn web_search_answers_show_hits_not_json() {
        let answer = r#"{"query":"rust","results":[
            {"title":"Rust (programming language)","url":"https://en.wikipedia.org/wiki/Rust_(programming_language)","snippet":"","score":1.0,"engines":[{"engine":"wikipedia","rank":1},{"engine":"duckduckgo","rank":3}]},
            {"title":"Rust","url":"https://www.rust-lang.org/","snippet":"","score":0.9,"engines":[{"engine":"duckduckgo","rank":1}]},
            {"title":"Rust book","url":"https://doc.rust-lang.org/book/","snippet":"","score":0.5,"engines":[{"engine":"duckduckgo","rank":2}]},
            {"title":"Rustlings","url":"https://github.com/rust-lang/rustlings","snippet":"","score":0.4,"engines":[{"engine":"duckduckgo","rank":4}]}],
            "engines":[{"engine":"bing","status":"disabled"},{"engine":"duckduckgo","status":"ok"},{"engine":"wikipedia","status":"ok"}],"cached":false}"#;
        let search = ToolRecord {
            name: "search__web_search".into(),
            arguments: r#"{"query":"rust"}"#.into(),
            ..record(answer, false)
        };
        expect![[r#"
            ⚙ search__web_search  query: "rust"
              ⎿ 4 results for "rust" (duckduckgo, wikipedia)
                1. Rust (programming language) · wikipedia, duckduckgo
                   https://en.wikipedia.org/wiki/Rust_(programming_language)
                2. Rust · duckduckgo
                   https://www.rust-lang.org/
                3. Rust book · duckduckgo
                   https://doc.rust-lang.org/book/
                … 1 more · /expand 3
        "#]]
        .assert_eq(&plain_lines(
            &[vec![search.call_line(80)], search.result_lines(80)].concat(),
        ));
        assert!(!plain_lines(&search.expanded(80)).contains("\"score\""));
        let page = ToolRecord {
            name: "search__web_fetch".into(),
            arguments: r#"{"url":"https://doc.rust-lang.org/book/"}"#.into(),
            ..record(
                "# The Rust Book\n<https://doc.rust-lang.org/book/> (text/html, HTTP 200)\n\nChapter one.\n",
                false,
            )
        };
        expect![[r#"
            ⚙ search__web_fetch  url: "https://doc.rust-lang.org/book/"
              ⎿ The Rust Book — https://doc.rust-lang.org/book/ (12 characters)
                … /expand 3 for the page
        "#]]
        .assert_eq(&plain_lines(
            &[vec![page.call_line(80)], page.result_lines(80)].concat(),
        ));
    }

    #[test]
    fn errors_are_marked_and_red() {
        let record = record("permission denied", true);
        let lines = record.result_lines(60);
        assert_eq!(lines[0].plain(), "  ✗ permission denied");
        assert!(
            lines[0]
                .spans
                .iter()
                .all(|span| span.style.fg == Some(Color::Red))
        );
    }
}
