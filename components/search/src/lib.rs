//! `crabtalk-search`: web search and page fetch for crabtalk agents.
//!
//! The service offers two MCP tools on the port it announces in
//! `run/search.port`:
//!
//! - `web_search` asks every enabled engine at once (`engine`:
//!   DuckDuckGo's HTML page, Bing, Mojeek, Wikipedia's API, Brave's API,
//!   a SearXNG instance), each within its timeout inside one deadline, and
//!   fuses their lists with SearXNG's rule after normalising URLs
//!   (`search`). An engine that rate-limits or blocks us is reported as
//!   such and suspended for a while (`health`), never mistaken for "no
//!   results". Answers are cached (`cache`).
//! - `web_fetch` reads one page (`fetch`): public addresses only, checked
//!   on the address actually connected to and again at every redirect
//!   (`address`), within a byte cap and a time limit, reduced to its
//!   readable content as Markdown.
//!
//! The CLI (`search`, `fetch`, `engines`) goes through the same code
//! (`subcommands`). Settings are in the optional `config/search.toml`
//! (`config`).
//!
//! The modules are private but for [`cli`] (the command line, which
//! crabup's CLI check reads too) and `tools`; the binary calls [`run`] and
//! [`run_command`], and what the tests, benches, examples and fuzz oracles
//! drive (the config, the engines, fusion, the fetcher and its parts, the
//! address policy) is re-exported here.
//!
//! Without the default `service` feature the crate is the command line and
//! the config types: what `crabup` links.

mod address;
#[cfg(feature = "service")]
mod answer;
#[cfg(feature = "service")]
mod burst;
#[cfg(feature = "service")]
mod cache;
mod check;
pub mod cli;
mod config;
#[cfg(feature = "service")]
mod engine;
#[cfg(feature = "service")]
mod fetch;
#[cfg(feature = "service")]
mod health;
#[cfg(feature = "service")]
mod search;
#[cfg(feature = "service")]
mod service;
#[cfg(feature = "service")]
mod subcommands;
#[cfg(feature = "service")]
mod tools;
#[cfg(feature = "service")]
mod web;

pub use address::{AddressPolicy, classify, embedded_v4};
#[cfg(feature = "service")]
pub use answer::{EngineReport, FoundBy, ResultItem, SearchAnswer};
#[cfg(feature = "service")]
pub use burst::limit_arenas;
#[cfg(feature = "service")]
pub use cache::Cached;
pub use config::{EngineId, SearchConfig, Settings, load as load_config, parse as parse_config};
#[cfg(feature = "service")]
pub use engine::{Bing, Brave, DuckDuckGo, Engine, Hit, Mojeek, Query, Searxng, Wikipedia};
#[cfg(feature = "service")]
pub use fetch::body::decode as decode_text;
#[cfg(feature = "service")]
pub use fetch::readable::readable;
#[cfg(feature = "service")]
pub use fetch::{
    Budget, FetchError, Fetcher, Format, Kind, Lookup, SafeResolver, processing_slots,
};
#[cfg(feature = "service")]
pub use health::Status;
#[cfg(feature = "service")]
pub use search::SearchRequest;
#[cfg(feature = "service")]
pub use search::fusion::{EngineList, fuse};
#[cfg(feature = "service")]
pub use search::normalize::normalize;
#[cfg(feature = "service")]
pub use service::run;
#[cfg(feature = "service")]
pub use subcommands::run as run_command;
#[cfg(feature = "service")]
pub use web::Web;

/// `$CRABTALK_HOME/search/`: the service's own data (engine health).
#[cfg(feature = "service")]
pub(crate) fn data_dir(home: &crabtalk_home::Home) -> std::path::PathBuf {
    home.root().join("search")
}
