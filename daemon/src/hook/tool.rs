//! A tool as the model sees it ([`ToolSpec`]), what a call returns
//! ([`ToolOutput`]), and reading a call's arguments.

use std::future::Future;
use std::pin::Pin;

use crate::storage::ToolCallRecord;

/// A tool's schema, as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// What a tool returns. The model sees `text` either way; `is_error` lets
/// clients style failures and agents decide to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub(crate) fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    pub(crate) fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }
}

/// A running tool call.
pub(crate) type ToolFuture = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// Parses a call's JSON arguments into `T`, or an error the model can act on.
pub(crate) fn parse_arguments<T: serde::de::DeserializeOwned>(
    call: &ToolCallRecord,
) -> Result<T, ToolOutput> {
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    serde_json::from_str(raw).map_err(|err| {
        ToolOutput::error(format!(
            "invalid arguments for {}: {err}; arguments were: {raw}",
            call.name
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_name_the_tool() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Args {
            n: u32,
        }
        let call = ToolCallRecord {
            id: "c".into(),
            name: "count".into(),
            arguments: "{\"n\":\"x\"}".into(),
        };
        let err = parse_arguments::<Args>(&call).unwrap_err();
        assert!(err.is_error && err.text.contains("count"), "{}", err.text);
    }
}
