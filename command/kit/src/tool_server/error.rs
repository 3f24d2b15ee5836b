//! Why a tool call failed ([`ToolError`]), and how each failure goes to
//! the client (RFC 0044).
//!
//! MCP has two ways to say a call failed: a tool result with `isError:
//! true`, which a host hands to the model, and a JSON-RPC error, which
//! stays with the host. The specification (2025-11-25, SEP-1303) puts
//! everything the model can act on in the result, arguments that do not
//! fit the tool's schema included, and keeps JSON-RPC errors for the
//! protocol: a tool that does not exist, a malformed request. So both
//! kinds of [`ToolError`] become the same result on the wire — the
//! error's text, flagged `isError` — and only the server's own refusal
//! of an unknown tool name is a JSON-RPC error (`-32602`, invalid
//! params). The kind is for the component's own code and its tests.

/// What went wrong with a call of a tool, in a sentence for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments are not what the tool takes: missing, of the wrong
    /// type, unknown, out of range. Called again with others, it may work.
    #[error("{0}")]
    Arguments(String),
    /// The tool could not do what it was asked: refused, nothing by that
    /// name, or the world it reaches failed.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// The arguments are wrong, as `message` says.
    pub fn arguments(message: impl std::fmt::Display) -> Self {
        Self::Arguments(message.to_string())
    }

    /// The tool failed, as `message` says.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }
}
