//! `crabtalk-telegram`: the crabtalk Telegram gateway.
//!
//! Not built yet. The binary already has its real command line — the one
//! its service units run (`crabtalk-telegram run`, `-v`) — so units can be
//! checked against it; `run` exits with 69
//! ([`EX_UNAVAILABLE`](crabtalk_home::exit::EX_UNAVAILABLE)) and says so.
//!
//! Its configuration type is here already ([`config`]): the gateway owns
//! the format of `config/telegram.toml`, and `crabup`'s first-run setup
//! writes the file with this type (depending on this crate without the
//! default `service` feature, so it links no HTTP server or MCP).

pub mod cli;
pub mod config;
