//! [`ReplyStream`]: the replies of one streaming request.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use super::slots::{Delivery, STREAM_BUFFER_BYTES, StreamReceiver};
use super::{ClientError, Connection};
use crate::msg::{AgentEventMsg, McpEventMsg, StreamEvent, server_message};

/// An item of a streaming operation.
pub trait StreamItem: Sized + Send + 'static {
    /// Extracts the item from a reply, or says why the reply does not fit.
    fn from_reply(reply: server_message::Msg) -> Result<Self, ClientError>;

    /// Whether this item ends the stream.
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StreamItem for StreamEvent {
    fn from_reply(reply: server_message::Msg) -> Result<Self, ClientError> {
        match reply {
            server_message::Msg::Stream(event) => Ok(event),
            other => Err(ClientError::unexpected("stream", &other)),
        }
    }

    fn is_terminal(&self) -> bool {
        self.is_end()
    }
}

impl StreamItem for AgentEventMsg {
    fn from_reply(reply: server_message::Msg) -> Result<Self, ClientError> {
        match reply {
            server_message::Msg::AgentEvent(event) => Ok(event),
            other => Err(ClientError::unexpected("subscribe_events", &other)),
        }
    }
}

impl StreamItem for McpEventMsg {
    fn from_reply(reply: server_message::Msg) -> Result<Self, ClientError> {
        match reply {
            server_message::Msg::McpEvent(event) => Ok(event),
            other => Err(ClientError::unexpected("subscribe_mcp_events", &other)),
        }
    }
}

/// The replies of one streaming request.
///
/// It ends after its terminal item (`StreamEnd` for a turn) or after its
/// first error, and then frees its slot on the connection. Dropping it
/// earlier frees the slot too and sends `Cancel`, so the server stops
/// sending; a streamed turn keeps running on the daemon (use `kill` to stop
/// it).
///
/// Replies wait for the consumer in a buffer of at most
/// [`STREAM_BUFFER_BYTES`](super::STREAM_BUFFER_BYTES); a consumer that
/// lets it fill gets [`ClientError::Lagged`] after what was buffered, and
/// the stream ends (the server is told to stop).
pub struct ReplyStream<T> {
    connection: Arc<Connection>,
    request_id: u64,
    replies: StreamReceiver,
    done: bool,
    item: PhantomData<fn() -> T>,
}

impl<T> ReplyStream<T> {
    pub(super) fn new(
        connection: Arc<Connection>,
        request_id: u64,
        replies: StreamReceiver,
    ) -> Self {
        Self {
            connection,
            request_id,
            replies,
            done: false,
            item: PhantomData,
        }
    }

    /// The request id this stream answers.
    pub fn request_id(&self) -> u64 {
        self.request_id
    }

    fn finish(&mut self) {
        self.done = true;
        self.connection.slots.remove(self.request_id);
        self.replies.close();
    }
}

impl<T: StreamItem> Stream for ReplyStream<T> {
    type Item = Result<T, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let reply = match self.replies.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(reply) => reply,
        };
        let item = match reply {
            None => Err(self.connection.closed_error()),
            Some(Delivery::Lagged) => Err(ClientError::Lagged {
                limit: STREAM_BUFFER_BYTES,
            }),
            Some(Delivery::Reply(reply, _)) => match reply.msg {
                None => Err(ClientError::EmptyReply),
                Some(server_message::Msg::Error(error)) => Err(ClientError::Server(error)),
                Some(reply) => T::from_reply(reply),
            },
        };
        if !matches!(&item, Ok(item) if !item.is_terminal()) {
            self.finish();
        }
        Poll::Ready(Some(item))
    }
}

impl<T> Drop for ReplyStream<T> {
    fn drop(&mut self) {
        if !self.done {
            self.connection.slots.remove(self.request_id);
            self.connection.cancel_in_background(self.request_id);
        }
    }
}
