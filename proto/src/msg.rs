//! The protocol messages, generated from `crabtalk.proto`, plus the small
//! conveniences every peer needs: error constructors, envelope conversions
//! and usage arithmetic.
//!
//! Oneof variants live in the generated submodules:
//! [`client_message::Msg`], [`server_message::Msg`] and
//! [`stream_event::Event`].

/// What `prost` generates from `crabtalk.proto`, re-exported as this
/// module's own. The lints are waived for the generated code only; what
/// follows is written by hand and held to the workspace's lints.
#[allow(clippy::all, missing_docs)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/crabtalk.protocol.rs"));
}

pub use generated::*;

#[cfg(test)]
pub(crate) mod arbitrary;

use std::fmt;

impl ErrorMsg {
    pub const BAD_REQUEST: u32 = 400;
    pub const UNAUTHORIZED: u32 = 401;
    pub const NOT_FOUND: u32 = 404;
    pub const CONFLICT: u32 = 409;
    pub const TOO_LARGE: u32 = 413;
    pub const TOO_MANY_REQUESTS: u32 = 429;
    pub const INTERNAL: u32 = 500;
    pub const NOT_IMPLEMENTED: u32 = 501;
    pub const UNAVAILABLE: u32 = 503;

    pub fn new(code: u32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(Self::BAD_REQUEST, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(Self::UNAUTHORIZED, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Self::NOT_FOUND, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(Self::CONFLICT, message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(Self::TOO_LARGE, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Self::INTERNAL, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(Self::UNAVAILABLE, message)
    }

    /// The answer to an operation a server does not provide.
    pub fn not_implemented(operation: &str) -> Self {
        Self::new(
            Self::NOT_IMPLEMENTED,
            format!("{operation} is not implemented by this server"),
        )
    }
}

/// The message alone: it is written for people. The code is for programs
/// (`ErrorMsg::code`, `--json` output, logs), never part of a sentence.
impl fmt::Display for ErrorMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ErrorMsg {}

impl From<client_message::Msg> for ClientMessage {
    fn from(msg: client_message::Msg) -> Self {
        Self {
            msg: Some(msg),
            request_id: 0,
        }
    }
}

impl From<server_message::Msg> for ServerMessage {
    fn from(msg: server_message::Msg) -> Self {
        Self {
            msg: Some(msg),
            request_id: 0,
        }
    }
}

impl From<ErrorMsg> for ServerMessage {
    fn from(error: ErrorMsg) -> Self {
        server_message::Msg::Error(error).into()
    }
}

impl From<Pong> for ServerMessage {
    fn from(pong: Pong) -> Self {
        server_message::Msg::Pong(pong).into()
    }
}

impl Pong {
    /// What this crate answers a `Ping` and a `Hello` with: its version
    /// and protocol, no notes.
    pub fn of_this_server() -> Self {
        Self {
            server_version: crate::VERSION.into(),
            protocol: crate::PROTOCOL.into(),
            notes: Vec::new(),
        }
    }
}

impl From<StreamEvent> for ServerMessage {
    fn from(event: StreamEvent) -> Self {
        server_message::Msg::Stream(event).into()
    }
}

impl ServerMessage {
    /// This frame with its `request_id` set.
    pub fn answering(mut self, request_id: u64) -> Self {
        self.request_id = request_id;
        self
    }
}

impl ClientMessage {
    /// This frame with its `request_id` set.
    pub fn with_request_id(mut self, request_id: u64) -> Self {
        self.request_id = request_id;
        self
    }
}

macro_rules! stream_event_from {
    ($($variant:ident($ty:ident)),* $(,)?) => {$(
        impl From<$ty> for StreamEvent {
            fn from(event: $ty) -> Self {
                Self { event: Some(stream_event::Event::$variant(event)) }
            }
        }
    )*};
}

stream_event_from! {
    Start(StreamStart),
    Chunk(StreamChunk),
    Thinking(StreamThinking),
    ToolStart(ToolStartEvent),
    ToolResult(ToolResultEvent),
    ToolsComplete(ToolsCompleteEvent),
    End(StreamEnd),
    AskUser(AskUserEvent),
    UserSteered(UserSteeredEvent),
    TextStart(TextStartEvent),
    TextEnd(TextEndEvent),
    ThinkingStart(ThinkingStartEvent),
    ThinkingEnd(ThinkingEndEvent),
    ContextUsage(ContextUsageEvent),
}

impl StreamEvent {
    /// Whether this is `StreamEnd`, the terminal sentinel of a turn.
    pub fn is_end(&self) -> bool {
        matches!(self.event, Some(stream_event::Event::End(_)))
    }
}

impl std::ops::AddAssign<&TokenUsage> for TokenUsage {
    /// Sums two usages; optional counters stay `None` only when both are.
    fn add_assign(&mut self, other: &TokenUsage) {
        fn add(a: Option<u32>, b: Option<u32>) -> Option<u32> {
            match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            }
        }
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.cache_hit_tokens = add(self.cache_hit_tokens, other.cache_hit_tokens);
        self.cache_miss_tokens = add(self.cache_miss_tokens, other.cache_miss_tokens);
        self.reasoning_tokens = add(self.reasoning_tokens, other.reasoning_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_and_keeps_absent_counters_absent() {
        let mut total = TokenUsage {
            prompt_tokens: 10,
            total_tokens: 10,
            ..Default::default()
        };
        total += &TokenUsage {
            prompt_tokens: 5,
            completion_tokens: 2,
            total_tokens: 7,
            cache_hit_tokens: Some(3),
            ..Default::default()
        };
        assert_eq!(total.prompt_tokens, 15);
        assert_eq!(total.completion_tokens, 2);
        assert_eq!(total.total_tokens, 17);
        assert_eq!(total.cache_hit_tokens, Some(3));
        assert_eq!(total.reasoning_tokens, None);
    }
}
