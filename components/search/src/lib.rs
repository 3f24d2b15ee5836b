//! `crabtalk-search`: web search and page fetch for crabtalk agents.
//!
//! The service offers two MCP tools on the port it announces in
//! `run/search.port`:
//!
//! - `web_search` asks every enabled engine at once ([`engine`]:
//!   DuckDuckGo's HTML page, Bing, Mojeek, Wikipedia's API, Brave's API,
//!   a SearXNG instance), each within its timeout inside one deadline, and
//!   fuses their lists with SearXNG's rule after normalising URLs
//!   ([`search`]). An engine that rate-limits or blocks us is reported as
//!   such and suspended for a while ([`health`]), never mistaken for "no
//!   results". Answers are cached ([`cache`]).
//! - `web_fetch` reads one page ([`fetch`]): public addresses only, checked
//!   on the address actually connected to and again at every redirect
//!   ([`address`]), within a byte cap and a time limit, reduced to its
//!   readable content as Markdown.
//!
//! The CLI (`search`, `fetch`, `engines`) goes through the same code
//! ([`subcommands`]). Settings are in the optional `config/search.toml`
//! ([`config`]).
//!
//! Without the default `service` feature the crate is the command line,
//! the config types and the health table: what `crabup` links.

use std::path::PathBuf;

use crabtalk_home::Home;

pub mod address;
#[cfg(feature = "service")]
pub mod answer;
#[cfg(feature = "service")]
pub mod burst;
#[cfg(feature = "service")]
pub mod cache;
pub mod check;
pub mod cli;
pub mod config;
#[cfg(feature = "service")]
pub mod engine;
#[cfg(feature = "service")]
pub mod fetch;
pub mod health;
#[cfg(feature = "service")]
pub mod search;
#[cfg(feature = "service")]
pub mod service;
#[cfg(feature = "service")]
pub mod subcommands;
#[cfg(feature = "service")]
mod tools;
#[cfg(feature = "service")]
pub mod web;

/// `$CRABTALK_HOME/search/`: the service's own data (engine health).
pub fn data_dir(home: &Home) -> PathBuf {
    home.root().join("search")
}

pub use crabtalk_home::create_private_dir;
