//! The crabtalk wire: everything a client and the daemon say to each other.
//!
//! A client talks to `crabtalkd` over a Unix domain socket or TCP. Every frame
//! is a 4-byte big-endian length followed by one protobuf message: a
//! [`ClientMessage`](msg::ClientMessage) from the client, a
//! [`ServerMessage`](msg::ServerMessage) from the daemon. Each request carries
//! a `request_id` that the daemon echoes on every reply frame, so one
//! connection carries any number of requests at once.
//!
//! This crate holds, and is the only place that defines:
//!
//! - [`msg`]: the generated protocol types (from `crabtalk.proto`);
//! - [`codec`]: the frame codec, with its 16 MiB limit;
//! - the [`Server`] trait (one method per operation) and its provided
//!   [`Server::dispatch`];
//! - the listeners [`UdsListener`] and [`TcpListener`], which feed
//!   connections into a [`Server`] and bound what a peer can make it spend;
//! - the typed [`Client`], connected to a socket path or a TCP address.
//!
//! `msg` and `codec` are namespaces other crates name by path (a message
//! type is `msg::StreamMsg`, the frame reader `codec::FrameReader`); the
//! rest is here at the root.
//!
//! It moves frames and nothing else: where a daemon of a `CRABTALK_HOME`
//! listens is read from the home's files by the crates above it (the
//! component kit's `daemon` module).
//!
//! ```no_run
//! # async fn example() -> Result<(), crabtalk_proto::ClientError> {
//! use crabtalk_proto::{Client, msg::StreamMsg};
//! use futures::StreamExt;
//!
//! let client = Client::connect_uds("/home/me/.crabtalk/run/crabtalk.sock").await?;
//! let mut turn = client
//!     .stream(StreamMsg { agent: "crab".into(), content: "hello".into(), ..Default::default() })
//!     .await?;
//! while let Some(event) = turn.next().await {
//!     println!("{:?}", event?);
//! }
//! # Ok(()) }
//! ```

mod client;
pub mod codec;
pub mod msg;
mod ops;
mod server;
mod transport;

pub use client::{Client, ClientError, ReplyStream, STREAM_BUFFER_BYTES, StreamItem};
pub use server::Server;
#[cfg(unix)]
pub use transport::UdsListener;
pub use transport::{
    BindError, DEFAULT_TCP_ADDR, MAX_HELLO_FRAME, MAX_IN_FLIGHT, MAX_UNADMITTED, OUTBOX_BYTES,
    Placement, ReplyLane, TcpListener,
};

/// The protocol this crate speaks, as reported in `Pong.protocol`.
pub const PROTOCOL: &str = "crabtalk/0.3+ext1";

/// The version of this crate, sent as `Ping.client_version` by [`Client`].
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
