//! `crabtalk-kit`: everything a crabtalk component has in common, so a
//! component's own code is only what it does.
//!
//! A component is a program of its own, run as a service: it finds its
//! files under `$CRABTALK_HOME`, reads `config/<name>.toml`, serves MCP
//! tools to the daemon on a port it announces in `run/<name>.port`, and
//! often is a client of the daemon too (a gateway starts turns, a scheduler
//! follows events). The kit gives it, in this order of a process's life:
//!
//! - [`main_run`], [`main_mcp`], [`main_with`]: the whole `main` — the
//!   command line ([`cli`]: `run`, the kit's `check` ([`check`]), `-v`),
//!   `$CRABTALK_HOME/env` loaded while
//!   the process has one thread, logging to stderr (`RUST_LOG` or `-v`), a
//!   current-thread runtime, and the exit code (78 for configuration, 1
//!   otherwise). A component that makes HTTPS requests installs the
//!   rustls `ring` provider itself ([`install_ring`]) before its first
//!   client, so that one that does not (cron) links no TLS stack.
//! - [`Component`]: what the component's code is handed — the home, its
//!   [`Service`](crabtalk_home::Service), the [`Shutdown`] signal
//!   (SIGINT/SIGTERM, Ctrl-C on Windows) shared by every task, its typed
//!   [`config`] (`config/<name>.toml`, errors at `file:line:col`, unknown
//!   keys refused), MCP serving, the daemon link, and its [`Problems`]
//!   (what its parts record as wrong, listed in `GET /health`).
//! - [`tool_server`] (feature `service`): the component's tools declared
//!   once each — name, title, description, input, hints, handler — and
//!   served as one MCP server ([`ToolServer`](tool_server::ToolServer)).
//! - [`mcp`] (feature `service`): [`run_mcp`](mcp::run_mcp) serves the
//!   component's `rmcp` tools at `/mcp`, plus `GET /health`, on
//!   `127.0.0.1`, writes the port file and removes it on the way out.
//! - [`loopback`] (feature `service`): the MCP client for calling another
//!   component ([`owner_transport`](loopback::owner_transport)), plain
//!   HTTP/1.1 on loopback.
//! - [`daemon`]: finding the daemon of a home ([`daemon::connect`]) and
//!   [`DaemonLink`](daemon::DaemonLink), a client that waits for the daemon
//!   to come up, reconnects after it restarts and re-subscribes what the
//!   component follows.
//!
//! - [`tool_view`]: the answers of the web tools as people read them
//!   (what the clients show instead of raw JSON).
//! - Small shared parts: [`FileLock`] (an advisory lock on a file),
//!   [`closest`] (the "did you mean" of a misspelt name),
//!   [`return_free_heap`] and [`release_after_settling`] (memory given
//!   back to the system).
//!
//! The modules left public are namespaces other crates name by path
//! (`config::ConfigFile`, `daemon::DaemonLink`, `tool_server::ToolSpec`,
//! `check::required`); the rest is private, its few shared items here at
//! the root.
//!
//! Without the default `service` feature the kit is only the command line,
//! the config loader, logging, the shutdown signal and the daemon client:
//! enough for `crabup` to read and write a component's config with the
//! component's own types without linking an HTTP server or MCP.
//!
//! ```no_run
//! # #[derive(Clone, Default)] struct SearchTools;
//! # impl rmcp::ServerHandler for SearchTools {}
//! use crabtalk_home::Service;
//!
//! fn main() -> std::process::ExitCode {
//!     let service = Service::new("search", "crabtalk-search", "meta-search").unwrap();
//!     #[derive(Default, serde::Deserialize)]
//!     struct SearchConfig { engines: Vec<String> }
//!     let check = crabtalk_kit::check::optional::<SearchConfig>;
//!     crabtalk_kit::main_run(service, "Meta-search for crabtalk agents", check, |component| async move {
//!         let config: SearchConfig = component.config_or_default()?;
//!         let daemon = component.daemon();
//!         component.serve_mcp(crabtalk_kit::mcp::mcp_router(SearchTools::default)).await?;
//!         Ok(())
//!     })
//! }
//! ```

#[cfg(feature = "service")]
mod access;
pub mod check;
pub mod cli;
mod component;
pub mod config;
pub mod daemon;
mod entry;
mod exit;
mod footprint;
#[cfg(feature = "service")]
mod health;
mod lock;
mod logging;
#[cfg(feature = "service")]
pub mod loopback;
#[cfg(feature = "service")]
pub mod mcp;
mod problems;
#[cfg(feature = "service")]
mod sessions;
mod shutdown;
mod suggest;
#[cfg(feature = "service")]
mod tls;
#[cfg(feature = "service")]
pub mod tool_server;
pub mod tool_view;

pub use component::Component;
#[cfg(feature = "service")]
pub use entry::main_mcp;
pub use entry::{main_run, main_with, prepare, prepare_home};
pub use footprint::{SETTLE, release_after_settling, release_startup_pages, return_free_heap};
pub use lock::FileLock;
pub use problems::Problems;
pub use shutdown::Shutdown;
pub use suggest::closest;
#[cfg(feature = "service")]
pub use tls::install_ring;
