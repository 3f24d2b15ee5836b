//! Breaking styled text into lines that fit a width.
//!
//! Greedy and predictable: words go on the current line while they fit;
//! a word wider than the whole line is broken between grapheme clusters;
//! each CJK ideograph or emoji (two columns) is a place to break by itself,
//! since those scripts put no spaces between words. Every line starts with a
//! prefix (the first line's may differ: a list marker, a quote bar), and no
//! line is wider than the width unless a single cluster is wider than the
//! room left after the prefix.

use unicode_segmentation::UnicodeSegmentation;

use super::styled::{Line, Span, Style};
use super::width::{display_width, grapheme_width};

/// Where lines may break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapMode {
    /// Between words (prose).
    Words,
    /// Anywhere between clusters, spaces kept (code, input).
    Clusters,
}

/// How to wrap: the total width and the prefixes of the first and the
/// following lines.
#[derive(Debug, Clone)]
pub struct Wrap {
    pub width: usize,
    pub first: Line,
    pub rest: Line,
    pub mode: WrapMode,
}

impl Wrap {
    /// Prose at `width` with no prefix.
    pub fn words(width: usize) -> Self {
        Self {
            width,
            first: Line::blank(),
            rest: Line::blank(),
            mode: WrapMode::Words,
        }
    }

    /// Every line, the first included, starts with `prefix`.
    pub fn prefixed(self, prefix: Line) -> Self {
        Self {
            first: prefix.clone(),
            rest: prefix,
            ..self
        }
    }

    pub fn with_first(self, first: Line) -> Self {
        Self { first, ..self }
    }

    pub fn with_rest(self, rest: Line) -> Self {
        Self { rest, ..self }
    }

    pub fn clusters(self) -> Self {
        Self {
            mode: WrapMode::Clusters,
            ..self
        }
    }
}

/// A word: clusters with their styles, with no break opportunity inside.
#[derive(Default)]
struct Word {
    clusters: Vec<(String, Style)>,
    width: usize,
}

enum Token {
    Word(Word),
    Space(String, Style),
    Break,
}

/// Wraps `spans` (which may contain `\n` for hard breaks) into lines.
/// Always returns at least one line.
pub fn wrap(spans: &[Span], options: &Wrap) -> Vec<Line> {
    let mut out = Builder::new(options);
    for token in tokens(spans, options.mode) {
        match token {
            Token::Break => out.hard_break(),
            Token::Space(text, style) => out.space(text, style),
            Token::Word(word) => out.word(word),
        }
    }
    out.finish()
}

fn tokens(spans: &[Span], mode: WrapMode) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = Word::default();
    let flush = |word: &mut Word, tokens: &mut Vec<Token>| {
        if !word.clusters.is_empty() {
            tokens.push(Token::Word(std::mem::take(word)));
        }
    };
    for span in spans {
        for cluster in span.text.graphemes(true) {
            if cluster == "\n" || cluster == "\r\n" {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Break);
                continue;
            }
            let width = grapheme_width(cluster);
            let is_space = cluster.chars().all(char::is_whitespace);
            if mode == WrapMode::Words && is_space {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Space(cluster.to_owned(), span.style));
                continue;
            }
            if mode == WrapMode::Clusters || width >= 2 {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Word(Word {
                    clusters: vec![(cluster.to_owned(), span.style)],
                    width,
                }));
                continue;
            }
            word.clusters.push((cluster.to_owned(), span.style));
            word.width += width;
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

struct Builder<'a> {
    options: &'a Wrap,
    lines: Vec<Line>,
    current: Line,
    /// Columns of content (after the prefix) on the current line.
    used: usize,
    /// Columns available after the current line's prefix.
    room: usize,
    /// Spaces seen since the last word, placed only if a word follows.
    spaces: Vec<(String, Style)>,
    /// Whether the current line began at the start or after a hard break
    /// (its leading spaces are content, not a wrap's leftovers).
    hard_start: bool,
}

impl<'a> Builder<'a> {
    fn new(options: &'a Wrap) -> Self {
        Self {
            options,
            lines: Vec::new(),
            current: options.first.clone(),
            used: 0,
            room: room(options.width, &options.first),
            spaces: Vec::new(),
            hard_start: true,
        }
    }

    fn new_line(&mut self, hard: bool) {
        let line = std::mem::replace(&mut self.current, self.options.rest.clone());
        self.lines.push(line);
        self.used = 0;
        self.room = room(self.options.width, &self.options.rest);
        self.spaces.clear();
        self.hard_start = hard;
    }

    fn hard_break(&mut self) {
        self.new_line(true);
    }

    fn space(&mut self, text: String, style: Style) {
        if self.used == 0 && !self.hard_start {
            return;
        }
        self.spaces.push((text, style));
    }

    fn put(&mut self, cluster: String, style: Style, width: usize) {
        self.current.push(Span::new(cluster, style));
        self.used += width;
    }

    fn put_spaces(&mut self) {
        for (text, style) in std::mem::take(&mut self.spaces) {
            let width = display_width(&text);
            self.put(text, style, width);
        }
    }

    fn word(&mut self, word: Word) {
        let spaces: usize = self.spaces.iter().map(|(s, _)| display_width(s)).sum();
        if self.used + spaces + word.width <= self.room {
            self.put_spaces();
            self.put_word(word);
            return;
        }
        if word.width <= self.room {
            // Fits on a line of its own: the spaces before it go.
            if self.used > 0 {
                self.new_line(false);
            } else {
                self.spaces.clear();
            }
            self.put_word(word);
            return;
        }
        // Wider than a line: fill what is left, then break between clusters.
        if self.used + spaces < self.room {
            self.put_spaces();
        } else if self.used > 0 {
            self.new_line(false);
        } else {
            self.spaces.clear();
        }
        for (cluster, style) in word.clusters {
            let width = grapheme_width(&cluster);
            if self.used > 0 && self.used + width > self.room {
                self.new_line(false);
            }
            self.put(cluster, style, width);
        }
    }

    fn put_word(&mut self, word: Word) {
        for (cluster, style) in word.clusters {
            let width = grapheme_width(&cluster);
            self.put(cluster, style, width);
        }
    }

    fn finish(mut self) -> Vec<Line> {
        self.lines.push(self.current);
        self.lines
    }
}

/// Columns left after `prefix`; at least one, so wrapping always advances.
fn room(width: usize, prefix: &Line) -> usize {
    width.saturating_sub(prefix.width()).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::styled::plain_lines;
    use expect_test::expect;

    fn wrap_plain(text: &str, width: usize) -> String {
        plain_lines(&wrap(&[Span::plain(text)], &Wrap::words(width)))
    }

    #[test]
    fn prose_breaks_between_words() {
        expect![[r#"
            the quick
            brown fox
            jumps over
            the lazy
            dog
        "#]]
        .assert_eq(&wrap_plain(
            "the quick brown fox jumps over the lazy dog",
            10,
        ));
    }

    #[test]
    fn a_word_wider_than_the_line_is_broken() {
        expect![[r#"
            see abcdef
            ghijklmnop
            qrstuvwxyz
            end
        "#]]
        .assert_eq(&wrap_plain("see abcdefghijklmnopqrstuvwxyz end", 10));
    }

    #[test]
    fn cjk_and_emoji_break_anywhere_and_count_two_columns() {
        expect![[r#"
            蟹は海に
            住んでい
            ます🦀🦀
            ok
        "#]]
        .assert_eq(&wrap_plain("蟹は海に住んでいます🦀🦀 ok", 8));
        for line in wrap(&[Span::plain("蟹は海に住んでいます")], &Wrap::words(7)) {
            assert!(line.width() <= 7, "{line:?}");
        }
    }

    #[test]
    fn prefixes_and_hard_breaks() {
        let options = Wrap::words(12)
            .with_first(Line::plain_text("- "))
            .with_rest(Line::plain_text("  "));
        let lines = wrap(&[Span::plain("one two three four\nfive")], &options);
        expect![[r#"
            - one two
              three four
              five
        "#]]
        .assert_eq(&plain_lines(&lines));
    }

    #[test]
    fn clusters_mode_keeps_spaces_and_fills_lines() {
        let lines = wrap(&[Span::plain("    let x = 1;")], &Wrap::words(8).clusters());
        expect![[r#"
                let
            x = 1;
        "#]]
        .assert_eq(&plain_lines(&lines));
    }

    #[test]
    fn styles_survive_wrapping() {
        let spans = [
            Span::plain("a "),
            Span::new("bold words here", Style::PLAIN.bold()),
        ];
        let lines = wrap(&spans, &Wrap::words(8));
        let markup: Vec<String> = lines.iter().map(Line::markup).collect();
        assert_eq!(markup, ["a {bold:bold}", "{bold:words}", "{bold:here}"]);
    }

    #[test]
    fn a_prefix_wider_than_the_width_still_makes_progress() {
        let options = Wrap::words(2).prefixed(Line::plain_text(">>>> "));
        let lines = wrap(&[Span::plain("ab 蟹")], &options);
        assert_eq!(lines.len(), 3);
    }
}
