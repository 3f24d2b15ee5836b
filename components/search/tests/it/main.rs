//! search's integration tests, one test binary: one link for all
//! of them (RFC 0040, "Tests"). A module per behaviour area.

mod bridge;
mod caps;
mod cli;
mod engines;
mod fetch;
mod service;
mod support;
