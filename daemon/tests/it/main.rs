//! daemon's integration tests, one test binary: one link for all
//! of them (RFC 0040, "Tests"). A module per behaviour area, and `support`
//! for what several of them set up.

mod bridge;
mod compaction;
mod conversation_view;
mod delegation;
mod env_file;
mod gateway;
mod idle;
mod layers;
mod local_users;
mod mcp;
mod mcp_reliability;
mod memory_tools;
mod misbehaving_clients;
mod operations;
mod presets;
mod recovery;
mod reload;
mod resilience;
mod sessions;
mod support;
mod tools;
mod turns;
