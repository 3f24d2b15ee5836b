//! Telegram's HTML formatting, read the way the Bot API reads it
//! (`parse_mode = "HTML"`), written from its documentation: the tags
//! `b strong i em u ins s strike del span.tg-spoiler tg-spoiler a[href]
//! code pre blockquote[expandable] tg-emoji`, `code class="language-…"`
//! only directly inside `pre`, no tags inside `code`/`pre` otherwise, no
//! quote inside a quote, the entities `&lt; &gt; &amp; &quot;` and
//! numeric ones, and every `<`, `>`, `&` that is not part of a tag or an
//! entity refused. The error texts follow the Bot API's.

/// A formatting entity of parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    /// The tag as written (`b`, `a`, `pre`…).
    pub tag: String,
    /// In UTF-16 units of the text.
    pub offset: usize,
    pub length: usize,
}

/// Parsed HTML: the visible text and its entities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub text: String,
    pub entities: Vec<Entity>,
}

impl Parsed {
    /// The text's length as Telegram measures it (UTF-16 units).
    pub fn units(&self) -> usize {
        self.text.chars().map(char::len_utf16).sum()
    }
}

const TAGS: [&str; 14] = [
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
];
const MORE_TAGS: [&str; 2] = ["blockquote", "tg-emoji"];

/// What the Bot API refuses in HTML: its text is what the Bot API says
/// after "Bad Request: can't parse entities: ", each at its byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HtmlError {
    #[error("Unclosed start tag at byte offset {at}")]
    UnclosedStartTag { at: usize },
    #[error("Unexpected end tag at byte offset {at}")]
    UnexpectedEndTag { at: usize },
    #[error(
        "Unmatched end tag at byte offset {at}, expected \"</{expected}>\", found \"</{found}>\""
    )]
    UnmatchedEndTag {
        at: usize,
        expected: String,
        found: String,
    },
    #[error("Unsupported start tag \"{tag}\" at byte offset {at}")]
    UnsupportedTag { tag: String, at: usize },
    #[error("Can't use tag \"{tag}\" inside \"{parent}\" at byte offset {at}")]
    TagInside {
        tag: String,
        parent: String,
        at: usize,
    },
    #[error("Can't nest blockquote at byte offset {at}")]
    NestedQuote { at: usize },
    /// `&` or `>` outside a tag or an entity.
    #[error(
        "Character '{character}' is reserved and must be escaped as {escaped} (byte offset {at})"
    )]
    Reserved {
        character: char,
        escaped: &'static str,
        at: usize,
    },
    #[error("Invalid character entity at byte offset {at}")]
    InvalidEntity { at: usize },
    #[error("Unsupported HTML entity \"&{name};\" at byte offset {at}")]
    UnsupportedEntity { name: String, at: usize },
    #[error("Can't find end tag corresponding to start tag \"{tag}\"")]
    Unclosed { tag: String },
    #[error("Can't parse attributes of \"{tag}\" at byte offset {at}")]
    BadAttributes { tag: String, at: usize },
    #[error("Unsupported attribute \"{attribute}\" of \"{tag}\" at byte offset {at}")]
    UnsupportedAttribute {
        attribute: String,
        tag: String,
        at: usize,
    },
    #[error("Unsupported class of \"code\" at byte offset {at}")]
    CodeClass { at: usize },
    #[error("Tag \"span\" must have class \"tg-spoiler\" at byte offset {at}")]
    SpanClass { at: usize },
    #[error("Tag \"a\" must have an href at byte offset {at}")]
    NoHref { at: usize },
}

struct Open {
    tag: String,
    offset: usize,
}

/// Parses `html`; the error is what the Bot API would refuse in it.
pub fn parse(html: &str) -> Result<Parsed, HtmlError> {
    let mut text = String::new();
    let mut units = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    let mut entities = Vec::new();
    let mut i = 0;
    while i < html.len() {
        let c = html[i..].chars().next().expect("in bounds");
        match c {
            '<' => {
                let end = html[i..]
                    .find('>')
                    .map(|e| i + e)
                    .ok_or(HtmlError::UnclosedStartTag { at: i })?;
                let inside = &html[i + 1..end];
                if let Some(name) = inside.strip_prefix('/') {
                    let name = name.trim().to_ascii_lowercase();
                    let open = stack.pop().ok_or(HtmlError::UnexpectedEndTag { at: i })?;
                    if open.tag != name {
                        return Err(HtmlError::UnmatchedEndTag {
                            at: i,
                            expected: open.tag,
                            found: name,
                        });
                    }
                    entities.push(Entity {
                        tag: open.tag,
                        offset: open.offset,
                        length: units - open.offset,
                    });
                } else {
                    let (name, attrs) = match inside.split_once(char::is_whitespace) {
                        Some((name, attrs)) => (name.to_ascii_lowercase(), attrs.trim()),
                        None => (inside.trim().to_ascii_lowercase(), ""),
                    };
                    if !TAGS.contains(&name.as_str()) && !MORE_TAGS.contains(&name.as_str()) {
                        return Err(HtmlError::UnsupportedTag { tag: name, at: i });
                    }
                    check_attributes(&name, attrs, stack.last().map(|o| o.tag.as_str()), i)?;
                    if let Some(parent) = stack.last() {
                        let parent = parent.tag.as_str();
                        let code_in_pre = parent == "pre" && name == "code";
                        if (parent == "code" || parent == "pre") && !code_in_pre {
                            return Err(HtmlError::TagInside {
                                tag: name,
                                parent: parent.to_owned(),
                                at: i,
                            });
                        }
                    }
                    if name == "blockquote" && stack.iter().any(|o| o.tag == "blockquote") {
                        return Err(HtmlError::NestedQuote { at: i });
                    }
                    stack.push(Open {
                        tag: name,
                        offset: units,
                    });
                }
                i = end + 1;
            }
            '&' => {
                let end = html[i..]
                    .find(';')
                    .map(|e| i + e)
                    .filter(|e| e - i <= 10)
                    .ok_or(HtmlError::Reserved {
                        character: '&',
                        escaped: "&amp;",
                        at: i,
                    })?;
                let name = &html[i + 1..end];
                let decoded = match name {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    numeric if numeric.starts_with('#') => {
                        let number = numeric
                            .strip_prefix("#x")
                            .or_else(|| numeric.strip_prefix("#X"))
                            .map(|hex| u32::from_str_radix(hex, 16))
                            .unwrap_or_else(|| numeric[1..].parse());
                        number
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or(HtmlError::InvalidEntity { at: i })?
                    }
                    other => {
                        return Err(HtmlError::UnsupportedEntity {
                            name: other.to_owned(),
                            at: i,
                        });
                    }
                };
                text.push(decoded);
                units += decoded.len_utf16();
                i = end + 1;
            }
            '>' => {
                return Err(HtmlError::Reserved {
                    character: '>',
                    escaped: "&gt;",
                    at: i,
                });
            }
            c => {
                text.push(c);
                units += c.len_utf16();
                i += c.len_utf8();
            }
        }
    }
    if let Some(open) = stack.last() {
        return Err(HtmlError::Unclosed {
            tag: open.tag.clone(),
        });
    }
    Ok(Parsed { text, entities })
}

fn check_attributes(
    name: &str,
    attrs: &str,
    parent: Option<&str>,
    at: usize,
) -> Result<(), HtmlError> {
    let attrs = parse_attributes(attrs).ok_or_else(|| HtmlError::BadAttributes {
        tag: name.to_owned(),
        at,
    })?;
    let allowed: &[&str] = match name {
        "a" => &["href"],
        "code" => &["class"],
        "span" => &["class"],
        "blockquote" => &["expandable"],
        "tg-emoji" => &["emoji-id"],
        _ => &[],
    };
    for (key, value) in &attrs {
        if !allowed.contains(&key.as_str()) {
            return Err(HtmlError::UnsupportedAttribute {
                attribute: key.clone(),
                tag: name.to_owned(),
                at,
            });
        }
        if name == "code" && (parent != Some("pre") || !value.starts_with("language-")) {
            return Err(HtmlError::CodeClass { at });
        }
        if name == "span" && value != "tg-spoiler" {
            return Err(HtmlError::SpanClass { at });
        }
    }
    if name == "a" && !attrs.iter().any(|(k, v)| k == "href" && !v.is_empty()) {
        return Err(HtmlError::NoHref { at });
    }
    if name == "span" && attrs.is_empty() {
        return Err(HtmlError::SpanClass { at });
    }
    Ok(())
}

/// `key="value"` pairs (values unescaped); `None` when malformed.
fn parse_attributes(mut text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    loop {
        text = text.trim_start();
        if text.is_empty() {
            return Some(out);
        }
        let key_end = text
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(text.len());
        let key = text[..key_end].to_ascii_lowercase();
        text = text[key_end..].trim_start();
        let Some(rest) = text.strip_prefix('=') else {
            out.push((key, String::new()));
            continue;
        };
        let rest = rest.trim_start();
        let quote = rest.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        let end = rest[1..].find(quote)? + 1;
        let value = rest[1..end]
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        out.push((key, value));
        text = &rest[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subset_is_read_and_everything_else_refused() {
        let parsed = parse(
            "<b>bold</b> &lt;x&gt; &amp; <pre><code class=\"language-rust\">fn</code></pre> 😀",
        )
        .unwrap();
        assert_eq!(parsed.text, "bold <x> & fn 😀");
        assert_eq!(parsed.units(), 16);
        assert_eq!(
            parsed.entities[0],
            Entity {
                tag: "b".into(),
                offset: 0,
                length: 4
            }
        );
        assert!(parse("<a href=\"https://x?a=1&amp;b=2\">l</a>").is_ok());
        for bad in [
            "<b>open",
            "<b><i>x</b></i>",
            "<div>x</div>",
            "a & b",
            "a > b",
            "<code><b>x</b></code>",
            "<code class=\"language-x\">x</code>",
            "<a>x</a>",
            "<blockquote><blockquote>x</blockquote></blockquote>",
            "&nbsp;",
            "<b class=\"x\">x</b>",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_read_as_the_bot_apis() {
        for (bad, says) in [
            (
                "<b>open",
                "Can't find end tag corresponding to start tag \"b\"",
            ),
            (
                "<b><i>x</b></i>",
                "Unmatched end tag at byte offset 7, expected \"</i>\", found \"</b>\"",
            ),
            (
                "<div>x</div>",
                "Unsupported start tag \"div\" at byte offset 0",
            ),
            (
                "a & b",
                "Character '&' is reserved and must be escaped as &amp; (byte offset 2)",
            ),
            (
                "a > b",
                "Character '>' is reserved and must be escaped as &gt; (byte offset 2)",
            ),
            (
                "&nbsp;",
                "Unsupported HTML entity \"&nbsp;\" at byte offset 0",
            ),
            (
                "<b class=\"x\">x</b>",
                "Unsupported attribute \"class\" of \"b\" at byte offset 0",
            ),
        ] {
            assert_eq!(parse(bad).unwrap_err().to_string(), says, "{bad}");
        }
    }
}
