//! A page's shape, measured before it is parsed: how deep its elements
//! nest, how many there are, and its text.
//!
//! Parsing HTML into a tree, Readability's scoring and the Markdown
//! writer all cost more the deeper a page nests — some of them walk the
//! tree recursively (a page 3,000 elements deep overflows a thread's
//! stack), and the tree builder's own scope checks grow with the depth, so
//! a deep page costs the square of its size. This pre-pass runs only the
//! tokenizer, which is linear and never recursive, and follows the tree
//! builder's main rules closely enough to bound what the tree would be:
//!
//! - an end tag closes up to the matching open element, if there is one;
//! - `<p>`, `<li>`, `<dd>`/`<dt>`, `<td>`/`<th>`, `<tr>` and `<option>`
//!   close the open element they imply the end of;
//! - formatting elements (`<b>`, `<a>`, `<font>`…) closed by anything but
//!   their own end tag are opened again before the next text or inline
//!   element ("reconstructing the active formatting elements"), each time
//!   — the way a few kilobytes make millions of elements;
//! - void elements (`<br>`, `<img>`…) nest nothing.
//!
//! A page over [`MAX_DEPTH`] or [`MAX_ELEMENTS`] by this measure is never
//! parsed: its text, gathered on the way, is what the caller gets. The
//! measure is checked against the real tree after parsing too.

use std::cell::RefCell;

use html5ever::TokenizerResult;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

use super::budget::{Budget, Stopped};

/// The deepest nesting a page may have to be parsed into a tree.
pub(crate) const MAX_DEPTH: usize = 256;

/// The most elements a page may have to be parsed into a tree.
pub(crate) const MAX_ELEMENTS: usize = 100_000;

/// Bytes handed to the tokenizer between two looks at the budget.
pub(crate) const CHUNK: usize = 16 * 1024;

/// What the pre-pass found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The deepest nesting seen (as the tree builder would build it).
    pub depth: usize,
    /// Elements the tree would have.
    pub elements: usize,
    /// The `<title>`'s text.
    pub title: Option<String>,
    /// The page's text without markup: blocks on lines of their own,
    /// scripts and styles left out.
    pub text: String,
}

impl Shape {
    /// Whether the page may be parsed into a tree.
    pub(crate) fn fits(&self) -> bool {
        self.depth <= MAX_DEPTH && self.elements <= MAX_ELEMENTS
    }
}

/// Measures `html`, stopping when `budget` says so.
pub(crate) fn measure(html: &str, budget: &Budget) -> Result<Shape, Stopped> {
    let tokenizer = Tokenizer::new(Measure::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    let mut rest = html;
    while !rest.is_empty() {
        budget.check()?;
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        queue.push_back(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
        while let TokenizerResult::Script(()) = tokenizer.feed(&queue) {}
    }
    tokenizer.end();
    let state = tokenizer.sink.state.into_inner();
    let title = state.title.split_whitespace().collect::<Vec<_>>().join(" ");
    Ok(Shape {
        depth: state.depth,
        elements: state.elements,
        title: (!title.is_empty()).then_some(title),
        text: state.text.trim().to_owned(),
    })
}

/// An element open on the modelled stack.
struct Open {
    name: html5ever::LocalName,
    /// Its place in `formatting`, for a formatting element.
    formatting: bool,
}

/// A formatting element the tree builder would keep reopening: its name
/// and attributes (three alike are kept, as the tree builder does), or a
/// marker (table cells, `<object>`…) that bounds the reopening.
#[derive(PartialEq)]
enum Active {
    Element {
        name: html5ever::LocalName,
        attrs: u64,
        on_stack: bool,
    },
    Marker,
}

#[derive(Default)]
struct State {
    stack: Vec<Open>,
    active: Vec<Active>,
    depth: usize,
    elements: usize,
    /// Over a limit: the model stops, the text is still gathered.
    over: bool,
    /// Inside an element whose text is not content (`<script>`…).
    hidden: usize,
    in_title: bool,
    title: String,
    text: String,
}

#[derive(Default)]
struct Measure {
    state: RefCell<State>,
}

impl TokenSink for Measure {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => {
                let raw = match tag.kind {
                    TagKind::StartTag => state.start(&tag),
                    TagKind::EndTag => {
                        state.end(&tag);
                        None
                    }
                };
                if let Some(raw) = raw {
                    return raw;
                }
            }
            Token::CharacterTokens(text) => state.characters(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

fn is_formatting(name: &str) -> bool {
    matches!(
        name,
        "a" | "b"
            | "big"
            | "code"
            | "em"
            | "font"
            | "i"
            | "nobr"
            | "s"
            | "small"
            | "strike"
            | "strong"
            | "tt"
            | "u"
    )
}

fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
            | "frame"
            | "basefont"
            | "bgsound"
    )
}

/// Elements that start on a line of their own in the gathered text.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "br"
            | "dd"
            | "details"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hr"
            | "li"
            | "main"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "section"
            | "summary"
            | "table"
            | "tr"
            | "ul"
    )
}

/// Elements whose text is not the page's content.
fn is_hidden(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "template" | "noscript" | "svg" | "iframe" | "select" | "head"
    )
}

/// Elements that bound a search for an element to close (the tree
/// builder's "scope").
fn is_scope_boundary(name: &str) -> bool {
    matches!(
        name,
        "html"
            | "table"
            | "td"
            | "th"
            | "caption"
            | "marquee"
            | "object"
            | "applet"
            | "template"
            | "button"
    )
}

/// The open elements a start tag `name` implies the end of.
fn closes(name: &str) -> &'static [&'static str] {
    match name {
        "li" => &["li"],
        "dd" | "dt" => &["dd", "dt"],
        "td" | "th" => &["td", "th"],
        "tr" => &["tr"],
        "option" => &["option"],
        "address" | "article" | "aside" | "blockquote" | "center" | "details" | "dialog"
        | "dir" | "div" | "dl" | "fieldset" | "figcaption" | "figure" | "footer" | "header"
        | "hgroup" | "main" | "menu" | "nav" | "ol" | "p" | "section" | "summary" | "ul" | "h1"
        | "h2" | "h3" | "h4" | "h5" | "h6" | "pre" | "listing" | "form" | "table" | "hr"
        | "xmp" | "plaintext" => &["p"],
        _ => &[],
    }
}

/// Start tags that do not reopen formatting elements first.
fn is_structural(name: &str) -> bool {
    is_block(name)
        || matches!(
            name,
            "html"
                | "head"
                | "body"
                | "tbody"
                | "thead"
                | "tfoot"
                | "td"
                | "th"
                | "caption"
                | "colgroup"
                | "script"
                | "style"
                | "template"
                | "title"
                | "meta"
                | "link"
                | "base"
        )
}

fn attrs_key(tag: &Tag) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut attrs: Vec<(&str, &str)> = tag
        .attrs
        .iter()
        .map(|a| (&*a.name.local, &*a.value))
        .collect();
    attrs.sort_unstable();
    attrs.hash(&mut hasher);
    hasher.finish()
}

impl State {
    /// A start tag; what the tokenizer must switch to, if anything.
    fn start(&mut self, tag: &Tag) -> Option<TokenSinkResult<()>> {
        let name = &*tag.name;
        if is_block(name) {
            self.text.push('\n');
        }
        if !self.over {
            self.model_start(tag);
        }
        match name {
            "script" => {
                self.hidden += 1;
                Some(TokenSinkResult::RawData(RawKind::ScriptData))
            }
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                if name != "xmp" {
                    self.hidden += 1;
                }
                Some(TokenSinkResult::RawData(RawKind::Rawtext))
            }
            "title" => {
                self.in_title = true;
                Some(TokenSinkResult::RawData(RawKind::Rcdata))
            }
            "textarea" => Some(TokenSinkResult::RawData(RawKind::Rcdata)),
            "plaintext" => Some(TokenSinkResult::Plaintext),
            _ => {
                if is_hidden(name) && !tag.self_closing {
                    self.hidden += 1;
                }
                None
            }
        }
    }

    fn end(&mut self, tag: &Tag) {
        let name = &*tag.name;
        if is_block(name) {
            self.text.push('\n');
        }
        match name {
            "title" => self.in_title = false,
            _ if (is_hidden(name) || matches!(name, "iframe" | "noembed" | "noframes"))
                && self.hidden > 0 =>
            {
                self.hidden -= 1
            }
            _ => {}
        }
        if !self.over {
            self.model_end(name);
        }
    }

    fn characters(&mut self, text: &str) {
        if self.in_title {
            self.title.push_str(text);
            return;
        }
        if !self.over && !text.trim().is_empty() {
            self.reopen();
        }
        if self.hidden > 0 {
            return;
        }
        for (n, word) in text.split_whitespace().enumerate() {
            let joined = n > 0 || text.starts_with(char::is_whitespace);
            if joined && !self.text.ends_with(['\n', ' ']) && !self.text.is_empty() {
                self.text.push(' ');
            }
            self.text.push_str(word);
        }
        if text.ends_with(char::is_whitespace) && !self.text.ends_with(['\n', ' ']) {
            self.text.push(' ');
        }
    }

    fn model_start(&mut self, tag: &Tag) {
        let name = &*tag.name;
        let implied = closes(name);
        if !implied.is_empty() {
            self.close_implied(implied);
        }
        if name == "a" {
            // A new link ends an open one (the adoption agency).
            self.model_end("a");
        }
        if !is_structural(name) {
            self.reopen();
        }
        self.add_elements(1);
        if is_void(name) || tag.self_closing {
            return;
        }
        let formatting = is_formatting(name);
        if formatting {
            let attrs = attrs_key(tag);
            let same = self
                .active
                .iter()
                .rev()
                .take_while(|a| **a != Active::Marker)
                .filter(|a| matches!(a, Active::Element { name: n, attrs: k, .. } if n == &tag.name && *k == attrs))
                .count();
            if same >= 3 {
                // Three alike already: the earliest goes (the tree builder's rule).
                let from = self
                    .active
                    .iter()
                    .rposition(|a| *a == Active::Marker)
                    .map_or(0, |marker| marker + 1);
                if let Some(offset) = self.active[from..].iter().position(|a| {
                    matches!(a, Active::Element { name: n, attrs: k, .. } if n == &tag.name && *k == attrs)
                }) {
                    self.active.remove(from + offset);
                }
            }
            self.active.push(Active::Element {
                name: tag.name.clone(),
                attrs,
                on_stack: true,
            });
        } else if matches!(
            name,
            "td" | "th" | "caption" | "marquee" | "object" | "applet" | "template"
        ) {
            self.active.push(Active::Marker);
        }
        self.stack.push(Open {
            name: tag.name.clone(),
            formatting,
        });
        self.depth = self.depth.max(self.stack.len());
        self.check_limits();
    }

    fn model_end(&mut self, name: &str) {
        if is_formatting(name)
            && let Some(at) = self
                .active
                .iter()
                .rposition(|a| matches!(a, Active::Element { name: n, .. } if &**n == name))
        {
            self.active.remove(at);
        }
        if name == "p" && !self.stack.iter().any(|open| &*open.name == "p") {
            // `</p>` without a `<p>` makes an empty one.
            self.add_elements(1);
            return;
        }
        if let Some(at) = self.stack.iter().rposition(|open| &*open.name == name) {
            self.pop_to(at);
        }
        if matches!(
            name,
            "td" | "th" | "caption" | "marquee" | "object" | "applet" | "template"
        ) && let Some(marker) = self.active.iter().rposition(|a| *a == Active::Marker)
        {
            self.active.truncate(marker);
        }
    }

    /// Closes the nearest open element of `names`, within scope.
    fn close_implied(&mut self, names: &[&str]) {
        for (at, open) in self.stack.iter().enumerate().rev() {
            if names.contains(&&*open.name) {
                self.pop_to(at);
                return;
            }
            // A new row ends the cells of the old one on its way.
            let crossed = names == ["tr"] && matches!(&*open.name, "td" | "th");
            if !crossed
                && (is_scope_boundary(&open.name) || matches!(&*open.name, "ul" | "ol" | "dl"))
            {
                return;
            }
        }
    }

    /// Pops the stack down to (and including) `at`; formatting elements
    /// popped stay active, to be reopened.
    fn pop_to(&mut self, at: usize) {
        for open in self.stack.drain(at..) {
            if !open.formatting {
                continue;
            }
            if let Some(Active::Element { on_stack, .. }) = self.active.iter_mut().rev().find(
                |a| matches!(a, Active::Element { name, on_stack: true, .. } if *name == open.name),
            ) {
                *on_stack = false;
            }
        }
    }

    /// Opens again every active formatting element not on the stack.
    fn reopen(&mut self) {
        let mut reopened = 0;
        let mut names = Vec::new();
        for active in self.active.iter_mut().rev() {
            match active {
                Active::Marker => break,
                Active::Element { on_stack: true, .. } => break,
                Active::Element { name, on_stack, .. } => {
                    *on_stack = true;
                    names.push(name.clone());
                    reopened += 1;
                }
            }
        }
        for name in names.into_iter().rev() {
            self.stack.push(Open {
                name,
                formatting: true,
            });
        }
        if reopened > 0 {
            self.add_elements(reopened);
            self.depth = self.depth.max(self.stack.len());
            self.check_limits();
        }
    }

    fn add_elements(&mut self, count: usize) {
        self.elements = self.elements.saturating_add(count);
        self.check_limits();
    }

    fn check_limits(&mut self) {
        if self.depth > MAX_DEPTH || self.elements > MAX_ELEMENTS {
            self.over = true;
            // Nothing of the model is needed any more.
            self.stack = Vec::new();
            self.active = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(html: &str) -> Shape {
        measure(html, &Budget::unlimited()).unwrap()
    }

    #[test]
    fn ordinary_pages_fit_and_their_text_is_gathered() {
        let page = shape(
            "<!doctype html><html><head><title> Crab  facts </title><style>p{}</style></head><body><nav>Home</nav><p>Crabs walk <b>sideways</b>.<p>They moult &amp; hide.<ul><li>one<li>two</ul><script>x()</script></body></html>",
        );
        assert!(page.fits(), "{page:?}");
        assert!(page.depth <= 6, "{page:?}");
        assert_eq!(page.title.as_deref(), Some("Crab facts"));
        assert!(page.text.contains("Crabs walk sideways."), "{page:?}");
        assert!(page.text.contains("They moult & hide."), "{page:?}");
        assert!(page.text.contains("one\n") && page.text.contains("two"));
        assert!(!page.text.contains("x()") && !page.text.contains("p{}"));
    }

    #[test]
    fn implied_ends_do_not_count_as_nesting() {
        let many =
            "<p>para".repeat(5_000) + &"<li>item".repeat(5_000) + &"<tr><td>a<td>b".repeat(2_000);
        let page = shape(&format!("<body>{many}</body>"));
        assert!(page.depth < 10, "{}", page.depth);
    }

    #[test]
    fn deep_pages_of_every_kind_are_over_the_limit() {
        for html in [
            "<b>".repeat(3_000) + "x" + &"</b>".repeat(3_000),
            "<blockquote>".repeat(3_000),
            "<a><b><i>".repeat(2_000),
            "<div>".repeat(50_000),
            "<li><ul>".repeat(1_000),
            // Formatting elements closed by a block and reopened each time.
            (0..2_000)
                .map(|n| format!("<div><b id={n}>x</div>"))
                .collect::<String>(),
        ] {
            let page = shape(&html);
            assert!(!page.fits(), "{}: {page:?}", &html[..40.min(html.len())]);
        }
    }

    #[test]
    fn the_budget_stops_the_pass() {
        let budget = Budget::unlimited();
        budget.cancel();
        assert_eq!(
            measure(&"<p>x".repeat(10_000), &budget),
            Err(Stopped::Cancelled)
        );
    }
}
