//! `crabtalkd`, the crabtalk daemon, as a library: the binary only parses its
//! command line and calls [`process::run`].
//!
//! - [`config`]: `config.toml` and agent definitions.
//! - [`storage`]: conversation logs, metadata, handles.
//! - [`lock`]: one daemon per home.
//! - [`process`]: startup, listeners, signals, shutdown.

pub mod cli;
pub mod config;
pub mod lock;
pub mod process;
pub mod provider;
pub mod runtime;
pub mod server;
pub mod storage;
pub mod tools;
