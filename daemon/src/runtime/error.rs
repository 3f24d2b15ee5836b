//! [`Error`]: why the runtime refused or failed an operation.
//!
//! The runtime speaks in kinds of failure, not in protocol codes: the
//! server (`server.rs`) is the only place that turns a kind into the wire's
//! `ErrorMsg` code, so nothing below the server edge knows the wire's
//! error type. Each message is written for the person or program that
//! made the request: what was wrong and what to do.

use crate::provider::LlmError;

/// Why the runtime refused or failed an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong: an empty message, a bad name, JSON
    /// that is not a config, a file with a problem.
    #[error("{0}")]
    Invalid(String),
    /// What the request names does not exist: an agent, a conversation, a
    /// question waiting for an answer.
    #[error("{0}")]
    NotFound(String),
    /// The request collides with the state things are in: a name that is
    /// taken, a busy conversation, a cancelled turn.
    #[error("{0}")]
    Conflict(String),
    /// A model provider asks to slow down.
    #[error("{0}")]
    RateLimited(String),
    /// Something failed inside the daemon: the disk, a task.
    #[error("{0}")]
    Internal(String),
    /// It cannot be served now: the daemon is shutting down, a provider
    /// is down or not configured, the client stopped reading.
    #[error("{0}")]
    Unavailable(String),
}

impl Error {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict(message.into())
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::Unavailable(message.into())
    }

    /// The kind of failure a model call's `err` is, told with `message`.
    pub fn of_model(err: &LlmError, message: impl Into<String>) -> Self {
        let kind: fn(String) -> Self = match err {
            LlmError::NotConfigured(_) => Self::Unavailable,
            LlmError::UnknownModel { .. } => Self::NotFound,
            LlmError::Provider {
                status: Some(429), ..
            } => Self::RateLimited,
            LlmError::Provider {
                status: Some(400..=499),
                ..
            } => Self::Invalid,
            LlmError::Provider { .. } | LlmError::Idle { .. } => Self::Unavailable,
        };
        kind(message.into())
    }
}

impl From<LlmError> for Error {
    fn from(err: LlmError) -> Self {
        Self::of_model(&err, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(status: Option<u16>) -> LlmError {
        LlmError::Provider {
            provider: "p".into(),
            status,
            message: "m".into(),
        }
    }

    #[test]
    fn model_failures_keep_their_kind() {
        let cases = [
            (
                LlmError::NotConfigured("none".into()),
                Error::unavailable("x"),
            ),
            (
                LlmError::UnknownModel {
                    model: "m".into(),
                    known: String::new(),
                },
                Error::not_found("x"),
            ),
            (provider(Some(429)), Error::RateLimited("x".into())),
            (provider(Some(401)), Error::invalid("x")),
            (provider(Some(500)), Error::unavailable("x")),
            (provider(None), Error::unavailable("x")),
            (LlmError::Idle { secs: 5 }, Error::unavailable("x")),
        ];
        for (err, expected) in cases {
            assert_eq!(Error::of_model(&err, "x"), expected, "{err:?}");
        }
        assert_eq!(
            Error::from(provider(Some(429))),
            Error::RateLimited("p failed: m".into())
        );
    }
}
