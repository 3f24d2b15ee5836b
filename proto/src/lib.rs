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
//! - [`server`]: the [`Server`] trait (one method per operation) and its
//!   provided [`Server::dispatch`];
//! - [`transport`]: UDS and TCP listeners that feed connections into a
//!   [`Server`];
//! - [`client`]: the typed [`Client`], connected to a socket path or a
//!   TCP address.
//!
//! It moves frames and nothing else: where a daemon of a `CRABTALK_HOME`
//! listens is read from the home's files by the crates above it (the
//! component kit's `daemon` module).
//!
//! ```no_run
//! # async fn example() -> Result<(), crabtalk_proto::client::ClientError> {
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

pub mod client;
pub mod codec;
pub mod msg;
mod ops;
pub mod server;
pub mod transport;

pub use client::Client;
pub use server::Server;

/// The protocol this crate speaks, as reported in `Pong.protocol`.
pub const PROTOCOL: &str = "crabtalk/0.3+ext1";

/// The version of this crate, sent as `Ping.client_version` by [`Client`].
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
