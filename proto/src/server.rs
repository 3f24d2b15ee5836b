//! The [`Server`] trait: one method per operation, and one provided
//! [`dispatch`](Server::dispatch) that routes a [`ClientMessage`] to them.
//!
//! An implementor overrides the operations it offers; every other one answers
//! `ErrorMsg{501}`. Request/response operations return one reply; `stream`,
//! `subscribe_events` and `subscribe_mcp_events` return streams. `dispatch`
//! turns either into a stream of [`ServerMessage`]s with a guaranteed
//! terminal: a turn ends with `StreamEnd` or an `ErrorMsg`, and nothing
//! follows the terminal.
//!
//! ```
//! use crabtalk_proto::{Server, msg::{ErrorMsg, ListAgentsMsg, AgentList, AgentInfo}};
//!
//! struct OneAgent;
//!
//! impl Server for OneAgent {
//!     async fn list_agents(&self, _: ListAgentsMsg) -> Result<AgentList, ErrorMsg> {
//!         Ok(AgentList { agents: vec![AgentInfo { name: "crab".into(), ..Default::default() }] })
//!     }
//! }
//! ```

use std::future::Future;
use std::sync::Arc;

use futures::stream::{self, BoxStream, Stream, StreamExt};

use crate::ReplyLane;
use crate::msg::*;
use crate::ops::unary_operations;

macro_rules! define_server {
    ($(
        $(#[$doc:meta])*
        $method:ident($variant:ident, $request:ident) -> $reply:ident($response:ident);
    )*) => {
        /// A crabtalk server: the daemon, or a test double.
        ///
        /// Every operation has a default that answers `ErrorMsg{501}`, except
        /// `ping`, which answers with this crate's version.
        pub trait Server: Send + Sync + 'static {
            $(
                $(#[$doc])*
                fn $method(
                    &self,
                    request: $request,
                ) -> impl Future<Output = Result<$response, ErrorMsg>> + Send {
                    let _ = request;
                    async { Err(ErrorMsg::not_implemented(stringify!($method))) }
                }
            )*

            /// Answers a ping with versions.
            fn ping(&self, request: Ping) -> impl Future<Output = Result<Pong, ErrorMsg>> + Send {
                let _ = request;
                async { Ok(Pong::of_this_server()) }
            }

            /// Runs one turn, streaming its events. The stream's last item
            /// must be `StreamEnd` (or an error).
            fn stream(
                &self,
                request: StreamMsg,
            ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
                let _ = request;
                stream::once(async { Err(ErrorMsg::not_implemented("stream")) })
            }

            /// [`stream`](Self::stream), with the request's [`ReplyLane`]
            /// when the transport offers one: the task that makes the
            /// turn's events may then write one straight to the socket
            /// when nothing waits ahead of it, instead of handing it to
            /// the stream's reader. The default ignores the lane.
            fn stream_on(
                &self,
                request: StreamMsg,
                lane: Option<ReplyLane>,
            ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
                let _ = lane;
                self.stream(request)
            }

            /// Streams the events of every agent until the client cancels.
            fn subscribe_events(
                &self,
                request: SubscribeEvents,
            ) -> impl Stream<Item = Result<AgentEventMsg, ErrorMsg>> + Send + 'static {
                let _ = request;
                stream::once(async { Err(ErrorMsg::not_implemented("subscribe_events")) })
            }

            /// Streams MCP lifecycle events until the client cancels.
            fn subscribe_mcp_events(
                &self,
                request: SubscribeMcpEventsMsg,
            ) -> impl Stream<Item = Result<McpEventMsg, ErrorMsg>> + Send + 'static {
                let _ = request;
                stream::once(async { Err(ErrorMsg::not_implemented("subscribe_mcp_events")) })
            }

            /// Routes one client message to its operation.
            ///
            /// The operation is started here — a streaming operation's stream
            /// is created (a subscription subscribes) before this returns — and
            /// runs as the returned stream is polled. The transport calls this
            /// in the order requests arrive, so operations start in that order
            /// even though they then run concurrently.
            ///
            /// Replies carry no `request_id`; the transport sets it. `Hello`
            /// and `Cancel` belong to the connection and are handled by the
            /// transport before dispatch.
            fn dispatch(self: Arc<Self>, message: ClientMessage) -> BoxStream<'static, ServerMessage> {
                self.dispatch_on(message, None)
            }

            /// [`dispatch`](Self::dispatch), handing a `Stream` request's
            /// [`ReplyLane`] to [`stream_on`](Self::stream_on).
            fn dispatch_on(
                self: Arc<Self>,
                message: ClientMessage,
                lane: Option<ReplyLane>,
            ) -> BoxStream<'static, ServerMessage> {
                use client_message::Msg;
                match message.msg {
                    $(
                        Some(Msg::$variant(request)) => {
                            let this = self.clone();
                            unary(async move { this.$method(request).await }, server_message::Msg::$reply)
                        }
                    )*
                    Some(Msg::Ping(request)) => {
                        let this = self.clone();
                        unary(async move { this.ping(request).await }, server_message::Msg::Pong)
                    }
                    Some(Msg::Stream(request)) => terminated(
                        self.stream_on(request, lane),
                        server_message::Msg::Stream,
                        StreamEvent::is_end,
                        || ErrorMsg::internal("the turn ended without StreamEnd"),
                    ),
                    Some(Msg::SubscribeEvents(request)) => terminated(
                        self.subscribe_events(request),
                        server_message::Msg::AgentEvent,
                        |_| false,
                        subscription_closed,
                    ),
                    Some(Msg::SubscribeMcpEvents(request)) => terminated(
                        self.subscribe_mcp_events(request),
                        server_message::Msg::McpEvent,
                        |_| false,
                        subscription_closed,
                    ),
                    Some(Msg::PluginOp20(_) | Msg::PluginOp21(_) | Msg::PluginOp22(_) | Msg::PluginOp37(_)) => {
                        single(ErrorMsg::not_implemented("plugin operations"))
                    }
                    Some(Msg::ServiceOp24(_) | Msg::ServiceOp25(_) | Msg::ServiceOp26(_)) => single(
                        ErrorMsg::not_implemented("daemon-run services (use `crabup <name> start`)"),
                    ),
                    Some(Msg::Hello(_)) => single(Pong::of_this_server()),
                    Some(Msg::Cancel(_)) => single(ErrorMsg::bad_request(
                        "Cancel refers to a request on its own connection and cannot be dispatched",
                    )),
                    None => single(ErrorMsg::bad_request(
                        "empty or unknown message: this server does not know the operation",
                    )),
                }
            }
        }
    };
}

unary_operations!(define_server);

/// A dispatch stream of exactly one reply.
fn single<'a>(reply: impl Into<ServerMessage>) -> BoxStream<'a, ServerMessage> {
    stream::iter([reply.into()]).boxed()
}

fn unary<'a, T: 'a>(
    reply: impl Future<Output = Result<T, ErrorMsg>> + Send + 'a,
    wrap: fn(T) -> server_message::Msg,
) -> BoxStream<'a, ServerMessage> {
    stream::once(async move {
        match reply.await {
            Ok(reply) => ServerMessage::from(wrap(reply)),
            Err(error) => ServerMessage::from(error),
        }
    })
    .boxed()
}

fn subscription_closed() -> ErrorMsg {
    ErrorMsg::unavailable("the subscription was closed by the server")
}

/// Wraps an operation's stream so that it always ends with exactly one
/// terminal frame: the item `is_terminal` recognises, the first error, or
/// `exhausted()` when the operation's stream simply stops.
fn terminated<'a, T: Send + 'a>(
    items: impl Stream<Item = Result<T, ErrorMsg>> + Send + 'a,
    wrap: fn(T) -> server_message::Msg,
    is_terminal: fn(&T) -> bool,
    exhausted: fn() -> ErrorMsg,
) -> BoxStream<'a, ServerMessage> {
    stream::unfold(Some(items.boxed()), move |items| async move {
        let mut items = items?;
        match items.next().await {
            Some(Ok(item)) => {
                let last = is_terminal(&item);
                Some((ServerMessage::from(wrap(item)), (!last).then_some(items)))
            }
            Some(Err(error)) => Some((ServerMessage::from(error), None)),
            None => Some((ServerMessage::from(exhausted()), None)),
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    struct Empty;
    impl Server for Empty {}

    struct Talkative;
    impl Server for Talkative {
        fn stream(
            &self,
            request: StreamMsg,
        ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
            let n: usize = request.content.parse().unwrap_or(0);
            let chunks = (0..n).map(|i| {
                Ok(StreamChunk {
                    content: i.to_string(),
                }
                .into())
            });
            let end = Ok(StreamEnd {
                agent: request.agent,
                ..Default::default()
            }
            .into());
            let after_end = Ok(StreamChunk {
                content: "never sent".into(),
            }
            .into());
            stream::iter(chunks.chain([end, after_end]))
        }

        fn subscribe_events(
            &self,
            _: SubscribeEvents,
        ) -> impl Stream<Item = Result<AgentEventMsg, ErrorMsg>> + Send + 'static {
            stream::iter([Ok(AgentEventMsg::default())])
        }
    }

    fn collect<S: Server>(server: S, msg: client_message::Msg) -> Vec<ServerMessage> {
        futures::executor::block_on(Arc::new(server).dispatch(msg.into()).collect())
    }

    fn error_code(reply: &ServerMessage) -> u32 {
        match &reply.msg {
            Some(server_message::Msg::Error(error)) => error.code,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn unprovided_operations_answer_501() {
        let replies = collect(Empty, client_message::Msg::ListAgents(ListAgentsMsg {}));
        assert_eq!(replies.len(), 1);
        assert_eq!(error_code(&replies[0]), 501);
        let replies = collect(Empty, client_message::Msg::Stream(StreamMsg::default()));
        assert_eq!(replies.len(), 1);
        assert_eq!(error_code(&replies[0]), 501);
    }

    #[test]
    fn legacy_operations_answer_501() {
        for msg in [
            client_message::Msg::PluginOp20(UnsupportedOperation {}),
            client_message::Msg::ServiceOp25(UnsupportedOperation {}),
            client_message::Msg::PluginOp37(UnsupportedOperation {}),
        ] {
            assert_eq!(error_code(&collect(Empty, msg)[0]), 501);
        }
    }

    #[test]
    fn ping_answers_with_versions_by_default() {
        let replies = collect(Empty, client_message::Msg::Ping(Ping::default()));
        match &replies[0].msg {
            Some(server_message::Msg::Pong(pong)) => {
                assert_eq!(pong.protocol, crate::PROTOCOL);
                assert_eq!(pong.server_version, crate::VERSION);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_message_answers_400() {
        let replies = futures::executor::block_on(
            Arc::new(Empty)
                .dispatch(ClientMessage::default())
                .collect::<Vec<_>>(),
        );
        assert_eq!(replies.len(), 1);
        assert_eq!(error_code(&replies[0]), 400);
    }

    #[test]
    fn unknown_oneof_variant_decodes_and_answers_400() {
        // Field 99 of ClientMessage, wire type 2 (length-delimited), holding
        // a 3-byte body: a variant from the future. Its tag, 99 << 3 | 2 =
        // 794, is the varint 0x9a 0x06.
        let mut bytes = vec![0x9a, 0x06, 3, 1, 2, 3];
        bytes.extend_from_slice(&ClientMessage::default().with_request_id(7).encode_to_vec());
        let message = ClientMessage::decode(bytes.as_slice()).expect("unknown fields decode");
        assert_eq!(message.msg, None);
        assert_eq!(message.request_id, 7);
        let replies =
            futures::executor::block_on(Arc::new(Empty).dispatch(message).collect::<Vec<_>>());
        assert_eq!(error_code(&replies[0]), 400);
    }

    #[test]
    fn a_turn_stream_ends_at_stream_end() {
        let replies = collect(
            Talkative,
            client_message::Msg::Stream(StreamMsg {
                content: "3".into(),
                ..Default::default()
            }),
        );
        assert_eq!(
            replies.len(),
            4,
            "three chunks and the end, nothing after: {replies:?}"
        );
        assert!(matches!(
            &replies[3].msg,
            Some(server_message::Msg::Stream(event)) if event.is_end()
        ));
    }

    #[test]
    fn a_subscription_that_stops_ends_with_503() {
        let replies = collect(
            Talkative,
            client_message::Msg::SubscribeEvents(SubscribeEvents {}),
        );
        assert_eq!(replies.len(), 2);
        assert_eq!(error_code(&replies[1]), 503);
    }
}
