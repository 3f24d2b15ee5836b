//! What every component's `call_tool` does before and after its own work:
//! gather the call's `_meta` (the daemon puts who called in the request's
//! `_meta`; a client may put it on the params), read the arguments into the
//! tool's own type, and turn the tool's answer into a `CallToolResult`.

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject};
use rmcp::service::RequestContext;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The call's `_meta`: the request's, then the params' own over it.
pub fn call_meta(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> JsonObject {
    let mut meta = context.meta.0.clone();
    if let Some(own) = &request.meta {
        meta.extend(own.0.clone());
    }
    meta.0
}

/// The call's arguments as one JSON value (`null` when there are none).
pub fn call_arguments(request: &CallToolRequestParams) -> Value {
    request
        .arguments
        .clone()
        .map(Value::Object)
        .unwrap_or(Value::Null)
}

/// Reads a tool's arguments into `T`; a JSON string holding the object is
/// accepted too, and no arguments read as `{}`. The error is a sentence for
/// the model.
pub fn tool_arguments<T: DeserializeOwned>(arguments: Value) -> Result<T, String> {
    let arguments = match arguments {
        Value::String(text) => serde_json::from_str(&text).map_err(|err| {
            format!("the arguments are a string that is not a JSON object: {err}")
        })?,
        Value::Null => json!({}),
        other => other,
    };
    serde_json::from_value(arguments).map_err(|err| format!("invalid arguments: {err}"))
}

/// A tool's answer: structured content, or an error the model reads.
pub fn tool_result(answer: Result<Value, String>) -> CallToolResult {
    match answer {
        Ok(value) => CallToolResult::structured(value),
        Err(err) => CallToolResult::error(vec![ContentBlock::text(err)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Args {
        #[serde(default)]
        n: u32,
    }

    #[test]
    fn arguments_are_an_object_a_string_holding_one_or_nothing() {
        assert_eq!(tool_arguments::<Args>(json!({"n": 3})), Ok(Args { n: 3 }));
        assert_eq!(
            tool_arguments::<Args>(json!("{\"n\": 4}")),
            Ok(Args { n: 4 })
        );
        assert_eq!(tool_arguments::<Args>(Value::Null), Ok(Args { n: 0 }));
        let err = tool_arguments::<Args>(json!("n=4")).unwrap_err();
        assert!(
            err.starts_with("the arguments are a string that is not a JSON object"),
            "{err}"
        );
        let err = tool_arguments::<Args>(json!({"n": "three"})).unwrap_err();
        assert!(err.starts_with("invalid arguments"), "{err}");
    }

    #[test]
    fn answers_become_structured_results_or_errors() {
        let ok = tool_result(Ok(json!({"sent": 1})));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"sent": 1})));
        let err = tool_result(Err("no such chat".into()));
        assert_eq!(err.is_error, Some(true));
    }
}
