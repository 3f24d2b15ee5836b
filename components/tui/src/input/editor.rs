//! The input editor: a multi-line buffer with a cursor, driven by key
//! events, drawn as rows.
//!
//! Enter sends; Alt-Enter, Ctrl-J or a trailing `\` before Enter start a
//! new line; a paste keeps its newlines. Up and Down move between lines and,
//! from the first or last line, through the history. The editor is a plain
//! state machine: the terminal layer feeds it keys and draws what
//! [`Editor::render`] returns, and tests do the same without a terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use unicode_segmentation::UnicodeSegmentation;

use super::complete::{Completer, Completion};
use super::history::History;
use crate::text::width::grapheme_width;
use crate::text::{Color, Line, Span, Style};

/// Longest input accepted, in bytes (a frame holds 16 MiB; nobody types
/// more than this).
const MAX_INPUT: usize = 1024 * 1024;

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorAction {
    /// Nothing visible changed.
    None,
    /// The input changed: draw it again.
    Redraw,
    /// Enter: the input, taken out of the editor.
    Submit(String),
    /// Ctrl-C on an empty input.
    Interrupt,
    /// Ctrl-D on an empty input.
    Eof,
    /// Ctrl-L.
    ClearScreen,
}

/// The input being edited.
#[derive(Debug, Default)]
pub struct Editor {
    text: String,
    /// Byte offset, always on a grapheme boundary.
    cursor: usize,
    /// Which history entry is shown (`None`: the draft).
    history_index: Option<usize>,
    draft: String,
    /// Candidates of the last ambiguous completion, shown under the input.
    hint: Vec<String>,
}

impl Editor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.hint.clear();
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.history_index = None;
    }

    /// Inserts text at the cursor (typing or a paste).
    pub fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let text: String = text
            .chars()
            .filter(|c| *c == '\n' || !c.is_control())
            .map(|c| if c == '\t' { ' ' } else { c })
            .collect();
        if self.text.len() + text.len() > MAX_INPUT {
            return;
        }
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
        self.hint.clear();
    }

    /// Handles one key.
    pub fn key(&mut self, key: KeyEvent, history: &History, completer: &Completer) -> EditorAction {
        if key.kind == KeyEventKind::Release {
            return EditorAction::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Char('c') if ctrl => {
                if self.text.is_empty() {
                    return EditorAction::Interrupt;
                }
                self.clear();
            }
            KeyCode::Char('d') if ctrl => {
                if self.text.is_empty() {
                    return EditorAction::Eof;
                }
                self.delete_forward();
            }
            KeyCode::Char('l') if ctrl => return EditorAction::ClearScreen,
            KeyCode::Char('j') if ctrl => self.insert("\n"),
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('b') if ctrl => self.move_left(),
            KeyCode::Char('f') if ctrl => self.move_right(),
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end();
                self.text.replace_range(self.cursor..end, "");
            }
            KeyCode::Char('w') if ctrl => self.delete_word_back(),
            KeyCode::Backspace if alt => self.delete_word_back(),
            KeyCode::Char('p') if ctrl => return self.history_back(history),
            KeyCode::Char('n') if ctrl => return self.history_forward(history),
            KeyCode::Char(_) if ctrl => return EditorAction::None,
            KeyCode::Char(c) => {
                let mut buffer = [0; 4];
                self.insert(c.encode_utf8(&mut buffer));
            }
            KeyCode::Enter if alt || shift => self.insert("\n"),
            KeyCode::Enter => {
                if self.cursor == self.text.len() && self.text.ends_with('\\') {
                    self.text.pop();
                    self.cursor = self.text.len();
                    self.insert("\n");
                } else {
                    let text = std::mem::take(&mut self.text);
                    self.clear();
                    return EditorAction::Submit(text);
                }
            }
            KeyCode::Backspace => self.delete_back(),
            KeyCode::Delete => self.delete_forward(),
            KeyCode::Left => self.move_left(),
            KeyCode::Right => self.move_right(),
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Up => {
                if self.text[..self.cursor].contains('\n') {
                    self.move_vertically(-1);
                } else {
                    return self.history_back(history);
                }
            }
            KeyCode::Down => {
                if self.text[self.cursor..].contains('\n') {
                    self.move_vertically(1);
                } else {
                    return self.history_forward(history);
                }
            }
            KeyCode::Tab => return self.complete(completer),
            _ => return EditorAction::None,
        }
        EditorAction::Redraw
    }

    fn complete(&mut self, completer: &Completer) -> EditorAction {
        let Some(completion) = completer.complete(&self.text, self.cursor) else {
            return EditorAction::None;
        };
        self.apply(&completion);
        EditorAction::Redraw
    }

    fn apply(&mut self, completion: &Completion) {
        let mut replacement = completion.replacement();
        let unique = completion.candidates.len() == 1;
        let at_end = completion.range.end == self.text.len();
        if unique && at_end {
            replacement.push(' ');
        }
        let range = completion.range.clone();
        self.text.replace_range(range.clone(), &replacement);
        self.cursor = range.start + replacement.len();
        self.hint = if unique {
            Vec::new()
        } else {
            completion.candidates.clone()
        };
    }

    fn history_back(&mut self, history: &History) -> EditorAction {
        let index = match self.history_index {
            None if history.is_empty() => return EditorAction::None,
            None => {
                self.draft = self.text.clone();
                history.len() - 1
            }
            Some(0) => return EditorAction::None,
            Some(index) => index - 1,
        };
        self.history_index = Some(index);
        let entry = history.get(index).unwrap_or_default().to_owned();
        self.set_text(&entry);
        EditorAction::Redraw
    }

    fn history_forward(&mut self, history: &History) -> EditorAction {
        let Some(index) = self.history_index else {
            return EditorAction::None;
        };
        if index + 1 < history.len() {
            self.history_index = Some(index + 1);
            let entry = history.get(index + 1).unwrap_or_default().to_owned();
            self.set_text(&entry);
        } else {
            self.history_index = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
        EditorAction::Redraw
    }

    fn previous_boundary(&self) -> usize {
        self.text[..self.cursor]
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(index, _)| index)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .graphemes(true)
            .next()
            .map_or(self.cursor, |g| self.cursor + g.len())
    }

    fn move_left(&mut self) {
        self.cursor = self.previous_boundary();
    }

    fn move_right(&mut self) {
        self.cursor = self.next_boundary();
    }

    fn delete_back(&mut self) {
        let start = self.previous_boundary();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    fn delete_forward(&mut self) {
        let end = self.next_boundary();
        self.text.replace_range(self.cursor..end, "");
    }

    fn delete_word_back(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(index, c)| index + c.len_utf8());
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor]
            .rfind('\n')
            .map_or(0, |index| index + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |index| self.cursor + index)
    }

    /// Moves to the previous (-1) or next (1) line, keeping the column in
    /// graphemes as far as the line allows.
    fn move_vertically(&mut self, direction: i32) {
        let start = self.line_start();
        let column = self.text[start..self.cursor].graphemes(true).count();
        let (line_start, line_end) = if direction < 0 {
            let end = start - 1;
            let begin = self.text[..end].rfind('\n').map_or(0, |index| index + 1);
            (begin, end)
        } else {
            let begin = self.line_end() + 1;
            let end = self.text[begin..]
                .find('\n')
                .map_or(self.text.len(), |index| begin + index);
            (begin, end)
        };
        self.cursor = self.text[line_start..line_end]
            .grapheme_indices(true)
            .nth(column)
            .map_or(line_end, |(index, _)| line_start + index);
    }

    /// Like [`Editor::render`], in at most `max_rows` rows: a window over
    /// the input that keeps the cursor in view (an input taller than the
    /// screen must not overflow the live region).
    pub fn render_window(
        &self,
        prompt: &str,
        width: usize,
        max_rows: usize,
    ) -> (Vec<Line>, (usize, usize)) {
        let (rows, (row, column)) = self.render(prompt, width);
        let max = max_rows.max(1);
        if rows.len() <= max {
            return (rows, (row, column));
        }
        let start = (row + 1).saturating_sub(max).min(rows.len() - max);
        (rows[start..start + max].to_vec(), (row - start, column))
    }

    /// The rows to draw at `width` and where the cursor goes (row, column).
    pub fn render(&self, prompt: &str, width: usize) -> (Vec<Line>, (usize, usize)) {
        let prompt_style = Style::PLAIN.bold().fg(Color::Cyan);
        let indent = " ".repeat(crate::text::display_width(prompt));
        let room = width.saturating_sub(indent.len()).max(2);
        let mut rows = vec![Line::styled(prompt, prompt_style)];
        let mut column = 0;
        let mut cursor = None;
        for (index, grapheme) in self.text.grapheme_indices(true) {
            if index == self.cursor {
                cursor = Some((rows.len() - 1, indent.len() + column));
            }
            if grapheme == "\n" {
                rows.push(Line::styled(indent.clone(), Style::PLAIN));
                column = 0;
                continue;
            }
            let width = grapheme_width(grapheme);
            if column + width > room {
                rows.push(Line::styled(indent.clone(), Style::PLAIN));
                column = 0;
                if index == self.cursor {
                    cursor = Some((rows.len() - 1, indent.len()));
                }
            }
            if let Some(row) = rows.last_mut() {
                row.push(Span::plain(grapheme));
            }
            column += width;
        }
        let cursor = cursor.unwrap_or((rows.len() - 1, indent.len() + column));
        if !self.hint.is_empty() {
            let hint = self.hint.join("  ");
            rows.push(Line::styled(
                crate::text::truncate(&hint, width).into_owned(),
                Style::PLAIN.dim(),
            ));
        }
        (rows, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::styled::plain_lines;

    fn press(editor: &mut Editor, code: KeyCode, modifiers: KeyModifiers) -> EditorAction {
        editor.key(
            KeyEvent::new(code, modifiers),
            &History::in_memory(),
            &Completer::default(),
        )
    }

    fn type_text(editor: &mut Editor, text: &str) {
        for c in text.chars() {
            press(editor, KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    #[test]
    fn enter_submits_and_alt_enter_or_backslash_add_lines() {
        let mut editor = Editor::new();
        type_text(&mut editor, "one");
        press(&mut editor, KeyCode::Enter, KeyModifiers::ALT);
        type_text(&mut editor, "two\\");
        press(&mut editor, KeyCode::Enter, KeyModifiers::NONE);
        type_text(&mut editor, "three");
        press(&mut editor, KeyCode::Char('j'), KeyModifiers::CONTROL);
        type_text(&mut editor, "four");
        let action = press(&mut editor, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(action, EditorAction::Submit("one\ntwo\nthree\nfour".into()));
        assert!(editor.is_empty());
    }

    #[test]
    fn ctrl_c_clears_then_interrupts_and_ctrl_d_quits_only_when_empty() {
        let mut editor = Editor::new();
        type_text(&mut editor, "abc");
        assert_eq!(
            press(&mut editor, KeyCode::Char('c'), KeyModifiers::CONTROL),
            EditorAction::Redraw
        );
        assert!(editor.is_empty());
        assert_eq!(
            press(&mut editor, KeyCode::Char('c'), KeyModifiers::CONTROL),
            EditorAction::Interrupt
        );
        type_text(&mut editor, "x");
        press(&mut editor, KeyCode::Left, KeyModifiers::NONE);
        assert_eq!(
            press(&mut editor, KeyCode::Char('d'), KeyModifiers::CONTROL),
            EditorAction::Redraw
        );
        assert_eq!(
            press(&mut editor, KeyCode::Char('d'), KeyModifiers::CONTROL),
            EditorAction::Eof
        );
    }

    #[test]
    fn editing_moves_by_grapheme_never_inside_a_character() {
        let mut editor = Editor::new();
        type_text(&mut editor, "a蟹🦀e\u{301}");
        press(&mut editor, KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(editor.text(), "a蟹🦀");
        press(&mut editor, KeyCode::Left, KeyModifiers::NONE);
        press(&mut editor, KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(editor.text(), "a🦀");
        press(&mut editor, KeyCode::Home, KeyModifiers::NONE);
        press(&mut editor, KeyCode::Delete, KeyModifiers::NONE);
        assert_eq!(editor.text(), "🦀");
        type_text(&mut editor, "x ");
        press(&mut editor, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(editor.text(), "🦀");
    }

    #[test]
    fn up_and_down_walk_lines_then_history() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::load(dir.path().join("h"));
        history.add("old one").unwrap();
        history.add("old\ntwo").unwrap();
        let completer = Completer::default();
        let mut editor = Editor::new();
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        editor.insert("draft");
        editor.key(key(KeyCode::Up), &history, &completer);
        assert_eq!(editor.text(), "old\ntwo");
        // The cursor is on the last line: Up moves to the first line first.
        editor.key(key(KeyCode::Up), &history, &completer);
        assert_eq!(editor.text(), "old\ntwo");
        editor.key(key(KeyCode::Up), &history, &completer);
        assert_eq!(editor.text(), "old one");
        editor.key(key(KeyCode::Down), &history, &completer);
        assert_eq!(editor.text(), "old\ntwo");
        editor.key(key(KeyCode::Down), &history, &completer);
        editor.key(key(KeyCode::Down), &history, &completer);
        assert_eq!(editor.text(), "draft");
    }

    #[test]
    fn tab_completes_and_lists_ambiguous_candidates() {
        let completer = Completer {
            skills: vec!["commit".into()],
            agents: vec![],
        };
        let history = History::in_memory();
        let mut editor = Editor::new();
        editor.insert("/co");
        editor.key(
            KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE),
            &history,
            &completer,
        );
        assert_eq!(editor.text(), "/com");
        let (rows, _) = editor.render("› ", 40);
        assert_eq!(plain_lines(&rows), "› /com\n/commit  /compact\n");
        editor.insert("pa");
        editor.key(
            KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE),
            &history,
            &completer,
        );
        assert_eq!(editor.text(), "/compact ");
    }

    #[test]
    fn rendering_wraps_by_width_and_places_the_cursor() {
        let mut editor = Editor::new();
        editor.insert("蟹蟹蟹 ab\nsecond");
        let (rows, cursor) = editor.render("› ", 8);
        assert_eq!(plain_lines(&rows), "› 蟹蟹蟹\n   ab\n  second\n");
        assert_eq!(cursor, (2, 8));
        editor.cursor = 0;
        assert_eq!(editor.render("› ", 8).1, (0, 2));
    }

    #[test]
    fn a_tall_input_is_shown_through_a_window_around_the_cursor() {
        let mut editor = Editor::new();
        editor.insert("1\n2\n3\n4\n5");
        let (rows, cursor) = editor.render_window("› ", 20, 2);
        assert_eq!(plain_lines(&rows), "  4\n  5\n");
        assert_eq!(cursor, (1, 3));
        editor.cursor = 0;
        let (rows, cursor) = editor.render_window("› ", 20, 2);
        assert_eq!(plain_lines(&rows), "› 1\n  2\n");
        assert_eq!(cursor, (0, 2));
    }
}
