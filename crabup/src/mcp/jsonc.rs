//! Setting one member of a JSON (or JSON with comments) file in place.
//!
//! The files crabup adds the bridge to belong to other programs and to
//! their users: Zed's `settings.json` is JSON with comments and trailing
//! commas, and every file may be laid out by hand. Parsing into a value and
//! printing it again would drop the comments and reorder the keys, so the
//! edit is made on the text: the file is read into the spans of its
//! objects' members, and only the member at the path is replaced or
//! inserted; every other byte stays where it was.
//!
//! A file that is not an object of objects where the path goes is refused
//! with the line and column of the problem, and nothing is written.

use std::ops::Range;

/// Why the text could not be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub(crate) struct EditError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// How deep the parser goes; deeper files are refused.
const MAX_DEPTH: usize = 128;

/// One `"key": value` of an object.
#[derive(Debug)]
struct Member {
    key: String,
    /// The value's text.
    value: Range<usize>,
    /// The value, when it is an object.
    object: Option<Object>,
}

/// An object: where its braces are, and its members.
#[derive(Debug)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn error(&self, at: usize, message: impl Into<String>) -> EditError {
        let before = &self.text[..at.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        EditError {
            line,
            column,
            message: message.into(),
        }
    }

    /// Skips blanks and comments.
    fn skip(&mut self) -> Result<(), EditError> {
        loop {
            match self.bytes.get(self.at) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                // A byte-order mark at the start.
                Some(0xEF) if self.at == 0 && self.bytes.starts_with(&[0xEF, 0xBB, 0xBF]) => {
                    self.at += 3;
                }
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                    while self.bytes.get(self.at).is_some_and(|b| *b != b'\n') {
                        self.at += 1;
                    }
                }
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                    let start = self.at;
                    self.at += 2;
                    loop {
                        match self.bytes.get(self.at) {
                            None => return Err(self.error(start, "a /* comment is not closed")),
                            Some(b'*') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                                self.at += 2;
                                break;
                            }
                            Some(_) => self.at += 1,
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), EditError> {
        self.skip()?;
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(self.at, format!("expected {what}")))
        }
    }

    /// A string's text (escapes decoded), after its opening quote.
    fn string(&mut self) -> Result<String, EditError> {
        let start = self.at;
        self.at += 1;
        let mut raw_end = None;
        while let Some(byte) = self.bytes.get(self.at) {
            match byte {
                b'\\' => self.at += 2,
                b'"' => {
                    raw_end = Some(self.at);
                    self.at += 1;
                    break;
                }
                b'\n' => break,
                _ => self.at += 1,
            }
        }
        let Some(end) = raw_end else {
            return Err(self.error(start, "a string is not closed on its line"));
        };
        serde_json::from_str(&self.text[start..=end])
            .map_err(|err| self.error(start, format!("a string is not valid JSON: {err}")))
    }

    /// Any value; its members when it is an object.
    fn value(&mut self, depth: usize) -> Result<(Range<usize>, Option<Object>), EditError> {
        if depth > MAX_DEPTH {
            return Err(self.error(self.at, format!("nested more than {MAX_DEPTH} deep")));
        }
        self.skip()?;
        let start = self.at;
        match self.bytes.get(self.at) {
            Some(b'{') => {
                let object = self.object(depth)?;
                Ok((start..self.at, Some(object)))
            }
            Some(b'[') => {
                self.at += 1;
                loop {
                    self.skip()?;
                    if self.bytes.get(self.at) == Some(&b']') {
                        self.at += 1;
                        break;
                    }
                    self.value(depth + 1)?;
                    self.skip()?;
                    match self.bytes.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            break;
                        }
                        _ => return Err(self.error(self.at, "expected , or ] in an array")),
                    }
                }
                Ok((start..self.at, None))
            }
            Some(b'"') => {
                self.string()?;
                Ok((start..self.at, None))
            }
            Some(_) => {
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                {
                    self.at += 1;
                }
                let word = &self.text[start..self.at];
                let known = matches!(word, "true" | "false" | "null")
                    || serde_json::from_str::<serde_json::Number>(word).is_ok();
                if known {
                    Ok((start..self.at, None))
                } else {
                    Err(self.error(start, "expected a value"))
                }
            }
            None => Err(self.error(start, "the text ends where a value should be")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Object, EditError> {
        let open = self.at;
        self.at += 1;
        let mut members = Vec::new();
        loop {
            self.skip()?;
            match self.bytes.get(self.at) {
                Some(b'}') => break,
                Some(b'"') => {}
                _ => return Err(self.error(self.at, "expected a \"key\" or }")),
            }
            let key = self.string()?;
            self.expect(b':', "a : after the key")?;
            let (value, object) = self.value(depth + 1)?;
            members.push(Member { key, value, object });
            self.skip()?;
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => break,
                _ => return Err(self.error(self.at, "expected , or } in an object")),
            }
        }
        let close = self.at;
        self.at += 1;
        Ok(Object {
            open,
            close,
            members,
        })
    }

    /// The whole text: one object, then nothing but blanks and comments.
    fn document(&mut self) -> Result<Object, EditError> {
        self.skip()?;
        if self.bytes.get(self.at) != Some(&b'{') {
            return Err(self.error(self.at, "the file is not a JSON object"));
        }
        let object = self.object(0)?;
        self.skip()?;
        if self.at < self.bytes.len() {
            return Err(self.error(self.at, "more text after the top-level object"));
        }
        Ok(object)
    }
}

/// The blanks at the start of the line `at` is on.
fn indent_of(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// `value` pretty-printed, its lines after the first indented by `indent`.
fn render(value: &serde_json::Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    pretty.replace('\n', &format!("\n{indent}"))
}

/// `text` (JSON, comments allowed) with the member at `path` — objects all
/// the way — set to `value`: replaced where it is, else added as the last
/// member of the deepest object that exists, with the objects still
/// missing around it. An empty `text` is an empty object.
pub(crate) fn set_member(
    text: &str,
    path: &[&str],
    value: &serde_json::Value,
) -> Result<String, EditError> {
    assert!(!path.is_empty(), "a path names at least one member");
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let mut parser = Parser::new(source);
    let mut object = parser.document()?;
    let mut depth = 0;
    loop {
        let key = path[depth];
        let Some(index) = object.members.iter().position(|member| member.key == key) else {
            break;
        };
        if depth + 1 == path.len() {
            // Replace the value where it stands, indented like its key.
            let member = &object.members[index];
            let indent = indent_of(source, member.value.start).to_owned();
            let mut out = String::with_capacity(source.len() + 256);
            out.push_str(&source[..member.value.start]);
            out.push_str(&render(value, &indent));
            out.push_str(&source[member.value.end..]);
            return Ok(out);
        }
        let member = object.members.swap_remove(index);
        let Some(inner) = member.object else {
            return Err(parser.error(
                member.value.start,
                format!(
                    "\"{}\" is not an object, so \"{}\" cannot go in it; fix it by hand",
                    path[..=depth].join("\" → \""),
                    path[depth + 1]
                ),
            ));
        };
        object = inner;
        depth += 1;
    }
    // The members still missing, nested, as one new member of `object`.
    let mut nested = value.clone();
    for key in path[depth + 1..].iter().rev() {
        nested = serde_json::json!({ *key: nested });
    }
    let key = serde_json::to_string(path[depth]).unwrap_or_default();
    Ok(insert_member(source, &object, &key, &nested))
}

/// `source` with `"key": value` added as the last member of `object`.
fn insert_member(source: &str, object: &Object, key: &str, value: &serde_json::Value) -> String {
    let (at, indent, lead) = match object.members.last() {
        Some(last) => {
            let indent = indent_of(source, last.value.start);
            // A trailing comma (JSON with comments allows one) stays the
            // separator; else one is added after the last value.
            let after = &source[last.value.end..object.close];
            let comma = trailing_comma(after);
            match comma {
                Some(offset) => (
                    last.value.end + offset + 1,
                    indent.to_owned(),
                    String::new(),
                ),
                None => (last.value.end, indent.to_owned(), ",".to_owned()),
            }
        }
        None => {
            let outer = indent_of(source, object.open);
            (object.open + 1, format!("{outer}  "), String::new())
        }
    };
    let mut out = String::with_capacity(source.len() + 256);
    out.push_str(&source[..at]);
    out.push_str(&lead);
    out.push('\n');
    out.push_str(&indent);
    out.push_str(key);
    out.push_str(": ");
    out.push_str(&render(value, &indent));
    if object.members.is_empty() {
        // Close the braces on a line of their own.
        let rest = &source[at..object.close];
        if rest.trim().is_empty() {
            out.push('\n');
            out.push_str(indent_of(source, object.open));
            out.push_str(&source[object.close..]);
            return out;
        }
    }
    out.push_str(&source[at..]);
    out
}

/// Where the comma after a member's value is in `after` (the text up to the
/// object's closing brace), if there is one outside comments.
fn trailing_comma(after: &str) -> Option<usize> {
    let bytes = after.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b',' => return Some(at),
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at += 2;
                while at + 1 < bytes.len() && !(bytes[at] == b'*' && bytes[at + 1] == b'/') {
                    at += 1;
                }
                at += 2;
            }
            _ => at += 1,
        }
    }
    None
}

/// The member at `path` of `text`, as JSON text, if the text parses and it
/// is there: how a write is read back.
pub(crate) fn get_member(
    text: &str,
    path: &[&str],
) -> Result<Option<serde_json::Value>, EditError> {
    let mut parser = Parser::new(text);
    let mut object = parser.document()?;
    for (depth, key) in path.iter().enumerate() {
        let Some(index) = object.members.iter().position(|member| member.key == *key) else {
            return Ok(None);
        };
        let member = object.members.swap_remove(index);
        if depth + 1 == path.len() {
            let value = strip_comments(&text[member.value.clone()]);
            return Ok(serde_json::from_str(&value).ok());
        }
        match member.object {
            Some(inner) => object = inner,
            None => return Ok(None),
        }
    }
    Ok(None)
}

/// `text` without its comments and the trailing commas JSON forbids: plain
/// JSON for `serde_json`. Strings are left alone.
pub fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut last = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                out.push_str(&text[last..at]);
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
                last = at;
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                out.push_str(&text[last..at]);
                at += 2;
                while at + 1 < bytes.len() && !(bytes[at] == b'*' && bytes[at + 1] == b'/') {
                    at += 1;
                }
                at = (at + 2).min(bytes.len());
                last = at;
            }
            b',' => {
                // A comma before a closing bracket is dropped.
                let rest = strip_leading_blanks(&text[at + 1..]);
                if rest.starts_with('}') || rest.starts_with(']') {
                    out.push_str(&text[last..at]);
                    last = at + 1;
                }
                at += 1;
            }
            _ => at += 1,
        }
    }
    out.push_str(&text[last.min(text.len())..]);
    out
}

/// `text` from its first byte that is neither blank nor in a comment.
fn strip_leading_blanks(text: &str) -> &str {
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = trimmed.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else {
            return trimmed;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PATH: [&str; 2] = ["mcpServers", "crabtalk"];

    fn entry() -> serde_json::Value {
        json!({"command": "/bin/crabtalkd", "args": ["mcp"], "env": {"CRABTALK_HOME": "/h"}})
    }

    fn plain(text: &str) -> serde_json::Value {
        serde_json::from_str(&strip_comments(text)).unwrap_or_else(|err| panic!("{err}:\n{text}"))
    }

    #[test]
    fn an_entry_is_added_beside_the_others_and_everything_else_stays() {
        let text = "{\n  \"mcpServers\": {\n    \"files\": {\"command\": \"fs\"}\n  },\n  \"theme\": \"dark\"\n}\n";
        let out = set_member(text, &PATH, &entry()).unwrap();
        let value = plain(&out);
        assert_eq!(value["mcpServers"]["files"], json!({"command": "fs"}));
        assert_eq!(value["mcpServers"]["crabtalk"], entry());
        assert_eq!(value["theme"], "dark");
        assert!(out.starts_with("{\n  \"mcpServers\": {\n    \"files\": {\"command\": \"fs\"},\n    \"crabtalk\": {\n      \"args\""), "{out}");
        // Setting it again replaces it, and changes nothing else.
        let again = set_member(&out, &PATH, &json!({"command": "/new"})).unwrap();
        assert_eq!(
            plain(&again)["mcpServers"]["crabtalk"],
            json!({"command": "/new"})
        );
        assert_eq!(
            plain(&again)["mcpServers"]["files"],
            json!({"command": "fs"})
        );
        assert_eq!(
            set_member(&again, &PATH, &json!({"command": "/new"})).unwrap(),
            again
        );
    }

    #[test]
    fn comments_trailing_commas_and_layout_survive() {
        let text = "// Zed settings\n//\n// see https://zed.dev/docs\n{\n  \"theme\": \"One Dark\", // my theme\n  /* fonts */\n  \"buffer_font_size\": 15,\n}\n";
        let path = ["context_servers", "crabtalk"];
        let out = set_member(text, &path, &entry()).unwrap();
        assert!(out.starts_with("// Zed settings\n//\n// see https://zed.dev/docs\n{\n  \"theme\": \"One Dark\", // my theme\n  /* fonts */\n  \"buffer_font_size\": 15,\n  \"context_servers\": {"), "{out}");
        let value = plain(&out);
        assert_eq!(value["context_servers"]["crabtalk"], entry());
        assert_eq!(value["buffer_font_size"], 15);
        assert_eq!(get_member(&out, &path).unwrap(), Some(entry()));
    }

    #[test]
    fn an_empty_or_missing_file_becomes_an_object_with_the_entry() {
        for text in ["", "  \n", "{}", "{\n}\n", "{ /* nothing yet */ }"] {
            let out = set_member(text, &PATH, &entry()).unwrap();
            assert_eq!(
                plain(&out)["mcpServers"]["crabtalk"],
                entry(),
                "{text:?} → {out}"
            );
        }
        assert_eq!(
            set_member("", &PATH, &entry()).unwrap(),
            "{\n  \"mcpServers\": {\n    \"crabtalk\": {\n      \"args\": [\n        \"mcp\"\n      ],\n      \"command\": \"/bin/crabtalkd\",\n      \"env\": {\n        \"CRABTALK_HOME\": \"/h\"\n      }\n    }\n  }\n}\n"
        );
    }

    #[test]
    fn keys_with_escapes_and_braces_in_strings_do_not_confuse_it() {
        let text = r#"{"a{b": "}\"{", "mcpServers": {"x\"y": 1, "crabtalk": [1, {"k": "v"}]}}"#;
        let out = set_member(text, &PATH, &entry()).unwrap();
        let value = plain(&out);
        assert_eq!(value["a{b"], "}\"{");
        assert_eq!(value["mcpServers"]["x\"y"], 1);
        assert_eq!(value["mcpServers"]["crabtalk"], entry());
    }

    #[test]
    fn what_cannot_be_edited_is_refused_where_it_is() {
        let err = set_member("{\n  \"mcpServers\": [1, 2]\n}", &PATH, &entry()).unwrap_err();
        assert_eq!((err.line, err.column), (2, 17));
        assert!(err.message.contains("not an object"), "{err}");
        let err = set_member("{\n  \"a\": 1\n  \"b\": 2\n}", &PATH, &entry()).unwrap_err();
        assert_eq!((err.line, err.column), (3, 3), "{err}");
        assert!(set_member("[1]", &PATH, &entry()).is_err());
        assert!(set_member("{\"a\": tru}", &PATH, &entry()).is_err());
        assert!(set_member("{\"a\": 1} x", &PATH, &entry()).is_err());
        assert!(set_member("{ /* open", &PATH, &entry()).is_err());
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(
            set_member(&deep, &PATH, &entry())
                .unwrap_err()
                .message
                .contains("deep")
        );
    }

    mod properties {
        use proptest::prelude::*;
        use serde_json::{Map, Value, json};

        use super::super::*;

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i32>().prop_map(|n| json!(n)),
                "[ -~é\\\\\"{}/*,]{0,12}".prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map("[a-zA-Z/*\"{}, ]{0,8}", inner, 0..4)
                        .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
                ]
            })
        }

        fn object() -> impl Strategy<Value = Map<String, Value>> {
            prop::collection::btree_map("[a-zA-Z_]{1,8}", value(), 0..5)
                .prop_map(|map| map.into_iter().collect())
        }

        /// `value` as text: compact or pretty, maybe with comments and a
        /// trailing comma where JSON with comments allows them.
        fn written(value: &Value, pretty: bool, comments: bool) -> String {
            let text = if pretty {
                serde_json::to_string_pretty(value).unwrap()
            } else {
                serde_json::to_string(value).unwrap()
            };
            if !comments {
                return text;
            }
            let mut text = format!("// settings\n/* made by hand */ {text}\n// end\n");
            if let Some(close) = text.rfind('}')
                && text[..close].trim_end().ends_with(|c| c != '{')
            {
                text.insert_str(close, ", // trailing\n");
            }
            text
        }

        proptest! {
            #[test]
            fn any_text_is_edited_or_refused_never_a_panic(text in "\\PC{0,200}") {
                let _ = set_member(&text, &["mcpServers", "crabtalk"], &json!({"command": "x"}));
                let _ = get_member(&text, &["mcpServers", "crabtalk"]);
                let _ = strip_comments(&text);
            }

            #[test]
            fn every_other_member_stays_and_the_entry_reads_back(
                top in object(),
                servers in object(),
                has_servers in any::<bool>(),
                pretty in any::<bool>(),
                comments in any::<bool>(),
            ) {
                let mut document = top.clone();
                document.remove("mcpServers");
                if has_servers {
                    document.insert("mcpServers".into(), Value::Object(servers.clone()));
                }
                let text = written(&Value::Object(document.clone()), pretty, comments);
                let entry = json!({"command": "/bin/crabtalkd", "args": ["mcp"]});
                let path = ["mcpServers", "crabtalk"];
                let out = set_member(&text, &path, &entry).unwrap();
                let parsed: Value = serde_json::from_str(&strip_comments(&out))
                    .unwrap_or_else(|err| panic!("{err}:\n{out}"));
                prop_assert_eq!(&parsed["mcpServers"]["crabtalk"], &entry);
                prop_assert_eq!(get_member(&out, &path).unwrap(), Some(entry));
                for (key, value) in &document {
                    if key == "mcpServers" {
                        for (name, server) in &servers {
                            if name != "crabtalk" {
                                prop_assert_eq!(&parsed["mcpServers"][name], server);
                            }
                        }
                    } else {
                        prop_assert_eq!(&parsed[key], value);
                    }
                }
                if comments {
                    prop_assert!(out.starts_with("// settings\n/* made by hand */ "), "{}", out);
                }
            }
        }
    }
}
