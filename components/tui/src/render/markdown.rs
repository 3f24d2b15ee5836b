//! Markdown to terminal lines.
//!
//! [`render`] parses CommonMark with the GitHub extensions (tables,
//! strikethrough, task lists) through `pulldown-cmark` and lays it out at a
//! width: headings bold and coloured, emphasis as italic/bold/strike, inline
//! code coloured, lists with bullets or numbers and hanging indents, block
//! quotes behind a bar, code blocks framed with their language shown, tables
//! with box-drawing borders that shrink and wrap their cells to fit, links
//! with their address after the text. Text is sanitised first, so nothing a
//! model writes can reach the terminal as a control sequence.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, display_width, sanitize};

/// Renders `markdown` into lines at most `width` columns wide.
pub fn render(markdown: &str, width: usize) -> Vec<Line> {
    let text = sanitize(markdown);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer::new(width.max(1));
    for event in Parser::new_ext(&text, options) {
        renderer.event(event);
    }
    renderer.finish()
}

const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];
const QUOTE_BAR: &str = "▎ ";

fn frame() -> Style {
    Style::PLAIN.fg(Color::Grey)
}

fn heading_style(level: HeadingLevel) -> Style {
    match level {
        HeadingLevel::H1 => Style::PLAIN.bold().underline().fg(Color::Magenta),
        HeadingLevel::H2 => Style::PLAIN.bold().fg(Color::Magenta),
        _ => Style::PLAIN.bold(),
    }
}

/// A block that indents the lines inside it.
enum Container {
    Quote,
    Item { marker: String, pending: bool },
}

struct CodeBlock {
    language: String,
    text: String,
}

#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span>>>,
    header_rows: usize,
}

struct Renderer {
    width: usize,
    lines: Vec<Line>,
    containers: Vec<Container>,
    /// The next number of each open list (`None` for bullet lists).
    lists: Vec<Option<u64>>,
    inline: Vec<Span>,
    styles: Vec<Style>,
    /// Where each open link's text starts in `inline`, and its address.
    links: Vec<(usize, String)>,
    code: Option<CodeBlock>,
    table: Option<Table>,
    /// A block ended: the next one starts after a blank line.
    pending_blank: bool,
}

impl Renderer {
    fn new(width: usize) -> Self {
        Self {
            width,
            lines: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            inline: Vec::new(),
            styles: vec![Style::PLAIN],
            links: Vec::new(),
            code: None,
            table: None,
            pending_blank: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, change: impl FnOnce(Style) -> Style) {
        let style = change(self.style());
        self.styles.push(style);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn text(&mut self, text: &str, style: Style) {
        if let Some(code) = &mut self.code {
            code.text.push_str(text);
            return;
        }
        push_span(&mut self.inline, Span::new(text, style));
    }

    /// The most columns the containers' marks may take: half the width,
    /// so deep nesting in a narrow terminal still leaves room for the text
    /// (the outermost marks go first).
    fn prefix_limit(&self) -> usize {
        self.width / 2
    }

    /// The prefixes of a block's first line and of the lines after it.
    /// Each container adds its mark; when they would take more than
    /// [`Self::prefix_limit`], the outermost are left out.
    fn prefixes(&mut self) -> (Line, Line) {
        let mut marks = Vec::with_capacity(self.containers.len());
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    marks.push((Span::new(QUOTE_BAR, frame()), Span::new(QUOTE_BAR, frame())));
                }
                Container::Item { marker, pending } => {
                    let indent = " ".repeat(display_width(marker));
                    let first = if *pending {
                        *pending = false;
                        Span::new(marker.clone(), Style::PLAIN.fg(Color::Cyan))
                    } else {
                        Span::plain(indent.clone())
                    };
                    marks.push((first, Span::plain(indent)));
                }
            }
        }
        let kept = innermost(&marks, self.prefix_limit(), |(first, _)| {
            display_width(&first.text)
        });
        let mut first = Line::blank();
        let mut rest = Line::blank();
        for (first_mark, rest_mark) in marks.drain(kept..) {
            first.push(first_mark);
            rest.push(rest_mark);
        }
        (first, rest)
    }

    /// The blank line between blocks: quote bars only, no markers.
    fn separate(&mut self) {
        if !self.pending_blank {
            return;
        }
        self.pending_blank = false;
        if self.lines.is_empty() {
            return;
        }
        let bars = self
            .containers
            .iter()
            .filter(|container| matches!(container, Container::Quote))
            .count();
        let shown = bars.min(self.prefix_limit() / display_width(QUOTE_BAR));
        let mut line = Line::blank();
        for _ in 0..shown {
            line.push(Span::new(QUOTE_BAR.trim_end(), frame()));
        }
        self.lines.push(line);
    }

    /// Lays out the collected inline text as one block.
    fn flush_inline(&mut self) {
        let spans = std::mem::take(&mut self.inline);
        let spans = trim_spans(spans);
        if spans.is_empty() {
            return;
        }
        self.separate();
        let (first, rest) = self.prefixes();
        let options = Wrap::words(self.width).with_first(first).with_rest(rest);
        self.lines.extend(wrap(&spans, &options));
    }

    fn start_block(&mut self) {
        self.flush_inline();
        self.separate();
    }

    fn end_block(&mut self) {
        self.flush_inline();
        self.pending_blank = true;
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                let style = self.style();
                self.text(&text, style);
            }
            Event::Code(code) => {
                let style = self.style().fg(Color::Cyan);
                self.text(&code, style);
            }
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                let style = self.style().italic();
                self.text(&math, style);
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style().dim();
                self.text(&html, style);
            }
            Event::FootnoteReference(name) => {
                let style = self.style().dim();
                self.text(&format!("[^{name}]"), style);
            }
            Event::SoftBreak => {
                let style = self.style();
                self.text(" ", style);
            }
            Event::HardBreak => {
                let style = self.style();
                self.text("\n", style);
            }
            Event::Rule => {
                self.start_block();
                let (first, _) = self.prefixes();
                let room = self.width.saturating_sub(first.width()).max(1);
                let mut line = first;
                line.push(Span::new("─".repeat(room), frame()));
                self.lines.push(line);
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => {
                let marker = if done { "[x] " } else { "[ ] " };
                self.text(marker, Style::PLAIN.fg(Color::Cyan));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::DefinitionListTitle => self.start_block(),
            Tag::Heading { .. } => self.start_block(),
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBlock {
                    language,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                // A nested list ends its item's first paragraph.
                self.flush_inline();
                if self.lists.is_empty() {
                    self.separate();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_inline();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(next)) => {
                        let marker = format!("{next}. ");
                        *next += 1;
                        marker
                    }
                    _ => BULLETS[depth % BULLETS.len()].to_owned(),
                };
                self.containers.push(Container::Item {
                    marker,
                    pending: true,
                });
            }
            Tag::DefinitionListDefinition => {
                self.flush_inline();
                self.containers.push(Container::Item {
                    marker: "  ".into(),
                    pending: false,
                });
            }
            Tag::FootnoteDefinition(name) => {
                self.start_block();
                let style = Style::PLAIN.dim();
                self.text(&format!("[^{name}]: "), style);
            }
            Tag::Table(alignments) => {
                self.start_block();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(Style::italic),
            Tag::Strong => self.push_style(Style::bold),
            Tag::Strikethrough => self.push_style(Style::strike),
            Tag::Superscript | Tag::Subscript => self.push_style(|style| style),
            Tag::Link { dest_url, .. } => {
                self.links.push((self.inline.len(), dest_url.to_string()));
                self.push_style(|style| style.underline().fg(Color::Blue));
            }
            Tag::Image { dest_url, .. } => {
                self.links.push((self.inline.len(), dest_url.to_string()));
                let style = self.style().dim();
                self.text("[image: ", style);
                self.push_style(Style::dim);
            }
            Tag::MetadataBlock(_) | Tag::DefinitionList => self.start_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::DefinitionListTitle => self.end_block(),
            TagEnd::MetadataBlock(_) | TagEnd::DefinitionList | TagEnd::FootnoteDefinition => {
                self.end_block()
            }
            TagEnd::Heading(level) => {
                let style = heading_style(level);
                for span in &mut self.inline {
                    span.style = Style {
                        bold: true,
                        underline: style.underline || span.style.underline,
                        fg: span.style.fg.or(style.fg),
                        ..span.style
                    };
                }
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.code_block(code);
                }
                self.pending_blank = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.pending_blank = true;
                }
            }
            TagEnd::Item | TagEnd::DefinitionListDefinition => {
                self.flush_inline();
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table(table);
                }
                self.pending_blank = true;
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let cell = trim_spans(std::mem::take(&mut self.inline));
                if let Some(row) = self.table.as_mut().and_then(|table| table.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                if let Some((start, url)) = self.links.pop() {
                    let text: String = self.inline[start.min(self.inline.len())..]
                        .iter()
                        .map(|span| span.text.as_str())
                        .collect();
                    let url_shown = url.strip_prefix("mailto:").unwrap_or(&url);
                    if !url.is_empty() && !url.starts_with('#') && text != url_shown {
                        let style = Style::PLAIN.dim();
                        self.text(&format!(" ({url})"), style);
                    }
                }
            }
            TagEnd::Image => {
                self.pop_style();
                self.links.pop();
                let style = self.style().dim();
                self.text("]", style);
            }
        }
    }

    fn code_block(&mut self, code: CodeBlock) {
        let (first, rest) = self.prefixes();
        let mut header = first;
        header.push(Span::new("┌─", frame()));
        let room = self.width.saturating_sub(header.width() + 1);
        if !code.language.is_empty() && room > 0 {
            let language = crate::text::truncate(&code.language, room).into_owned();
            header.push(Span::new(" ", frame()));
            header.push(Span::new(language, Style::PLAIN.fg(Color::Grey).bold()));
        }
        self.lines.push(header);
        let mut bar = rest.clone();
        bar.push(Span::new("│ ", frame()));
        let body = code.text.strip_suffix('\n').unwrap_or(&code.text);
        let options = Wrap::words(self.width).prefixed(bar).clusters();
        for source_line in body.split('\n') {
            self.lines
                .extend(wrap(&[Span::plain(source_line)], &options));
        }
        let mut footer = rest;
        footer.push(Span::new("└─", frame()));
        self.lines.push(footer);
    }

    fn table(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let (first, rest) = self.prefixes();
        let borders = 3 * columns + 1;
        let room = self.width.saturating_sub(rest.width());
        if room < borders + columns * 3 {
            return self.table_as_rows(table, first, rest);
        }
        let natural: Vec<usize> = (0..columns)
            .map(|column| {
                table
                    .rows
                    .iter()
                    .filter_map(|row| row.get(column))
                    .map(|cell| cell.iter().map(|span| display_width(&span.text)).sum())
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        let widths = fit_columns(&natural, room - borders);
        let rule = |left: &str, middle: &str, right: &str| {
            let mut text = String::from(left);
            for (index, width) in widths.iter().enumerate() {
                if index > 0 {
                    text.push_str(middle);
                }
                text.push_str(&"─".repeat(width + 2));
            }
            text.push_str(right);
            text
        };
        let push_rule = |lines: &mut Vec<Line>, prefix: &Line, text: String| {
            let mut line = prefix.clone();
            line.push(Span::new(text, frame()));
            lines.push(line);
        };
        push_rule(&mut self.lines, &first, rule("┌", "┬", "┐"));
        for (index, row) in table.rows.iter().enumerate() {
            if index > 0 && index == table.header_rows {
                push_rule(&mut self.lines, &rest, rule("├", "┼", "┤"));
            }
            let header = index < table.header_rows;
            let cells: Vec<Vec<Line>> = widths
                .iter()
                .enumerate()
                .map(|(column, width)| {
                    let mut spans = row.get(column).cloned().unwrap_or_default();
                    if header {
                        for span in &mut spans {
                            span.style = span.style.bold();
                        }
                    }
                    wrap(&spans, &Wrap::words(*width))
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for row_line in 0..height {
                let mut line = rest.clone();
                line.push(Span::new("│", frame()));
                for (column, width) in widths.iter().enumerate() {
                    let cell = cells[column].get(row_line).cloned().unwrap_or_default();
                    let alignment = table
                        .alignments
                        .get(column)
                        .copied()
                        .unwrap_or(Alignment::None);
                    let gap = width.saturating_sub(cell.width());
                    let (left, right) = match alignment {
                        Alignment::Right => (gap, 0),
                        Alignment::Center => (gap / 2, gap - gap / 2),
                        Alignment::Left | Alignment::None => (0, gap),
                    };
                    line.push(Span::plain(" ".repeat(left + 1)));
                    for span in cell.spans {
                        line.push(span);
                    }
                    line.push(Span::plain(" ".repeat(right + 1)));
                    line.push(Span::new("│", frame()));
                }
                self.lines.push(line);
            }
        }
        push_rule(&mut self.lines, &rest, rule("└", "┴", "┘"));
    }

    /// A table too wide for any grid: each row as `a · b · c`, wrapped.
    fn table_as_rows(&mut self, table: Table, first: Line, rest: Line) {
        let mut prefix = first;
        for (index, row) in table.rows.into_iter().enumerate() {
            let mut spans = Vec::new();
            for (column, cell) in row.into_iter().enumerate() {
                if column > 0 {
                    spans.push(Span::new(" · ", frame()));
                }
                for mut span in cell {
                    if index < table.header_rows {
                        span.style = span.style.bold();
                    }
                    spans.push(span);
                }
            }
            let options = Wrap::words(self.width)
                .with_first(prefix.clone())
                .with_rest(rest.clone());
            self.lines.extend(wrap(&spans, &options));
            prefix = rest.clone();
        }
    }

    fn finish(mut self) -> Vec<Line> {
        if let Some(code) = self.code.take() {
            self.code_block(code);
        }
        if let Some(table) = self.table.take() {
            self.table(table);
        }
        self.flush_inline();
        self.lines
    }
}

/// Column widths that fit `room`: each column gets its natural width or a
/// fair share of what is left, narrowest first.
fn fit_columns(natural: &[usize], room: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let mut order: Vec<usize> = (0..natural.len()).collect();
    order.sort_by_key(|&column| natural[column]);
    let mut widths = vec![1; natural.len()];
    let mut left = room;
    for (placed, &column) in order.iter().enumerate() {
        let share = left / (natural.len() - placed);
        let width = natural[column].min(share).max(1);
        widths[column] = width;
        left = left.saturating_sub(width);
    }
    widths
}

/// Where the longest run of `items` at the end whose widths sum to at most
/// `limit` starts.
fn innermost<T>(items: &[T], limit: usize, width: impl Fn(&T) -> usize) -> usize {
    let mut used = 0;
    for (index, item) in items.iter().enumerate().rev() {
        used += width(item);
        if used > limit {
            return index + 1;
        }
    }
    0
}

fn push_span(spans: &mut Vec<Span>, span: Span) {
    if span.text.is_empty() {
        return;
    }
    match spans.last_mut() {
        Some(last) if last.style == span.style => last.text.push_str(&span.text),
        _ => spans.push(span),
    }
}

/// Spans without leading and trailing whitespace (and trailing newlines).
fn trim_spans(mut spans: Vec<Span>) -> Vec<Span> {
    while let Some(first) = spans.first_mut() {
        let trimmed = first.text.trim_start_matches([' ', '\n']);
        if trimmed.is_empty() {
            spans.remove(0);
        } else {
            first.text = trimmed.to_owned();
            break;
        }
    }
    while let Some(last) = spans.last_mut() {
        let trimmed = last.text.trim_end_matches([' ', '\n']);
        if trimmed.is_empty() {
            spans.pop();
        } else {
            last.text = trimmed.to_owned();
            break;
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;
    use crate::text::styled::{markup_lines, plain_lines};

    fn check(markdown: &str, width: usize, expected: Expect) {
        let lines = render(markdown, width);
        for line in &lines {
            assert!(
                line.width() <= width,
                "{:?} is wider than {width}",
                line.plain()
            );
        }
        expected.assert_eq(&plain_lines(&lines));
    }

    fn check_styles(markdown: &str, width: usize, expected: Expect) {
        expected.assert_eq(&markup_lines(&render(markdown, width)));
    }

    #[test]
    fn deep_nesting_in_a_narrow_terminal_keeps_half_the_width_for_text() {
        // Found by `markdown_of_any_text_fits_the_width`: three markers
        // filled all 8 columns and left the ideograph none.
        check(
            "1. 1. - 蟹",
            8,
            expect![[r#"
                ▪ 蟹
            "#]],
        );
        check(
            "> > > > > > deep\n>\n> > > > > > quote",
            8,
            expect![[r#"
                ▎ ▎ deep
                ▎
                ▎ ▎ quot
                ▎ ▎ e
            "#]],
        );
    }

    #[test]
    fn headings_and_paragraphs() {
        check(
            "# Crabs\n\nCrabs walk sideways because of how their legs bend.\n## Habitat\nOceans.",
            30,
            expect![[r#"
                Crabs

                Crabs walk sideways because of
                how their legs bend.

                Habitat

                Oceans.
            "#]],
        );
    }

    #[test]
    fn emphasis_code_and_links_are_styled() {
        check_styles(
            "# Title\n\nSome *italic*, **bold**, ~~gone~~ and `code`; see [docs](https://crab.example).",
            80,
            expect![[r#"
                {bold+underline+magenta:Title}

                Some {italic:italic}, {bold:bold}, {strike:gone} and {cyan:code}; see {underline+blue:docs}{dim: (https://crab.example)}.
            "#]],
        );
    }

    #[test]
    fn lists_nest_and_hang() {
        check(
            "- first item that is long enough to wrap\n- second\n  - nested\n  - more\n\n1. one\n2. two\n   continued\n\n- [x] done\n- [ ] todo",
            24,
            expect![[r#"
                • first item that is
                  long enough to wrap
                • second
                  ◦ nested
                  ◦ more

                1. one
                2. two continued

                • [x] done
                • [ ] todo
            "#]],
        );
    }

    #[test]
    fn code_blocks_show_their_language_and_keep_indentation() {
        check(
            "Run this:\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nDone.",
            40,
            expect![[r#"
                Run this:

                ┌─ rust
                │ fn main() {
                │     println!("hi");
                │ }
                └─

                Done.
            "#]],
        );
    }

    #[test]
    fn an_unclosed_code_block_renders_while_it_streams() {
        check(
            "```py\nprint(1)",
            20,
            expect![[r#"
                ┌─ py
                │ print(1)
                └─
            "#]],
        );
    }

    #[test]
    fn tables_align_and_shrink_to_fit() {
        let table = "| Crab | Habitat | Size |\n|:-----|:-------:|-----:|\n| Hermit | shells and beaches everywhere | 10 |\n| King | deep cold seas | 180 |";
        check(
            table,
            60,
            expect![[r#"
                ┌────────┬───────────────────────────────┬──────┐
                │ Crab   │            Habitat            │ Size │
                ├────────┼───────────────────────────────┼──────┤
                │ Hermit │ shells and beaches everywhere │   10 │
                │ King   │        deep cold seas         │  180 │
                └────────┴───────────────────────────────┴──────┘
            "#]],
        );
        check(
            table,
            34,
            expect![[r#"
                ┌────────┬────────────────┬──────┐
                │ Crab   │    Habitat     │ Size │
                ├────────┼────────────────┼──────┤
                │ Hermit │   shells and   │   10 │
                │        │    beaches     │      │
                │        │   everywhere   │      │
                │ King   │ deep cold seas │  180 │
                └────────┴────────────────┴──────┘
            "#]],
        );
        check(
            table,
            12,
            expect![[r#"
                Crab ·
                Habitat ·
                Size
                Hermit ·
                shells and
                beaches
                everywhere ·
                10
                King · deep
                cold seas ·
                180
            "#]],
        );
    }

    #[test]
    fn quotes_and_rules() {
        check(
            "> a quoted line\n> that continues\n\n---\n\nafter",
            20,
            expect![[r#"
                ▎ a quoted line that
                ▎ continues

                ────────────────────

                after
            "#]],
        );
    }

    #[test]
    fn cjk_and_emoji_wrap_by_display_width() {
        check(
            "## 蟹の話 🦀\n\n蟹は海や川に住んでいて、横に歩きます。🦀🦀🦀 Crabs!",
            16,
            expect![[r#"
                蟹の話 🦀

                蟹は海や川に住ん
                でいて、横に歩き
                ます。🦀🦀🦀
                Crabs!
            "#]],
        );
    }

    #[test]
    fn control_sequences_never_reach_the_terminal() {
        let lines = render("evil \u{1b}[2J\u{1b}]0;owned\u{7} text", 40);
        assert_eq!(plain_lines(&lines), "evil  text\n");
    }
}
