//! `crabtalkd`, the crabtalk daemon, as a library: the binary only parses its
//! command line and calls [`run`] (or another of the functions re-exported
//! here). The modules are private but for what tests, benches, crabup's
//! CLI check and the fuzz oracles read: [`cli`], [`config`], [`provider`],
//! [`sessions`] and [`storage`].
//!
//! The modules are in layers, lowest first; a module uses only its own
//! layer and lower ones (ARCHITECTURE.md, RFC 0041; `tests/it/layers.rs`
//! checks it):
//!
//! 1. Foundation. [`config`]: `config.toml` and agent definitions.
//!    [`storage`]: conversation logs, metadata, handles. [`provider`]:
//!    language models through crabllm. `memories`: one memory per agent
//!    and [`sessions`]: the session index fed by every append and rebuilt
//!    from the logs — the adapters of the cores, which are crates of their
//!    own that know nothing of the daemon (`crabtalk-memory`,
//!    `crabtalk-session-index`, both over `crabtalk-bm25`). `skills`:
//!    `SKILL.md`. `bus`: event subscriptions. `lock`: one daemon per
//!    home; `leftovers`: the temp files crashes leave, cleared at start;
//!    `token`: the token every TCP client sends; `private`: the home
//!    and everything in it kept to the daemon's user.
//! 2. Tool contract. `hook`: what a tool is, and the narrow traits
//!    through which a call reaches its conversation and the daemon's turns.
//! 3. Capabilities. `tools`: the gate and the built-in tools; `mcp`:
//!    MCP servers and components.
//! 4. `runtime`: agents, conversations and turns; it implements the
//!    tool contract's traits.
//! 5. Edge. `server`: the protocol operations (the only module that
//!    knows the wire's errors); `process`: startup, listeners, signals,
//!    shutdown; `subcommands`: the other subcommands (`memory dump|load`,
//!    `sessions search`); `bridge`: `crabtalkd mcp`, an MCP server over
//!    stdio for MCP hosts, a client of the running daemon; [`cli`]: the
//!    command line.

mod bridge;
mod bus;
pub mod cli;
pub mod config;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod hook;
mod leftovers;
mod lock;
mod mcp;
mod memories;
mod private;
mod process;
pub mod provider;
mod runtime;
mod server;
pub mod sessions;
mod skills;
pub mod storage;
mod subcommands;
mod token;
mod tools;

pub use bridge::run as run_bridge;
pub use private::restrict_umask;
pub use process::{check, exit_code, reload, run};
pub use subcommands::{memory_dump, memory_load, sessions_search};
