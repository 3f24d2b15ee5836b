//! The tools' arguments, read by hand so that every mistake is named: the
//! argument, what it must be, and what came (serde's own messages do not
//! say which field a wrong type was in). They come here as the kit's tool
//! server passes them: a number sent as a string is a number already.

use crabtalk_kit::tool_server::ToolError;
use serde_json::{Map, Value};

use crate::config::EngineId;
use crate::fetch::Format;
use crate::search::SearchRequest;
use crate::web::MAX_CHARS_LIMIT;

/// The longest query accepted, in characters.
pub(crate) const MAX_QUERY_CHARS: usize = 500;

/// `web_search`'s arguments as a request; `default_count` when none is given.
pub(crate) fn search_request(
    arguments: &Map<String, Value>,
    default_count: usize,
) -> Result<SearchRequest, ToolError> {
    only(
        arguments,
        "web_search",
        &["query", "count", "lang", "region", "engines"],
    )?;
    let query = required_text(
        arguments,
        "query",
        "`query` is empty: give the words to search for",
        "`query` is missing: give the words to search for",
    )?;
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::Arguments(format!(
            "`query` is longer than {MAX_QUERY_CHARS} characters"
        )));
    }
    let count = match arguments.get("count") {
        None | Some(Value::Null) => default_count,
        Some(value) => whole_number(value)
            .filter(|n| (1..=20).contains(n))
            .ok_or_else(|| {
                ToolError::Arguments(format!(
                    "`count` must be a whole number from 1 to 20, not {value}"
                ))
            })?,
    };
    let lang = code(
        arguments,
        "lang",
        "a language code like \"en\" or \"pt-br\"",
    )?;
    let region = code(arguments, "region", "a region code like \"us\" or \"de\"")?;
    let engines = match arguments.get("engines") {
        None | Some(Value::Null) => None,
        Some(value) => Some(engine_list(value)?),
    };
    Ok(SearchRequest {
        query,
        count,
        lang,
        region,
        engines,
    })
}

/// A string argument that must hold more than spaces, trimmed; `empty`
/// and `missing` say what to give instead.
fn required_text(
    arguments: &Map<String, Value>,
    name: &str,
    empty: &str,
    missing: &str,
) -> Result<String, ToolError> {
    match arguments.get(name) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Some(Value::String(_)) => Err(ToolError::arguments(empty)),
        Some(other) => Err(ToolError::Arguments(format!(
            "`{name}` must be a string, not {}",
            kind(other)
        ))),
        None => Err(ToolError::arguments(missing)),
    }
}

/// `web_fetch`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FetchArgs {
    pub url: String,
    pub max_chars: Option<usize>,
    pub format: Format,
}

pub(crate) fn fetch_args(arguments: &Map<String, Value>) -> Result<FetchArgs, ToolError> {
    only(arguments, "web_fetch", &["url", "max_chars", "format"])?;
    let missing = "`url` is missing: give the http(s) URL of the page";
    let url = required_text(arguments, "url", missing, missing)?;
    let max_chars = match arguments.get("max_chars") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            whole_number(value)
                .filter(|n| (1..=MAX_CHARS_LIMIT).contains(n))
                .ok_or_else(|| ToolError::Arguments(format!("`max_chars` must be a whole number from 1 to {MAX_CHARS_LIMIT}, not {value}")))?,
        ),
    };
    let format = match arguments.get("format") {
        None | Some(Value::Null) => Format::Markdown,
        Some(Value::String(text)) if text.eq_ignore_ascii_case("markdown") => Format::Markdown,
        Some(Value::String(text)) if text.eq_ignore_ascii_case("text") => Format::Text,
        Some(other) => {
            return Err(ToolError::Arguments(format!(
                "`format` must be \"markdown\" or \"text\", not {other}"
            )));
        }
    };
    Ok(FetchArgs {
        url,
        max_chars,
        format,
    })
}

/// Refuses arguments the tool does not take, naming them.
fn only(arguments: &Map<String, Value>, tool: &str, known: &[&str]) -> Result<(), ToolError> {
    let unknown: Vec<&str> = arguments
        .keys()
        .map(String::as_str)
        .filter(|key| !known.contains(key))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ToolError::Arguments(format!(
        "unknown argument{} {}; {tool} takes {}",
        if unknown.len() == 1 { "" } else { "s" },
        unknown
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", "),
        known.join(", ")
    )))
}

/// 5 or 5.0. (A string holding a number, `"5"`, comes here as the number:
/// the kit's tool server reads it so, as the schema says `integer`.)
fn whole_number(value: &Value) -> Option<usize> {
    let n = value.as_number()?;
    n.as_u64()
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        })
        .and_then(|n| usize::try_from(n).ok())
}

/// An optional short code of letters and `-`/`_`.
fn code(
    arguments: &Map<String, Value>,
    name: &str,
    what: &str,
) -> Result<Option<String>, ToolError> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text))
            if (2..=12).contains(&text.trim().len())
                && text
                    .trim()
                    .bytes()
                    .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_') =>
        {
            Ok(Some(text.trim().to_ascii_lowercase().replace('_', "-")))
        }
        Some(other) => Err(ToolError::Arguments(format!(
            "`{name}` must be {what}, not {other}"
        ))),
    }
}

/// `["bing", "wikipedia"]` or `"bing,wikipedia"`.
fn engine_list(value: &Value) -> Result<Vec<EngineId>, ToolError> {
    let names: Vec<String> = match value {
        Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    ToolError::Arguments(format!(
                        "`engines` must list engine names, and {item} is not one"
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
        Value::String(text) => text.split(',').map(str::to_owned).collect(),
        other => {
            return Err(ToolError::Arguments(format!(
                "`engines` must be a list of engine names, not {}",
                kind(other)
            )));
        }
    };
    let mut engines = Vec::new();
    for name in names {
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() {
            continue;
        }
        let id = EngineId::named(&name).ok_or_else(|| {
            ToolError::Arguments(format!(
                "`engines`: no engine {name:?}; the engines are {}",
                EngineId::names()
            ))
        })?;
        if !engines.contains(&id) {
            engines.push(id);
        }
    }
    if engines.is_empty() {
        return Err(ToolError::Arguments(format!(
            "`engines` is empty; name some of {} or leave it out for all",
            EngineId::names()
        )));
    }
    Ok(engines)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn good_search_arguments_become_a_request() {
        let request = search_request(&map(json!({"query": "  rust  ", "count": 5, "lang": "EN", "engines": "bing, wikipedia,bing"})), 10).unwrap();
        assert_eq!(request.query, "rust");
        assert_eq!(request.count, 5);
        assert_eq!(request.lang.as_deref(), Some("en"));
        assert_eq!(
            request.engines,
            Some(vec![EngineId::Bing, EngineId::Wikipedia])
        );
        let defaults = search_request(&map(json!({"query": "x"})), 7).unwrap();
        assert_eq!((defaults.count, defaults.engines), (7, None));
    }

    #[test]
    fn every_bad_search_argument_is_named() {
        for (args, says) in [
            (json!({}), "`query` is missing"),
            (json!({"query": " "}), "`query` is empty"),
            (
                json!({"query": 5}),
                "`query` must be a string, not a number",
            ),
            (
                json!({"query": "x", "count": 0}),
                "`count` must be a whole number from 1 to 20, not 0",
            ),
            (json!({"query": "x", "count": 21}), "`count`"),
            (json!({"query": "x", "count": 2.5}), "`count`"),
            (json!({"query": "x", "count": "many"}), "`count`"),
            (
                json!({"query": "x", "lang": "english language"}),
                "`lang` must be a language code",
            ),
            (
                json!({"query": "x", "region": 7}),
                "`region` must be a region code",
            ),
            (
                json!({"query": "x", "engines": ["google"]}),
                "`engines`: no engine \"google\"",
            ),
            (
                json!({"query": "x", "engines": [1]}),
                "`engines` must list engine names",
            ),
            (json!({"query": "x", "engines": []}), "`engines` is empty"),
            (
                json!({"query": "x", "limit": 3}),
                "unknown argument `limit`; web_search takes query, count, lang, region, engines",
            ),
            (json!({"query": "x".repeat(501)}), "longer than 500"),
        ] {
            let err = search_request(&map(args.clone()), 10).unwrap_err();
            assert!(
                matches!(&err, ToolError::Arguments(text) if text.contains(says)),
                "{args}: {err}"
            );
        }
    }

    #[test]
    fn fetch_arguments_are_read_and_bad_ones_named() {
        let args = fetch_args(&map(
            json!({"url": "https://e.example/", "max_chars": 100, "format": "TEXT"}),
        ))
        .unwrap();
        assert_eq!(
            args,
            FetchArgs {
                url: "https://e.example/".into(),
                max_chars: Some(100),
                format: Format::Text
            }
        );
        for (args, says) in [
            (json!({}), "`url` is missing"),
            (json!({"url": ["x"]}), "`url` must be a string"),
            (
                json!({"url": "https://e.example/", "max_chars": 0}),
                "`max_chars` must be a whole number from 1",
            ),
            (
                json!({"url": "https://e.example/", "format": "html"}),
                "`format` must be \"markdown\" or \"text\"",
            ),
            (
                json!({"url": "https://e.example/", "timeout": 3}),
                "unknown argument `timeout`",
            ),
        ] {
            let err = fetch_args(&map(args.clone())).unwrap_err();
            assert!(
                matches!(&err, ToolError::Arguments(text) if text.contains(says)),
                "{args}: {err}"
            );
        }
    }
}
