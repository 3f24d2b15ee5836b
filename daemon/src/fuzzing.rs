//! What the fuzz oracles (`components/fuzz/oracles`, RFC 0090) drive that the
//! daemon's public API does not show. Only with the `fuzzing` feature;
//! nothing in the daemon uses it.

use tokio::io::{AsyncRead, AsyncWrite};

/// The guard between a stdio MCP server's stdout and rmcp (see
/// `mcp/oversize.rs`), with a chosen line limit.
pub async fn guard_replies(
    from: impl AsyncRead + Unpin,
    to: impl AsyncWrite + Unpin,
    limit: usize,
) {
    crate::mcp::oversize::guard_replies(from, to, limit, "fuzz").await;
}
