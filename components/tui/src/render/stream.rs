//! Text that arrives in pieces, shown as it arrives.
//!
//! A terminal cannot take back what scrolled away, so streamed output is
//! split in two: lines that are *final* (printed once, for good) and a *live*
//! tail that is erased and redrawn on every piece. For Markdown the unit is
//! the block: a paragraph, list, table or code block may still change
//! while it is being written (a table's columns widen, a list renumbers),
//! so it stays live until the text has moved past it — a blank line followed
//! by an unindented line, a closed code fence, or a heading line. A block
//! taller than the live area gives up its top rows for good, so the live
//! area never outgrows the screen.

use crate::render::markdown;
use crate::text::wrap::{Wrap, wrap};
use crate::text::{Line, Span, Style, sanitize};

/// What to show after a piece arrived: lines to print for good, then the
/// live tail (replacing the previous tail).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Frame {
    pub commit: Vec<Line>,
    pub live: Vec<Line>,
}

impl Frame {
    pub fn commit(lines: Vec<Line>) -> Self {
        Self {
            commit: lines,
            live: Vec::new(),
        }
    }

    /// This frame followed by `next`: both commits, `next`'s live tail.
    pub fn then(mut self, next: Frame) -> Self {
        self.commit.extend(next.commit);
        self.live = next.live;
        self
    }
}

/// How wide and how tall the output may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub width: usize,
    /// Most rows the live tail may take.
    pub max_live: usize,
}

/// A Markdown text being streamed.
#[derive(Debug, Default)]
pub struct MarkdownStream {
    text: String,
    /// Bytes of `text` already laid out as finished blocks.
    done: usize,
    /// Whether a block was finished (the next one follows a blank line).
    any_block: bool,
    /// Rows of the unfinished tail already printed for good.
    tail_printed: usize,
}

impl MarkdownStream {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// The text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Adds a piece and says what to print.
    pub fn push(&mut self, piece: &str, layout: Layout) -> Frame {
        self.text.push_str(piece);
        let mut frame = Frame::default();
        let end = stable_end(&self.text, self.done);
        if end > self.done {
            let lines = self.block_lines(self.done, end, layout.width);
            if !lines.is_empty() {
                self.any_block = true;
            }
            frame
                .commit
                .extend(lines.into_iter().skip(self.tail_printed));
            self.done = end;
            self.tail_printed = 0;
        }
        let tail = self.block_lines(self.done, self.text.len(), layout.width);
        let shown = tail.len().saturating_sub(self.tail_printed);
        let max_live = layout.max_live.max(1);
        if shown > max_live {
            let extra = shown - max_live;
            frame.commit.extend(
                tail[self.tail_printed..self.tail_printed + extra]
                    .iter()
                    .cloned(),
            );
            self.tail_printed += extra;
        }
        frame.live = tail.into_iter().skip(self.tail_printed).collect();
        frame
    }

    /// Finishes the text: everything not yet final, for good.
    pub fn finish(&mut self, layout: Layout) -> Vec<Line> {
        let lines = self.block_lines(self.done, self.text.len(), layout.width);
        let lines = lines.into_iter().skip(self.tail_printed).collect();
        self.done = self.text.len();
        self.tail_printed = 0;
        self.any_block = true;
        lines
    }

    fn block_lines(&self, start: usize, end: usize, width: usize) -> Vec<Line> {
        let mut lines = markdown::render(&self.text[start..end], width);
        if !lines.is_empty() && self.any_block {
            lines.insert(0, Line::blank());
        }
        lines
    }
}

/// The end of the last complete block in `text` after `from` (a block
/// boundary itself), or `from` when there is none yet.
fn stable_end(text: &str, from: usize) -> usize {
    let mut end = from;
    let mut fence: Option<(char, usize)> = None;
    let mut after_blank = false;
    let mut pos = from;
    while let Some(newline) = text[pos..].find('\n') {
        let line = &text[pos..pos + newline];
        let next = pos + newline + 1;
        if let Some((marker, len)) = fence {
            if is_fence_close(line, marker, len) {
                fence = None;
                end = next;
            }
            pos = next;
            continue;
        }
        let starts_unindented = line.chars().next().is_some_and(|c| !c.is_whitespace());
        if after_blank && starts_unindented {
            end = pos;
        }
        if line.trim().is_empty() {
            after_blank = true;
            pos = next;
            continue;
        }
        after_blank = false;
        if let Some(open) = fence_open(line) {
            fence = Some(open);
        } else if starts_unindented && is_heading(line) {
            end = next;
        }
        pos = next;
    }
    // A blank line followed by the start of an unindented line.
    if fence.is_none()
        && after_blank
        && text[pos..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace())
    {
        end = pos;
    }
    end
}

fn fence_open(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    if len < 3 {
        return None;
    }
    if marker == '`' && trimmed[len..].contains('`') {
        return None;
    }
    Some((marker, len))
}

fn is_fence_close(line: &str, marker: char, len: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let run = trimmed.chars().take_while(|c| *c == marker).count();
    run >= len && trimmed[run * marker.len_utf8()..].trim().is_empty()
}

fn is_heading(line: &str) -> bool {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes) && line[hashes..].chars().next().is_none_or(|c| c == ' ')
}

/// Plain text being streamed (thinking): final line by line, the line being
/// written live.
#[derive(Debug)]
pub(crate) struct TextStream {
    text: String,
    done: usize,
    style: Style,
    prefix: Line,
    tail_printed: usize,
}

impl TextStream {
    pub(crate) fn new(style: Style, prefix: Line) -> Self {
        Self {
            text: String::new(),
            done: 0,
            style,
            prefix,
            tail_printed: 0,
        }
    }

    pub(crate) fn push(&mut self, piece: &str, layout: Layout) -> Frame {
        self.text.push_str(&sanitize(piece));
        let mut frame = Frame::default();
        if let Some(newline) = self.text[self.done..].rfind('\n') {
            let end = self.done + newline + 1;
            let lines = self.lines(self.done, end, layout.width);
            frame
                .commit
                .extend(lines.into_iter().skip(self.tail_printed));
            self.done = end;
            self.tail_printed = 0;
        }
        let tail = self.lines(self.done, self.text.len(), layout.width);
        let shown = tail.len().saturating_sub(self.tail_printed);
        if shown > layout.max_live.max(1) {
            let extra = shown - layout.max_live.max(1);
            frame.commit.extend(
                tail[self.tail_printed..self.tail_printed + extra]
                    .iter()
                    .cloned(),
            );
            self.tail_printed += extra;
        }
        frame.live = tail.into_iter().skip(self.tail_printed).collect();
        frame
    }

    pub(crate) fn finish(&mut self, layout: Layout) -> Vec<Line> {
        let lines = self.lines(self.done, self.text.len(), layout.width);
        let lines = lines.into_iter().skip(self.tail_printed).collect();
        self.done = self.text.len();
        self.tail_printed = 0;
        lines
    }

    fn lines(&self, start: usize, end: usize, width: usize) -> Vec<Line> {
        let text = self.text[start..end].trim_end_matches('\n');
        if text.is_empty() {
            return Vec::new();
        }
        let options = Wrap::words(width).prefixed(self.prefix.clone());
        wrap(&[Span::new(text, self.style)], &options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::styled::plain_lines;

    const LAYOUT: Layout = Layout {
        width: 40,
        max_live: 10,
    };

    /// Streams `text` in pieces of `size` chars and returns everything
    /// committed, in order, plus the final commit.
    fn stream_in_pieces(text: &str, size: usize, layout: Layout) -> Vec<Line> {
        let mut stream = MarkdownStream::new();
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            let frame = stream.push(&piece, layout);
            assert!(frame.live.len() <= layout.max_live);
            out.extend(frame.commit);
        }
        out.extend(stream.finish(layout));
        out
    }

    #[test]
    fn block_boundaries() {
        assert_eq!(stable_end("para", 0), 0);
        assert_eq!(
            stable_end("para\n\n", 0),
            0,
            "the next line has not started"
        );
        assert_eq!(stable_end("para\n\nnext", 0), 6);
        assert_eq!(
            stable_end("- a\n\n  still a", 0),
            0,
            "indented continuation"
        );
        assert_eq!(stable_end("# Title\nbody", 0), 8);
        assert_eq!(stable_end("```\ncode\n\nmore\n", 0), 0, "inside a fence");
        assert_eq!(stable_end("```\ncode\n\nmore\n```\nafter", 0), 19);
        assert_eq!(stable_end("````\n```\n````\n", 0), 14);
        assert_eq!(stable_end("a\n\nb\n\nc", 0), 6);
        assert_eq!(stable_end("a\n\nb\n\nc", 3), 6);
    }

    #[test]
    fn streaming_in_any_pieces_prints_what_rendering_at_once_prints() {
        let text = "# Crabs\n\nCrabs are **decapods**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nlet x = 1;\n\nlet y = 2;\n```\n\n- one\n- two\n\n蟹と🦀の話。\n";
        let whole = markdown::render(text, LAYOUT.width);
        for size in [1, 2, 3, 7, 1000] {
            let streamed = stream_in_pieces(text, size, LAYOUT);
            assert_eq!(
                plain_lines(&streamed),
                plain_lines(&whole),
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn the_live_tail_is_redrawn_until_its_block_is_done() {
        let mut stream = MarkdownStream::new();
        let frame = stream.push("Hello **wor", LAYOUT);
        assert!(frame.commit.is_empty());
        assert_eq!(plain_lines(&frame.live), "Hello **wor\n");
        let frame = stream.push("ld**\n\nNext", LAYOUT);
        assert_eq!(plain_lines(&frame.commit), "Hello world\n");
        assert_eq!(plain_lines(&frame.live), "\nNext\n");
    }

    #[test]
    fn a_tall_block_gives_up_its_top_rows_so_the_live_area_stays_small() {
        let layout = Layout {
            width: 10,
            max_live: 2,
        };
        let text = "word ".repeat(40);
        let streamed = stream_in_pieces(&text, 4, layout);
        let whole = markdown::render(&text, layout.width);
        assert_eq!(plain_lines(&streamed), plain_lines(&whole));
    }

    #[test]
    fn thinking_streams_line_by_line() {
        let mut stream = TextStream::new(Style::PLAIN.dim(), Line::plain_text("┊ "));
        let frame = stream.push("first line\nsec", LAYOUT);
        assert_eq!(plain_lines(&frame.commit), "┊ first line\n");
        assert_eq!(plain_lines(&frame.live), "┊ sec\n");
        let frame = stream.push("ond", LAYOUT);
        assert_eq!(plain_lines(&frame.live), "┊ second\n");
        assert_eq!(plain_lines(&stream.finish(LAYOUT)), "┊ second\n");
    }
}
