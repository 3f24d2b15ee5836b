//! Styled text: [`Span`]s with a [`Style`], grouped into [`Line`]s that fit
//! the terminal.
//!
//! Rendering produces lines; the terminal layer writes them with
//! [`Line::to_ansi`]. Tests read them as plain text ([`Line::plain`]) or with
//! their styles spelled out ([`Line::markup`]).

use std::fmt::Write as _;

use crossterm::style::{Attribute, Color as TermColor, SetAttribute, SetForegroundColor};

use super::width::display_width;

/// A foreground colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Red,
    Green,
    Yellow,
    Blue,
    Magenta,
    Cyan,
    Grey,
}

impl Color {
    fn term(self) -> TermColor {
        match self {
            Self::Red => TermColor::Red,
            Self::Green => TermColor::Green,
            Self::Yellow => TermColor::Yellow,
            Self::Blue => TermColor::Blue,
            Self::Magenta => TermColor::Magenta,
            Self::Cyan => TermColor::Cyan,
            Self::Grey => TermColor::DarkGrey,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Red => "red",
            Self::Green => "green",
            Self::Yellow => "yellow",
            Self::Blue => "blue",
            Self::Magenta => "magenta",
            Self::Cyan => "cyan",
            Self::Grey => "grey",
        }
    }
}

/// How a span looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub bold: bool,
    pub italic: bool,
    pub dim: bool,
    pub underline: bool,
    pub strike: bool,
    pub fg: Option<Color>,
}

impl Style {
    pub const PLAIN: Self = Self {
        bold: false,
        italic: false,
        dim: false,
        underline: false,
        strike: false,
        fg: None,
    };

    pub fn bold(self) -> Self {
        Self { bold: true, ..self }
    }

    pub fn italic(self) -> Self {
        Self {
            italic: true,
            ..self
        }
    }

    pub fn dim(self) -> Self {
        Self { dim: true, ..self }
    }

    pub fn underline(self) -> Self {
        Self {
            underline: true,
            ..self
        }
    }

    pub fn strike(self) -> Self {
        Self {
            strike: true,
            ..self
        }
    }

    pub fn fg(self, color: Color) -> Self {
        Self {
            fg: Some(color),
            ..self
        }
    }

    /// The style names used by [`Line::markup`], e.g. `bold+cyan`.
    fn names(&self) -> String {
        let mut names = Vec::new();
        for (on, name) in [
            (self.bold, "bold"),
            (self.italic, "italic"),
            (self.dim, "dim"),
            (self.underline, "underline"),
            (self.strike, "strike"),
        ] {
            if on {
                names.push(name);
            }
        }
        if let Some(color) = self.fg {
            names.push(color.name());
        }
        names.join("+")
    }

    fn write_ansi(&self, out: &mut String) {
        let mut set = |attribute| {
            let _ = write!(out, "{}", SetAttribute(attribute));
        };
        if self.bold {
            set(Attribute::Bold);
        }
        if self.italic {
            set(Attribute::Italic);
        }
        if self.dim {
            set(Attribute::Dim);
        }
        if self.underline {
            set(Attribute::Underlined);
        }
        if self.strike {
            set(Attribute::CrossedOut);
        }
        if let Some(color) = self.fg {
            let _ = write!(out, "{}", SetForegroundColor(color.term()));
        }
    }
}

/// Text in one style. The text holds no newline or control character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

impl Span {
    pub fn new(text: impl Into<String>, style: Style) -> Self {
        Self {
            text: text.into(),
            style,
        }
    }

    pub fn plain(text: impl Into<String>) -> Self {
        Self::new(text, Style::PLAIN)
    }
}

/// One terminal row's worth of spans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    pub spans: Vec<Span>,
}

impl Line {
    pub fn new(spans: Vec<Span>) -> Self {
        Self { spans }
    }

    pub fn blank() -> Self {
        Self::default()
    }

    /// A line of one span.
    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        Self::new(vec![Span::new(text, style)])
    }

    pub fn plain_text(text: impl Into<String>) -> Self {
        Self::styled(text, Style::PLAIN)
    }

    pub fn push(&mut self, span: Span) {
        if span.text.is_empty() {
            return;
        }
        match self.spans.last_mut() {
            Some(last) if last.style == span.style => last.text.push_str(&span.text),
            _ => self.spans.push(span),
        }
    }

    /// The columns this line takes.
    pub fn width(&self) -> usize {
        self.spans
            .iter()
            .map(|span| display_width(&span.text))
            .sum()
    }

    /// The text without styles.
    pub fn plain(&self) -> String {
        self.spans.iter().map(|span| span.text.as_str()).collect()
    }

    /// The text with styles spelled out as `{bold:text}`, for tests.
    pub fn markup(&self) -> String {
        let mut out = String::new();
        for span in &self.spans {
            let names = span.style.names();
            if names.is_empty() {
                out.push_str(&span.text);
            } else {
                let _ = write!(out, "{{{names}:{}}}", span.text);
            }
        }
        out
    }

    /// The line as ANSI-styled text (no line ending).
    pub fn to_ansi(&self) -> String {
        let mut out = String::new();
        for span in &self.spans {
            if span.style == Style::PLAIN {
                out.push_str(&span.text);
                continue;
            }
            span.style.write_ansi(&mut out);
            out.push_str(&span.text);
            let _ = write!(out, "{}", SetAttribute(Attribute::Reset));
        }
        out
    }
}

/// Lines as plain text, one per row, for tests.
#[cfg(test)]
pub(crate) fn plain_lines(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line.plain().trim_end());
        out.push('\n');
    }
    out
}

/// Lines with styles spelled out, one per row, for tests.
#[cfg(test)]
pub(crate) fn markup_lines(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.markup());
        out.push('\n');
    }
    out
}
