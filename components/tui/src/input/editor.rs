//! The input editor: a multi-line buffer with a cursor, driven by key
//! events, drawn as rows.
//!
//! Enter sends; Alt-Enter, Ctrl-J or a trailing `\` before Enter start a
//! new line; a paste keeps its newlines. The input wraps between words to
//! the screen's width ([`Editor::set_width`]); Up and Down move between the
//! rows as they are shown and, from the first or last row, through the
//! history. Alt-b and Alt-f (or Ctrl-Left and Ctrl-Right) move by words,
//! Alt-d deletes the next word. The editor is a plain state machine: the
//! terminal layer feeds it keys and draws what [`Editor::render`] returns,
//! and tests do the same without a terminal.

use std::ops::Range;

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
pub(crate) enum EditorAction {
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
pub(crate) struct Editor {
    text: String,
    /// Byte offset, always on a grapheme boundary.
    cursor: usize,
    /// Which history entry is shown (`None`: the draft).
    history_index: Option<usize>,
    draft: String,
    /// Candidates of the last ambiguous completion, shown under the input.
    hint: Vec<String>,
    /// Columns the text may use on a row (after the prompt); 0 until
    /// [`Editor::set_width`] says.
    room: usize,
}

/// Columns a row of text gets when the editor was never told its width.
const DEFAULT_ROOM: usize = 78;

impl Editor {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    #[cfg(test)]
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Lays the input out for a prompt of `prompt_width` columns on a line
    /// of `width` columns.
    pub(crate) fn set_width(&mut self, prompt_width: usize, width: usize) {
        self.room = width.saturating_sub(prompt_width).max(2);
    }

    fn room(&self) -> usize {
        if self.room == 0 {
            DEFAULT_ROOM
        } else {
            self.room
        }
    }

    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.hint.clear();
    }

    pub(crate) fn clear(&mut self) {
        self.set_text("");
        self.history_index = None;
    }

    /// Inserts text at the cursor (typing or a paste).
    pub(crate) fn insert(&mut self, text: &str) {
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
    pub(crate) fn key(
        &mut self,
        key: KeyEvent,
        history: &History,
        completer: &Completer,
    ) -> EditorAction {
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
            KeyCode::Char('b') if alt => self.cursor = self.word_start_before(),
            KeyCode::Char('f') if alt => self.cursor = self.word_end_after(),
            KeyCode::Char('d') if alt => {
                let end = self.word_end_after();
                self.text.replace_range(self.cursor..end, "");
            }
            // Other Alt chords are not text.
            KeyCode::Char(_) if alt => return EditorAction::None,
            KeyCode::Left if ctrl || alt => self.cursor = self.word_start_before(),
            KeyCode::Right if ctrl || alt => self.cursor = self.word_end_after(),
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
                if !self.move_vertically(-1) {
                    return self.history_back(history);
                }
            }
            KeyCode::Down => {
                if !self.move_vertically(1) {
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

    /// The start of the word before the cursor (skipping spaces first).
    fn word_start_before(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(index, c)| index + c.len_utf8())
    }

    /// The end of the word after the cursor (skipping spaces first).
    fn word_end_after(&self) -> usize {
        let after = &self.text[self.cursor..];
        let skipped = after.len() - after.trim_start().len();
        let word = &after[skipped..];
        let end = word.find(char::is_whitespace).unwrap_or(word.len());
        self.cursor + skipped + end
    }

    /// The rows the text is shown in, as byte ranges (without their `\n`).
    fn rows(&self) -> Vec<Range<usize>> {
        layout(&self.text, self.room())
    }

    /// The row the cursor is on and its column there.
    fn cursor_place(&self, rows: &[Range<usize>]) -> (usize, usize) {
        place(&self.text, rows, self.cursor)
    }

    /// Moves to the row above (-1) or below (1) as shown, keeping the
    /// column as far as that row allows; `false` on the first (last) row.
    fn move_vertically(&mut self, direction: i32) -> bool {
        let rows = self.rows();
        let (row, column) = self.cursor_place(&rows);
        let target = match direction {
            -1 if row > 0 => row - 1,
            1 if row + 1 < rows.len() => row + 1,
            _ => return false,
        };
        let range = rows[target].clone();
        let mut offset = range.start;
        let mut width = 0;
        for (index, grapheme) in self.text[range.clone()].grapheme_indices(true) {
            let next = width + grapheme_width(grapheme);
            if next > column {
                break;
            }
            width = next;
            offset = range.start + index + grapheme.len();
        }
        // The end of a row the next one continues is shown on the next
        // row: stay before the row's last character instead.
        if offset == range.end
            && offset > range.start
            && rows
                .get(target + 1)
                .is_some_and(|next| next.start == range.end)
        {
            offset = self.text[range.clone()]
                .grapheme_indices(true)
                .next_back()
                .map_or(range.start, |(index, _)| range.start + index);
        }
        self.cursor = offset;
        true
    }

    /// Like [`Editor::render`], in at most `max_rows` rows: a window over
    /// the input that keeps the cursor in view (an input taller than the
    /// screen must not overflow the live region).
    pub(crate) fn render_window(
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

    /// The rows to draw after `prompt` at `width` and where the cursor goes
    /// (row, column).
    pub(crate) fn render(&self, prompt: &str, width: usize) -> (Vec<Line>, (usize, usize)) {
        let prompt_style = Style::PLAIN.bold().fg(Color::Cyan);
        let indent = " ".repeat(crate::text::display_width(prompt));
        let room = width.saturating_sub(indent.len()).max(2);
        let rows_ranges = layout(&self.text, room);
        let mut rows: Vec<Line> = rows_ranges
            .iter()
            .enumerate()
            .map(|(index, range)| {
                let mut line = if index == 0 {
                    Line::styled(prompt, prompt_style)
                } else {
                    Line::styled(indent.clone(), Style::PLAIN)
                };
                let mut text = &self.text[range.clone()];
                if crate::text::display_width(text) > room {
                    // The space a wrapped row ends with hangs past the edge:
                    // it is not drawn (no row reaches the last column).
                    text = text.trim_end();
                }
                if !text.is_empty() {
                    line.push(Span::plain(text));
                }
                line
            })
            .collect();
        let (row, column) = place(&self.text, &rows_ranges, self.cursor);
        let cursor = (row, indent.len() + column);
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

/// The rows `text` is shown in at `room` columns, as byte ranges: a new row
/// at each `\n`, and where a row is full — between words when the row has a
/// space to break at (the space stays at the end of its row), else between
/// characters.
fn layout(text: &str, room: usize) -> Vec<Range<usize>> {
    let room = room.max(2);
    let mut rows = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        let mut start = line_start;
        let mut column = 0;
        // The byte after the last space of the row, and the columns up to it.
        let mut last_break: Option<(usize, usize)> = None;
        for (index, grapheme) in line.grapheme_indices(true) {
            let at = line_start + index;
            let width = grapheme_width(grapheme);
            let space = grapheme.trim().is_empty();
            if space && column + width > room {
                // A space that does not fit ends its row, hanging past it.
                rows.push(start..at + grapheme.len());
                start = at + grapheme.len();
                column = 0;
                last_break = None;
                continue;
            }
            if column + width > room && at > start {
                match last_break.filter(|(offset, _)| *offset > start && *offset <= at) {
                    Some((offset, columns)) => {
                        rows.push(start..offset);
                        start = offset;
                        column -= columns;
                    }
                    _ => {
                        rows.push(start..at);
                        start = at;
                        column = 0;
                    }
                }
                last_break = None;
            }
            column += width;
            if space {
                last_break = Some((at + grapheme.len(), column));
            }
        }
        rows.push(start..line_start + line.len());
        line_start += line.len() + 1;
    }
    rows
}

/// The row holding byte `cursor` and the column it is at. At a row's end,
/// the cursor is on the next row when that row continues the same line.
fn place(text: &str, rows: &[Range<usize>], cursor: usize) -> (usize, usize) {
    for (index, range) in rows.iter().enumerate() {
        let continues = rows
            .get(index + 1)
            .is_some_and(|next| next.start == range.end);
        if cursor >= range.start && (cursor < range.end || (cursor == range.end && !continues)) {
            let column = crate::text::display_width(&text[range.start..cursor]);
            return (index, column);
        }
    }
    let last = rows.len().saturating_sub(1);
    let column = rows
        .last()
        .map_or(0, |range| crate::text::display_width(&text[range.clone()]));
    (last, column)
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
        assert_eq!(plain_lines(&rows), "› 蟹蟹蟹\n  ab\n  second\n");
        assert_eq!(cursor, (2, 8));
        editor.cursor = 0;
        assert_eq!(editor.render("› ", 8).1, (0, 2));
    }

    #[test]
    fn input_wraps_between_words_and_long_words_between_characters() {
        let mut editor = Editor::new();
        editor.insert("the quick brown fox jumps");
        let (rows, cursor) = editor.render("› ", 14);
        assert_eq!(plain_lines(&rows), "› the quick\n  brown fox\n  jumps\n");
        assert_eq!(cursor, (2, 7));
        editor.set_text("abcdefghijklmnopqrstuvwxyz");
        let (rows, _) = editor.render("› ", 12);
        assert_eq!(plain_lines(&rows), "› abcdefghij\n  klmnopqrst\n  uvwxyz\n");
        // The cursor after a full row's last character is on the next row.
        editor.cursor = 10;
        assert_eq!(editor.render("› ", 12).1, (1, 2));
    }

    #[test]
    fn up_and_down_move_through_wrapped_rows_before_the_history() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::load(dir.path().join("h"));
        history.add("from history").unwrap();
        let completer = Completer::default();
        let mut editor = Editor::new();
        editor.set_width(2, 14);
        editor.insert("the quick brown fox jumps");
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        editor.key(key(KeyCode::Up), &history, &completer);
        assert_eq!(editor.text(), "the quick brown fox jumps");
        assert_eq!(editor.cursor_place(&editor.rows()), (1, 5));
        assert_eq!(&editor.text()[editor.cursor()..], " fox jumps");
        editor.key(key(KeyCode::Up), &history, &completer);
        assert_eq!(editor.cursor_place(&editor.rows()), (0, 5));
        editor.key(key(KeyCode::Down), &history, &completer);
        editor.key(key(KeyCode::Down), &history, &completer);
        assert_eq!(editor.cursor_place(&editor.rows()), (2, 5));
        editor.key(key(KeyCode::Up), &history, &completer);
        editor.key(key(KeyCode::Up), &history, &completer);
        editor.key(key(KeyCode::Up), &history, &completer);
        assert_eq!(editor.text(), "from history");
    }

    #[test]
    fn alt_b_and_alt_f_move_by_words_and_alt_letters_are_not_typed() {
        let mut editor = Editor::new();
        type_text(&mut editor, "one two  three");
        press(&mut editor, KeyCode::Char('b'), KeyModifiers::ALT);
        assert_eq!(&editor.text()[editor.cursor()..], "three");
        press(&mut editor, KeyCode::Char('b'), KeyModifiers::ALT);
        assert_eq!(&editor.text()[editor.cursor()..], "two  three");
        press(&mut editor, KeyCode::Char('f'), KeyModifiers::ALT);
        assert_eq!(&editor.text()[editor.cursor()..], "  three");
        press(&mut editor, KeyCode::Char('d'), KeyModifiers::ALT);
        assert_eq!(editor.text(), "one two");
        press(&mut editor, KeyCode::Left, KeyModifiers::CONTROL);
        assert_eq!(&editor.text()[editor.cursor()..], "two");
        press(&mut editor, KeyCode::Char('x'), KeyModifiers::ALT);
        assert_eq!(editor.text(), "one two");
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
