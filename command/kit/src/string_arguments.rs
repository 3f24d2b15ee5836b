//! Tool calls whose `arguments` arrive as a JSON string holding the object
//! (some models and clients send `"arguments": "{\"q\":1}"`). MCP says an
//! object, and rmcp refuses anything else before a component's handler
//! sees it; [`accept_string_arguments`] puts the object in the string's
//! place before the request reaches the MCP layer.

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// The largest MCP request body read.
pub(crate) const MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// `router` with string arguments of `tools/call` parsed into objects.
pub fn accept_string_arguments(router: axum::Router) -> axum::Router {
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

/// The request with string `arguments` parsed, if it had any.
pub fn fix_string_arguments(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let arguments = message.get_mut("params")?.get_mut("arguments")?;
    let text = arguments.as_str()?;
    let parsed: Value = serde_json::from_str(text).ok().filter(Value::is_object)?;
    *arguments = parsed;
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_arguments_become_objects_and_everything_else_is_left() {
        let fixed = fix_string_arguments(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":"{\"a\":1}"}}"#).unwrap();
        let value: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(value["params"]["arguments"]["a"], 1);
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":{"a":1}}}"#)
                .is_none()
        );
        assert!(
            fix_string_arguments(br#"{"method":"tools/call","params":{"arguments":"not json"}}"#)
                .is_none()
        );
        assert!(fix_string_arguments(br#"{"method":"tools/list"}"#).is_none());
        assert!(fix_string_arguments(b"garbage").is_none());
    }
}
