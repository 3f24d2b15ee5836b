//! From an agent's Markdown to Telegram messages.
//!
//! [`pieces`] reads the Markdown (pulldown-cmark) into [`Piece`]s:
//! text, and the formatting Telegram's HTML subset has — `b i u s code pre
//! a blockquote` (code blocks keep their language; headings become bold,
//! lists bullets, tables and other blocks `pre`). [`split()`] cuts the
//! pieces into messages of at most [`LIMIT`] UTF-16 units of visible text
//! (Telegram's own measure, after entities are parsed), preferring
//! paragraph, line and word boundaries; a tag open at a cut is closed
//! there and opened again in the next message, and nothing is cut inside
//! a character, a surrogate pair or an escape. The visible text of the
//! messages, put together, is the whole text.
//!
//! ```
//! use crabtalk_telegram::render::render;
//!
//! let parts = render("**Hi** <you> & `x`");
//! assert_eq!(parts[0].html, "<b>Hi</b> &lt;you&gt; &amp; <code>x</code>");
//! assert_eq!(parts[0].text, "Hi <you> & x");
//! ```

mod markdown;
mod split;

pub use markdown::pieces;
pub use split::split;

/// Telegram's limit on a message's text, in UTF-16 code units.
pub const LIMIT: usize = 4096;

/// A formatting tag of Telegram's HTML subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    Bold,
    Italic,
    Underline,
    Strike,
    Code,
    /// A code block, with its language if it has one.
    Pre(Option<String>),
    /// A link to this URL.
    Link(String),
    Quote,
}

impl Tag {
    /// The opening HTML.
    pub fn open(&self) -> String {
        match self {
            Self::Bold => "<b>".into(),
            Self::Italic => "<i>".into(),
            Self::Underline => "<u>".into(),
            Self::Strike => "<s>".into(),
            Self::Code => "<code>".into(),
            Self::Pre(None) => "<pre>".into(),
            Self::Pre(Some(lang)) => {
                format!("<pre><code class=\"language-{}\">", escape_attr(lang))
            }
            Self::Link(url) => format!("<a href=\"{}\">", escape_attr(url)),
            Self::Quote => "<blockquote>".into(),
        }
    }

    /// The closing HTML.
    pub fn close(&self) -> &'static str {
        match self {
            Self::Bold => "</b>",
            Self::Italic => "</i>",
            Self::Underline => "</u>",
            Self::Strike => "</s>",
            Self::Code => "</code>",
            Self::Pre(None) => "</pre>",
            Self::Pre(Some(_)) => "</code></pre>",
            Self::Link(_) => "</a>",
            Self::Quote => "</blockquote>",
        }
    }
}

/// A rendered document, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Open(Tag),
    /// Closes the innermost open tag.
    Close,
    Text(String),
}

/// One message: its HTML, and its visible text (what is sent when
/// Telegram refuses the HTML).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub html: String,
    pub text: String,
}

/// `markdown` as Telegram messages of at most [`LIMIT`] units each.
pub fn render(markdown: &str) -> Vec<Part> {
    split::split(&markdown::pieces(markdown), LIMIT)
}

/// Telegram's measure of a text: UTF-16 code units.
pub fn units(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// Text for HTML: `&`, `<`, `>` escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// An attribute value: [`escape`] plus `"`.
pub fn escape_attr(text: &str) -> String {
    escape(text).replace('"', "&quot;")
}

/// The visible text of HTML this module wrote: tags dropped, escapes
/// undone.
pub fn strip_html(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find(['<', '&']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('<') {
            rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
            continue;
        }
        let (replacement, len) = [
            ("&amp;", '&'),
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&quot;", '"'),
        ]
        .iter()
        .find(|(entity, _)| rest.starts_with(entity))
        .map_or(('&', 1), |(entity, c)| (*c, entity.len()));
        out.push(replacement);
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}
