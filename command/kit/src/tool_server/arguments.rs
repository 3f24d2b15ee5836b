//! The one place a tool's arguments are taken in a looser shape than the
//! schema says (RFC 0043). Models and clients send two such shapes:
//!
//! - the whole arguments as a JSON string holding the object
//!   (`"arguments": "{\"q\":1}"`). MCP says an object, and rmcp refuses
//!   anything else before a handler sees it, so
//!   [`fix_string_arguments`] puts the object in the string's place on the
//!   wire, before the request reaches rmcp;
//! - an argument as a string holding a number or a boolean (`"n": "1"`),
//!   what form-based clients such as the MCP inspector send. [`coerce`]
//!   reads such a string as the value it holds where the tool's schema
//!   wants an integer, a number or a boolean.
//!
//! Both read the text as JSON would read it, so an argument comes out as
//! it would have had the client sent it as JSON in the first place. The
//! object a string holds is put in its place as the very text the client
//! wrote, not parsed and written again: a number re-read after being
//! written again can differ in its last bit (serde_json's default reading
//! of a long decimal is not exact), and nothing else in the request is
//! rewritten at all.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::JsonObject;
use serde_json::Value;
use serde_json::value::RawValue;

/// The largest MCP request body read.
const MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// `router` with string arguments of `tools/call` parsed into objects.
pub(super) fn accept_string_arguments(router: axum::Router) -> axum::Router {
    router.layer(axum::middleware::from_fn(string_arguments))
}

async fn string_arguments(request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large",
            )
                .into_response();
        }
    };
    let body = match fix_string_arguments(&bytes) {
        Some(fixed) => {
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            Body::from(fixed)
        }
        None => Body::from(bytes),
    };
    next.run(Request::from_parts(parts, body)).await
}

/// The request with its string `arguments` replaced by the object the
/// string holds, if it is a `tools/call` with such arguments. Every other
/// member of the request keeps its text as sent.
pub fn fix_string_arguments(bytes: &[u8]) -> Option<Vec<u8>> {
    // Read whole first: what serde_json refuses (too deep, not JSON) is
    // left for rmcp to refuse.
    let message: Value = serde_json::from_slice(bytes).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let text = message.get("params")?.get("arguments")?.as_str()?;
    let held: Value = serde_json::from_str(text).ok()?;
    if !held.is_object() {
        return None;
    }
    // Then again with every member as its raw text, to put the held text
    // in place of the string and write the rest back as it came.
    let mut raw: BTreeMap<String, Box<RawValue>> = serde_json::from_slice(bytes).ok()?;
    let mut params: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(raw.get("params")?.get()).ok()?;
    params.insert(
        "arguments".into(),
        RawValue::from_string(text.to_owned()).ok()?,
    );
    raw.insert(
        "params".into(),
        serde_json::value::to_raw_value(&params).ok()?,
    );
    serde_json::to_vec(&raw).ok()
}

/// Reads every string argument that holds what the tool's `schema` wants
/// there — an integer, a number or a boolean, where the schema does not
/// take a string too — as that value; in nested objects and arrays too,
/// as far as the schema describes them. Anything else is left for the
/// tool to judge.
pub(crate) fn coerce(arguments: &mut JsonObject, schema: &JsonObject) {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    for (name, value) in arguments.iter_mut() {
        if let Some(Value::Object(wanted)) = properties.get(name) {
            coerce_value(value, wanted);
        }
    }
}

fn coerce_value(value: &mut Value, schema: &JsonObject) {
    match value {
        Value::String(text) => {
            if let Some(read) = read_as_wanted(text, schema) {
                *value = read;
            }
        }
        Value::Object(object) => coerce(object, schema),
        Value::Array(items) => {
            if let Some(Value::Object(wanted)) = schema.get("items") {
                for item in items {
                    coerce_value(item, wanted);
                }
            }
        }
        _ => {}
    }
}

/// `text` read as JSON, when that gives a value of a type `schema` wants
/// and the schema does not take a string.
fn read_as_wanted(text: &str, schema: &JsonObject) -> Option<Value> {
    let types: Vec<&str> = match schema.get("type")? {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if types.contains(&"string") {
        return None;
    }
    // Only what could be a number or a boolean is parsed.
    let first = text.trim_start().bytes().next()?;
    if !(first.is_ascii_digit() || first == b'-' || first == b't' || first == b'f') {
        return None;
    }
    let read: Value = serde_json::from_str(text).ok()?;
    let wanted = match &read {
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            types.contains(&"integer") || types.contains(&"number")
        }
        Value::Number(_) => types.contains(&"number"),
        Value::Bool(_) => types.contains(&"boolean"),
        _ => false,
    };
    wanted.then_some(read)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn string_arguments_become_objects_and_everything_else_is_left() {
        let fixed = fix_string_arguments(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":"{\"a\":1}"}}"#).unwrap();
        let value: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(value["params"]["arguments"]["a"], 1);
        assert_eq!(value["params"]["name"], "t");
        assert_eq!(
            (value["id"].clone(), value["jsonrpc"].clone()),
            (json!(1), json!("2.0"))
        );
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":{"a":1}}}"#)
                .is_none()
        );
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":"not json"}}"#)
                .is_none()
        );
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":"[1]"}}"#)
                .is_none()
        );
        assert!(fix_string_arguments(br#"{"method":"tools/list"}"#).is_none());
        assert!(fix_string_arguments(b"garbage").is_none());
    }

    /// The fuzz target `mcp_arguments` found it (issue 26): the string
    /// held an 84-digit number, parsed and written again it read back
    /// one bit off what the string itself reads as.
    #[test]
    fn a_long_number_in_string_arguments_reads_as_the_string_reads() {
        // components/fuzz/corpus/mcp_arguments/long-number
        let seed = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":"{\"x\":666666766677777777767666767767766776677666767767766676766776676767677776667677776666.66}"}}"#;
        let request: Value = serde_json::from_slice(seed).unwrap();
        let held: Value =
            serde_json::from_str(request["params"]["arguments"].as_str().unwrap()).unwrap();
        let fixed: Value = serde_json::from_slice(&fix_string_arguments(seed).unwrap()).unwrap();
        assert_eq!(fixed["params"]["arguments"], held);
        // And the request's own members, numbers included, are as sent.
        let mut rest = fixed.clone();
        rest["params"]["arguments"] = request["params"]["arguments"].clone();
        assert_eq!(rest, request);
    }

    fn coerced(arguments: Value, schema: Value) -> Value {
        let mut arguments = arguments.as_object().cloned().unwrap();
        coerce(&mut arguments, schema.as_object().unwrap());
        Value::Object(arguments)
    }

    #[test]
    fn strings_holding_what_the_schema_wants_are_read_as_it() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "x": {"type": "number"},
                "wait": {"type": "boolean"},
                "maybe": {"type": ["integer", "null"]},
                "id": {"type": "string"},
                "either": {"type": ["integer", "string"]},
                "list": {"type": "array", "items": {"type": "integer"}},
                "inner": {"type": "object", "properties": {"k": {"type": "integer"}}}
            }
        });
        assert_eq!(
            coerced(
                json!({"n": "1", "x": " 2.5 ", "wait": "true", "maybe": "-3", "id": "7", "either": "8",
                       "list": ["1", 2], "inner": {"k": "4"}, "unknown": "5"}),
                schema.clone()
            ),
            json!({"n": 1, "x": 2.5, "wait": true, "maybe": -3, "id": "7", "either": "8",
                   "list": [1, 2], "inner": {"k": 4}, "unknown": "5"})
        );
        // An integer is a number too; a number with a fraction is no
        // integer; nothing else is touched, and the tool says what is wrong.
        assert_eq!(
            coerced(
                json!({"x": "3", "n": "1.5", "wait": "yes", "maybe": "many"}),
                schema.clone()
            ),
            json!({"x": 3, "n": "1.5", "wait": "yes", "maybe": "many"})
        );
        assert_eq!(
            coerced(json!({"n": "1e999", "x": "[1]", "wait": "null"}), schema),
            json!({"n": "1e999", "x": "[1]", "wait": "null"})
        );
    }

    #[test]
    fn a_number_in_a_string_reads_as_the_same_number_sent_bare() {
        let digits = "666666766677777777767666767767766776677666767767766676766776676767677776667677776666.66";
        let bare: Value = serde_json::from_str(&format!("{{\"x\": {digits}}}")).unwrap();
        let schema = json!({"properties": {"x": {"type": "number"}}});
        assert_eq!(coerced(json!({"x": digits}), schema), bare);
    }
}
