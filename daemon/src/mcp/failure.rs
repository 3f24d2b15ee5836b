//! How MCP failures read. A model or a person reads these, so they are
//! sentences about the server — never a Rust type name, which rmcp's own
//! error texts carry (`Transport [rmcp::transport::…] error: …`).

use rmcp::service::{ClientInitializeError, ServiceError};

/// A failed call, as the connection sees it.
pub(super) struct CallFailure {
    pub message: String,
    /// The connection itself failed (not just this call): it must be
    /// dropped and made again.
    pub connection_lost: bool,
}

/// What went wrong with a call.
pub(super) fn call_failure(err: &ServiceError) -> CallFailure {
    let lost = |message: String| CallFailure {
        message,
        connection_lost: true,
    };
    let call = |message: String| CallFailure {
        message,
        connection_lost: false,
    };
    match err {
        ServiceError::McpError(error) => call(error.message.to_string()),
        ServiceError::TransportSend(error) => lost(format!(
            "the connection to the server failed ({})",
            plain(error.error.as_ref())
        )),
        ServiceError::TransportClosed => lost("the connection to the server is closed".into()),
        ServiceError::Cancelled { .. } => call("the call was cancelled".into()),
        ServiceError::Timeout { timeout } => call(format!(
            "the server did not answer within {} s",
            timeout.as_secs()
        )),
        ServiceError::UnexpectedResponse => {
            call("the server answered with something other than a tool result".into())
        }
        other => call(plain(other)),
    }
}

/// What went wrong while connecting.
pub(super) fn connect_failure(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::TransportError { error, context } => format!(
            "the connection failed while trying to {context} ({})",
            plain(error.error.as_ref())
        ),
        ClientInitializeError::ConnectionClosed(context) => {
            format!("the server closed the connection during the handshake ({context})")
        }
        ClientInitializeError::JsonRpcError(error) => {
            format!("the server refused the handshake: {}", error.message)
        }
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
            "the server speaks no MCP protocol version the daemon does".into()
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered the handshake with something else".into()
        }
        other => plain(other),
    }
}

/// An error and its causes in one line, each cause once.
pub(super) fn plain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
