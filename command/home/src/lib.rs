//! `crabtalk-home`: where every crabtalk program keeps its files, and the
//! small file formats they share.
//!
//! Every crabtalk binary finds its files under one directory and nowhere
//! else: the daemon's config, agents, sessions and memory; component
//! configs; the socket, port files, pid files, token and lock in `run/`; and
//! one log per service in `logs/`.
//!
//! ```text
//! $CRABTALK_HOME/            (~/.crabtalk unless set)
//!   config.toml            daemon config
//!   env                    KEY=value lines every service loads at start
//!   Crab.md                global instructions
//!   agents/<name>.toml     agent definitions (+ <name>.md prompts)
//!   sessions/              conversation logs
//!   memory/<agent>.crmem   per-agent memory
//!   skills/                skills
//!   events/subscriptions.toml
//!   config/<service>.toml  component configs (crons, telegram, search)
//!   run/                   crabtalk.sock, crabtalk.port, crabtalk.lock, token,
//!                          <service>.port, <service>.pid
//!   logs/<service>.log
//! ```
//!
//! - [`Home`]: the root and every well-known path under it.
//! - [`Service`]: a crabtalk binary as a service (name, label, run files).
//! - [`PortFile`]: how a service says where it listens; [`Health`]: what
//!   it answers at `GET /health`.
//! - [`EnvFile`]: `$CRABTALK_HOME/env`, loaded by every service at start
//!   ([`Home::load_env_file`]).
//! - [`write_atomic`]: the one way any crabtalk program rewrites a file;
//!   [`Staged`], the same for a file too large for memory (a binary).
//! - [`exit`]: the exit codes, defined once.
//! - [`token`]: `run/token`, the owner's credential every TCP port of the
//!   family asks for.
//! - [`utf8_text`]: a hand-written file's text, or where it is not UTF-8.
//! - [`provider_env`]: the variables that offer the daemon a language
//!   model (provider keys, `OLLAMA_HOST`), read by the daemon and crabup.
//!
//! It knows no protocol, no HTTP and no service manager: the wire crate,
//! the component kit, the service tools and the daemon all build on it.
//!
//! ```
//! use crabtalk_home::{Home, Service};
//!
//! let home = Home::new("/tmp/crab");
//! let search = Service::new("search", "crabtalk-search", "meta-search")?;
//! assert_eq!(search.port_file(&home), home.run_dir().join("search.port"));
//! # Ok::<(), crabtalk_home::HomeError>(())
//! ```

mod atomic;
mod env_file;
pub mod exit;
mod health;
mod paths;
mod port_file;
mod private_dir;
pub mod provider_env;
mod service;
mod text;
pub mod token;

pub use atomic::{
    Staged, create_atomic_private, remove_stale_temp_files, write_atomic, write_atomic_mode,
    write_atomic_private,
};
pub use env_file::{BadEnvLine, EnvFile, EnvFileError, EnvLineError, EnvVar};
pub use health::{HEALTH_PATH, Health};
pub use paths::{DAEMON_RUN_NAME, HOME_ENV, Home, HomeError, validate_service_name};
pub use port_file::{InvalidPortFile, PortFile, PortFileError};
pub use private_dir::create_private_dir;
pub use service::{RUN_ARGS, Service};
pub use text::{NotUtf8, utf8_text};
