//! What a tool's handler is given ([`ToolCall`]) and what it may answer
//! ([`ToolAnswer`]).

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ToolError;

/// One call of a tool: its arguments, already coerced against the tool's
/// schema, and its `_meta` (the daemon says there who called: RFC 0005).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    name: String,
    arguments: JsonObject,
    meta: JsonObject,
}

impl ToolCall {
    /// A call of `name`; no arguments is an empty object.
    pub fn new(name: impl Into<String>, arguments: JsonObject, meta: JsonObject) -> Self {
        Self {
            name: name.into(),
            arguments,
            meta,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments as JSON, for a tool that reads them by hand.
    pub fn arguments(&self) -> &JsonObject {
        &self.arguments
    }

    /// The arguments read into the tool's own type. The error
    /// ([`ToolError::Arguments`]) is a sentence for the model.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        serde_json::from_value(Value::Object(self.arguments.clone()))
            .map_err(|err| ToolError::arguments(format_args!("invalid arguments: {err}")))
    }

    /// The call's `_meta`.
    pub fn meta(&self) -> &JsonObject {
        &self.meta
    }

    /// A text value of `_meta`, when it is there and not empty.
    pub fn meta_text(&self, key: &str) -> Option<&str> {
        self.meta
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    }
}

/// What a handler answers: a whole [`CallToolResult`], or structured
/// content or a [`ToolError`], with or without a whole result.
pub trait ToolAnswer: Send {
    /// The answer as MCP's result.
    fn into_result(self) -> CallToolResult;
}

impl ToolAnswer for CallToolResult {
    fn into_result(self) -> CallToolResult {
        self
    }
}

/// `Ok` is the structured content; `Err` an error result the model reads.
impl ToolAnswer for Result<Value, ToolError> {
    fn into_result(self) -> CallToolResult {
        self.map(CallToolResult::structured).into_result()
    }
}

/// `Ok` is the result as it is; `Err` an error result the model reads.
impl ToolAnswer for Result<CallToolResult, ToolError> {
    fn into_result(self) -> CallToolResult {
        match self {
            Ok(result) => result,
            Err(err) => err.into(),
        }
    }
}

/// A tool result flagged `isError` whose one text block is the error
/// (both kinds alike: see [`ToolError`]).
impl From<ToolError> for CallToolResult {
    fn from(err: ToolError) -> Self {
        CallToolResult::error(vec![ContentBlock::text(err.to_string())])
    }
}
