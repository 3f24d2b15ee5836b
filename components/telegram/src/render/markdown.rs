//! Markdown into [`Piece`]s of Telegram's HTML subset.
//!
//! | Markdown | Telegram |
//! |---|---|
//! | `**b**`, `*i*`, `~~s~~`, `` `c` `` | `b`, `i`, `s`, `code` |
//! | headings | bold lines |
//! | fenced code with a language | `pre` + `code class="language-…"` |
//! | links (http, https, tg, mailto) | `a href` (others: the text alone) |
//! | block quotes | one `blockquote` (Telegram does not nest them) |
//! | lists, task lists | `• ` / `1. ` / `☐ ` lines, indented by depth |
//! | tables | `pre`, columns aligned |
//! | rules, raw HTML, images | `———`, the HTML as text, the image's text |
//!
//! Blocks are separated by a blank line, list items by a line break.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag as Md, TagEnd};

use super::{Piece, Tag};

/// The pieces of `markdown`.
pub fn pieces(markdown: &str) -> Vec<Piece> {
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let mut builder = Builder::default();
    for event in Parser::new_ext(markdown, options) {
        builder.event(event);
    }
    builder.finish()
}

#[derive(Default)]
struct Builder {
    out: Vec<Piece>,
    /// Visible text written so far (is anything written yet?).
    written: bool,
    /// Line breaks owed before the next text.
    owed: usize,
    quote_depth: usize,
    /// One entry per open list: the next number, or `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Inside a code block: its text so far.
    code: Option<String>,
    /// Inside a table: its rows of cells.
    table: Option<Vec<Vec<String>>>,
    /// Links whose tag was not opened (unsafe scheme): their `Close`s are
    /// skipped.
    skipped_links: Vec<bool>,
}

impl Builder {
    fn block(&mut self, breaks: usize) {
        if self.written {
            self.owed = self.owed.max(breaks);
        }
    }

    fn flush_owed(&mut self) {
        if self.owed > 0 {
            self.out.push(Piece::Text("\n".repeat(self.owed)));
            self.owed = 0;
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(table) = &mut self.table {
            if let Some(cell) = table.last_mut().and_then(|row| row.last_mut()) {
                cell.push_str(text);
            }
            return;
        }
        if let Some(code) = &mut self.code {
            code.push_str(text);
            return;
        }
        self.flush_owed();
        self.out.push(Piece::Text(text.to_owned()));
        self.written = true;
    }

    fn open(&mut self, tag: Tag) {
        if self.table.is_some() || self.code.is_some() {
            return;
        }
        self.flush_owed();
        self.out.push(Piece::Open(tag));
    }

    fn close(&mut self) {
        if self.table.is_some() || self.code.is_some() {
            return;
        }
        self.out.push(Piece::Close);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                if self.table.is_some() {
                    self.text(&code);
                } else {
                    self.open(Tag::Code);
                    self.text(&code);
                    self.close();
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::SoftBreak | Event::HardBreak => {
                if self.table.is_some() {
                    self.text(" ");
                } else {
                    self.text("\n");
                }
            }
            Event::Rule => {
                self.block(2);
                self.text("———");
            }
            Event::TaskListMarker(done) => self.text(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Md<'_>) {
        match tag {
            Md::Paragraph => self.block(2),
            Md::Heading { .. } => {
                self.block(2);
                self.open(Tag::Bold);
            }
            Md::BlockQuote(_) => {
                self.block(2);
                if self.quote_depth == 0 {
                    self.open(Tag::Quote);
                }
                self.quote_depth += 1;
            }
            Md::CodeBlock(kind) => {
                self.block(2);
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .filter(|lang| {
                            lang.chars()
                                .all(|c| c.is_ascii_alphanumeric() || "+-_#.".contains(c))
                        })
                        .map(str::to_owned),
                    CodeBlockKind::Indented => None,
                };
                // Telegram keeps `pre` out of quotes; inside one, code.
                let tag = if self.quote_depth > 0 {
                    Tag::Code
                } else {
                    Tag::Pre(lang)
                };
                self.open(tag);
                self.code = Some(String::new());
            }
            Md::List(start) => {
                self.block(if self.lists.is_empty() { 2 } else { 1 });
                self.lists.push(start);
            }
            Md::Item => {
                self.block(1);
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                self.text(&format!("{}{marker}", "  ".repeat(depth)));
            }
            Md::Emphasis => self.open(Tag::Italic),
            Md::Strong => self.open(Tag::Bold),
            Md::Strikethrough => self.open(Tag::Strike),
            Md::Link { dest_url, .. } => {
                let safe = ["http://", "https://", "tg://", "mailto:"]
                    .iter()
                    .any(|scheme| dest_url.to_ascii_lowercase().starts_with(scheme));
                if safe && self.table.is_none() {
                    self.open(Tag::Link(dest_url.to_string()));
                }
                self.skipped_links.push(!safe || self.table.is_some());
            }
            Md::Image { .. } => {}
            Md::Table(_) => {
                self.block(2);
                self.table = Some(Vec::new());
            }
            Md::TableHead | Md::TableRow => {
                if let Some(table) = &mut self.table {
                    table.push(Vec::new());
                }
            }
            Md::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|t| t.last_mut()) {
                    row.push(String::new());
                }
            }
            Md::FootnoteDefinition(name) => {
                self.block(2);
                self.text(&format!("[^{name}]: "));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) | TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.close()
            }
            TagEnd::BlockQuote(_) => {
                self.quote_depth = self.quote_depth.saturating_sub(1);
                if self.quote_depth == 0 {
                    self.close();
                }
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                let code = code.strip_suffix('\n').unwrap_or(&code);
                // An empty block still shows as one.
                self.text(if code.is_empty() { " " } else { code });
                self.close();
            }
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Link if self.skipped_links.pop() == Some(false) => self.close(),
            TagEnd::Table => {
                let rows = self.table.take().unwrap_or_default();
                self.open(Tag::Pre(None));
                self.text(&table_text(&rows));
                self.close();
            }
            _ => {}
        }
    }

    /// The pieces, without empty tag pairs.
    fn finish(self) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::with_capacity(self.out.len());
        for piece in self.out {
            if matches!(piece, Piece::Close) && matches!(out.last(), Some(Piece::Open(_))) {
                out.pop();
                continue;
            }
            out.push(piece);
        }
        out
    }
}

/// A table's rows as aligned columns.
fn table_text(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.get(c))
                .map(|cell| cell.trim().chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &Vec<String>| {
        let cells: Vec<String> = (0..columns)
            .map(|c| {
                let cell = row.get(c).map_or("", |cell| cell.trim());
                format!("{cell:<width$}", width = widths[c])
            })
            .collect();
        cells.join(" | ").trim_end().to_owned()
    };
    let mut lines: Vec<String> = Vec::with_capacity(rows.len() + 1);
    for (i, row) in rows.iter().enumerate() {
        lines.push(line(row));
        if i == 0 && rows.len() > 1 {
            lines.push(
                widths
                    .iter()
                    .map(|w| "-".repeat((*w).max(1)))
                    .collect::<Vec<_>>()
                    .join("-+-"),
            );
        }
    }
    let text = lines.join("\n");
    if text.is_empty() { " ".into() } else { text }
}

#[cfg(test)]
mod tests {
    use crate::render::render;

    fn html(markdown: &str) -> String {
        render(markdown)
            .into_iter()
            .map(|p| p.html)
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn markdown_becomes_the_telegram_subset() {
        for (markdown, expected) in [
            (
                "**b** *i* ~~s~~ `c`",
                "<b>b</b> <i>i</i> <s>s</s> <code>c</code>",
            ),
            ("# Title\n\ntext", "<b>Title</b>\n\ntext"),
            ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
            (
                "```rust\nfn x() {}\n```",
                "<pre><code class=\"language-rust\">fn x() {}</code></pre>",
            ),
            ("```\nplain\n```", "<pre>plain</pre>"),
            (
                "[site](https://x.y/?a=1&b=\"2\")",
                "<a href=\"https://x.y/?a=1&amp;b=&quot;2&quot;\">site</a>",
            ),
            ("[bad](javascript:alert(1))", "bad"),
            (
                "> quoted\n> > deeper",
                "<blockquote>quoted\n\ndeeper</blockquote>",
            ),
            ("- one\n- two\n  1. sub", "• one\n• two\n  1. sub"),
            ("- [ ] todo\n- [x] done", "• ☐ todo\n• ☑ done"),
            (
                "| a | bb |\n|---|---|\n| ccc | d |",
                "<pre>a   | bb\n----+---\nccc | d</pre>",
            ),
            ("<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"),
            ("****", "———"),
            ("***bold italic***", "<i><b>bold italic</b></i>"),
        ] {
            assert_eq!(html(markdown), expected, "{markdown:?}");
        }
    }
}
