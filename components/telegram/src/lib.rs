//! `crabtalk-telegram`: the crabtalk Telegram gateway.
//!
//! Not built yet. The binary already has its real command line — the one
//! its service units run (`crabtalk-telegram run`, `-v`) — so units can be checked
//! against it; `run` exits with
//! [`NOT_BUILT_EXIT_CODE`](crabtalk_command::component::NOT_BUILT_EXIT_CODE)
//! and says so.

pub mod cli;
