//! `crabtalk-search`: the crabtalk meta-search MCP service.
//!
//! Not built yet. The binary already has its real command line — the one
//! its service units run (`crabtalk-search run`, `-v`) — so units can be checked
//! against it; `run` exits with
//! 69 ([`EX_UNAVAILABLE`](crabtalk_home::exit::EX_UNAVAILABLE))
//! and says so.

pub mod cli;
