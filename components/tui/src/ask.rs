//! `ask_user` questions as a form the person answers from the keyboard.
//!
//! Each question is a list of its options plus "Other…" for an answer in
//! the person's own words (a question without options goes straight to
//! text). Up/Down move, Space ticks an option of a multi-select question,
//! Enter chooses (or confirms the ticks), Esc leaves the text field or
//! dismisses the whole form. The answers go back in one `ReplyToAsk` naming
//! the call; dismissing sends an explicit [`CANCELLED`] answer, so the agent
//! never waits for an answer that will not come.

use crabtalk_proto::msg::{AskQuestion, AskUserEvent};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, sanitize, truncate};

/// The answer sent when the person dismisses the questions.
pub(crate) const CANCELLED: &str = "cancelled: the user dismissed the question without answering";

const OTHER: &str = "Other…";

/// Where a form stands after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AskOutcome {
    /// Still answering: draw the form again.
    Pending,
    /// Every question answered: the reply's content.
    Answered(String),
    /// Dismissed: reply with [`CANCELLED`].
    Cancelled,
}

#[derive(Debug)]
struct QuestionState {
    question: AskQuestion,
    cursor: usize,
    ticked: Vec<bool>,
    /// The free-text answer being typed, when in the text field.
    typing: Option<String>,
    answer: Option<String>,
}

impl QuestionState {
    fn new(question: AskQuestion) -> Self {
        let options = question.options.len();
        Self {
            typing: (options == 0).then(String::new),
            question,
            cursor: 0,
            ticked: vec![false; options],
            answer: None,
        }
    }

    /// Options plus "Other…".
    fn choices(&self) -> usize {
        self.question.options.len() + 1
    }

    fn label(&self, index: usize) -> String {
        sanitize(&self.question.options[index].label)
    }
}

/// The questions of one `ask_user` call.
#[derive(Debug)]
pub(crate) struct AskForm {
    call_id: String,
    questions: Vec<QuestionState>,
    current: usize,
}

impl AskForm {
    pub(crate) fn new(event: &AskUserEvent) -> Self {
        let mut questions: Vec<QuestionState> = event
            .questions
            .iter()
            .cloned()
            .map(QuestionState::new)
            .collect();
        if questions.is_empty() {
            questions.push(QuestionState::new(AskQuestion {
                question: "The agent asks for your input.".into(),
                ..Default::default()
            }));
        }
        Self {
            call_id: event.call_id.clone(),
            questions,
            current: 0,
        }
    }

    pub(crate) fn call_id(&self) -> &str {
        &self.call_id
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> AskOutcome {
        if key.kind == KeyEventKind::Release {
            return AskOutcome::Pending;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let question = &mut self.questions[self.current];
        if let Some(text) = &mut question.typing {
            match key.code {
                KeyCode::Esc if question.question.options.is_empty() => {
                    return AskOutcome::Cancelled;
                }
                KeyCode::Esc => question.typing = None,
                KeyCode::Enter if !text.trim().is_empty() => {
                    let answer = text.trim().to_owned();
                    return self.answer(answer);
                }
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char('u') if ctrl => text.clear(),
                KeyCode::Char(c) if !ctrl && !c.is_control() => text.push(c),
                _ => {}
            }
            return AskOutcome::Pending;
        }
        let multi = question.question.multi_select;
        let other = question.choices() - 1;
        match key.code {
            KeyCode::Esc => return AskOutcome::Cancelled,
            KeyCode::Up | KeyCode::Char('k') => {
                question.cursor = question.cursor.checked_sub(1).unwrap_or(other);
            }
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => {
                question.cursor = (question.cursor + 1) % question.choices();
            }
            KeyCode::Char(c @ '1'..='9') => {
                let index = c as usize - '1' as usize;
                if index < question.choices() {
                    question.cursor = index;
                }
            }
            KeyCode::Char(' ') if multi && question.cursor < other => {
                let ticked = &mut question.ticked[question.cursor];
                *ticked = !*ticked;
            }
            KeyCode::Enter | KeyCode::Char(' ') if question.cursor == other => {
                question.typing = Some(String::new());
            }
            KeyCode::Enter if multi => {
                let chosen: Vec<String> = (0..other)
                    .filter(|index| question.ticked[*index])
                    .map(|index| question.label(index))
                    .collect();
                let answer = if chosen.is_empty() {
                    question.label(question.cursor)
                } else {
                    chosen.join(", ")
                };
                return self.answer(answer);
            }
            KeyCode::Enter => {
                let answer = question.label(question.cursor);
                return self.answer(answer);
            }
            _ => {}
        }
        AskOutcome::Pending
    }

    fn answer(&mut self, answer: String) -> AskOutcome {
        self.questions[self.current].answer = Some(answer);
        self.questions[self.current].typing = None;
        if self.current + 1 < self.questions.len() {
            self.current += 1;
            return AskOutcome::Pending;
        }
        AskOutcome::Answered(self.reply())
    }

    /// The reply: the answer alone for one question, else one
    /// `question: answer` line per question.
    fn reply(&self) -> String {
        if let [only] = self.questions.as_slice() {
            return only.answer.clone().unwrap_or_default();
        }
        self.questions
            .iter()
            .map(|q| {
                let label = if q.question.header.is_empty() {
                    &q.question.question
                } else {
                    &q.question.header
                };
                format!("{}: {}", label.trim(), q.answer.as_deref().unwrap_or(""))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// One line per answered question, for the scrollback after the form.
    pub(crate) fn summary(&self, width: usize) -> Vec<Line> {
        self.questions
            .iter()
            .filter_map(|q| {
                let answer = q.answer.as_deref()?;
                let text = format!("? {} → {}", sanitize(&q.question.question), answer);
                Some(Line::styled(
                    truncate(&text.replace('\n', " "), width).into_owned(),
                    Style::PLAIN.fg(Color::Green),
                ))
            })
            .collect()
    }

    /// The form as it stands: the current question, its choices, and the
    /// keys.
    pub(crate) fn render(&self, width: usize) -> Vec<Line> {
        let question = &self.questions[self.current];
        let mut lines = Vec::new();
        let mut title = Vec::new();
        if self.questions.len() > 1 {
            title.push(Span::new(
                format!("({}/{}) ", self.current + 1, self.questions.len()),
                Style::PLAIN.dim(),
            ));
        }
        if !question.question.header.is_empty() {
            title.push(Span::new(
                format!("{} · ", sanitize(&question.question.header)),
                Style::PLAIN.fg(Color::Yellow),
            ));
        }
        title.push(Span::new(
            sanitize(&question.question.question),
            Style::PLAIN.bold(),
        ));
        let options = Wrap::words(width)
            .with_first(Line::styled("? ", Style::PLAIN.bold().fg(Color::Yellow)))
            .with_rest(Line::plain_text("  "));
        lines.extend(wrap(&title, &options));
        let multi = question.question.multi_select;
        for index in 0..question.choices() {
            let selected = index == question.cursor && question.typing.is_none();
            let pointer = if selected { "❯ " } else { "  " };
            let is_other = index == question.choices() - 1;
            let tick = match (multi, is_other) {
                (true, false) if question.ticked[index] => "[x] ",
                (true, false) => "[ ] ",
                _ => "",
            };
            let label = if is_other {
                OTHER.to_owned()
            } else {
                question.label(index)
            };
            let style = if selected {
                Style::PLAIN.bold().fg(Color::Cyan)
            } else {
                Style::PLAIN
            };
            let mut line = Line::new(vec![
                Span::new(format!("  {pointer}{}. {tick}", index + 1), style),
                Span::new(label, style),
            ]);
            if !is_other {
                let description = sanitize(&question.question.options[index].description);
                if !description.is_empty() {
                    line.push(Span::new(format!(" — {description}"), Style::PLAIN.dim()));
                }
            }
            let cut = truncate(&line.plain(), width).into_owned();
            if cut != line.plain() {
                line = Line::styled(cut, style);
            }
            lines.push(line);
        }
        if let Some(text) = &question.typing {
            let field = format!("  ✎ {text}▏");
            lines.push(Line::styled(
                truncate_left(&field, width),
                Style::PLAIN.fg(Color::Cyan),
            ));
        }
        let keys = match (&question.typing, multi) {
            (Some(_), _) => "type your answer · Enter send · Esc back",
            (None, true) => "↑↓ move · Space tick · Enter confirm · Esc dismiss",
            (None, false) => "↑↓ move · Enter choose · Esc dismiss",
        };
        lines.push(Line::styled(
            truncate(keys, width).into_owned(),
            Style::PLAIN.dim(),
        ));
        lines
    }
}

/// The end of `text` that fits `width` (a text field shows what is typed
/// last).
fn truncate_left(text: &str, width: usize) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    let mut used = 0;
    let mut start = text.len();
    for (index, grapheme) in text.grapheme_indices(true).rev() {
        let w = crate::text::width::grapheme_width(grapheme);
        if used + w > width {
            break;
        }
        used += w;
        start = index;
    }
    text[start..].to_owned()
}

#[cfg(test)]
mod tests {
    use crabtalk_proto::msg::AskOption;
    use expect_test::expect;

    use super::*;
    use crate::text::styled::plain_lines;

    fn question(text: &str, options: &[&str], multi_select: bool) -> AskQuestion {
        AskQuestion {
            question: text.into(),
            header: String::new(),
            options: options
                .iter()
                .map(|label| AskOption {
                    label: (*label).into(),
                    description: String::new(),
                })
                .collect(),
            multi_select,
        }
    }

    fn form(questions: Vec<AskQuestion>) -> AskForm {
        AskForm::new(&AskUserEvent {
            questions,
            call_id: "c1".into(),
        })
    }

    fn press(form: &mut AskForm, code: KeyCode) -> AskOutcome {
        form.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn type_text(form: &mut AskForm, text: &str) {
        for c in text.chars() {
            press(form, KeyCode::Char(c));
        }
    }

    #[test]
    fn single_select_answers_the_chosen_label() {
        let mut form = form(vec![question("Colour?", &["red", "blue"], false)]);
        expect![[r#"
            ? Colour?
              ❯ 1. red
                2. blue
                3. Other…
            ↑↓ move · Enter choose · Esc dismiss
        "#]]
        .assert_eq(&plain_lines(&form.render(40)));
        press(&mut form, KeyCode::Down);
        assert_eq!(
            press(&mut form, KeyCode::Enter),
            AskOutcome::Answered("blue".into())
        );
    }

    #[test]
    fn multi_select_ticks_and_other_takes_free_text() {
        let mut form = form(vec![
            question("Toppings?", &["cheese", "ham", "pineapple"], true),
            question("Where?", &["here"], false),
        ]);
        press(&mut form, KeyCode::Char(' '));
        press(&mut form, KeyCode::Down);
        press(&mut form, KeyCode::Down);
        press(&mut form, KeyCode::Char(' '));
        expect![[r#"
            ? (1/2) Toppings?
                1. [x] cheese
                2. [ ] ham
              ❯ 3. [x] pineapple
                4. Other…
            ↑↓ move · Space tick · Enter confirm · Esc dismiss
        "#]]
        .assert_eq(&plain_lines(&form.render(60)));
        assert_eq!(press(&mut form, KeyCode::Enter), AskOutcome::Pending);
        press(&mut form, KeyCode::Up);
        press(&mut form, KeyCode::Enter);
        type_text(&mut form, "on the 蟹 boat");
        assert!(plain_lines(&form.render(60)).contains("✎ on the 蟹 boat"));
        assert_eq!(
            press(&mut form, KeyCode::Enter),
            AskOutcome::Answered("Toppings?: cheese, pineapple\nWhere?: on the 蟹 boat".into())
        );
        assert_eq!(form.summary(80).len(), 2);
    }

    #[test]
    fn esc_dismisses_and_leaves_the_text_field_first() {
        let mut form = form(vec![question("Colour?", &["red"], false)]);
        press(&mut form, KeyCode::Char('2'));
        press(&mut form, KeyCode::Enter);
        assert_eq!(press(&mut form, KeyCode::Esc), AskOutcome::Pending);
        assert_eq!(press(&mut form, KeyCode::Esc), AskOutcome::Cancelled);

        let mut free = form_without_options();
        type_text(&mut free, "x");
        assert_eq!(press(&mut free, KeyCode::Esc), AskOutcome::Cancelled);
    }

    fn form_without_options() -> AskForm {
        form(vec![question("Name?", &[], false)])
    }

    #[test]
    fn a_question_without_options_is_a_text_field() {
        let mut form = form_without_options();
        assert_eq!(
            press(&mut form, KeyCode::Enter),
            AskOutcome::Pending,
            "empty answers are not sent"
        );
        type_text(&mut form, "Ferris");
        assert_eq!(
            press(&mut form, KeyCode::Enter),
            AskOutcome::Answered("Ferris".into())
        );
    }
}
