//! cron's integration tests, one test binary: one link for all
//! of them (RFC 0040, "Tests"). A module per behaviour area.

mod cli;
mod config;
mod engine;
mod service;
mod support;
