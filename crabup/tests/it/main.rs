//! The integration tests of `crabup`, as one test binary (one link instead
//! of one per file): the real `crabup` binary in a sandbox per test.
//!
//! `daemon_lifecycle` builds and installs the daemon with a real `cargo
//! install`; it runs only when `CRABTALK_SLOW_TESTS` is set (CI sets it,
//! see `.ci/run` and the README's test section).

mod cargo_shim;
mod cli;
mod config_check;
mod cron_service;
mod daemon_lifecycle;
mod first_run;
mod logs;
mod ps_health;
mod search_service;
mod support;
