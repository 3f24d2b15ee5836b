//! The integration tests of `crabup`, as one test binary (one link instead
//! of one per file): the real `crabup` binary in a sandbox per test.
//!
//! `daemon_lifecycle` and `quick_start` build and install with a real
//! `cargo install`; they run only when `CRABTALK_SLOW_TESTS` is set (CI
//! sets it, see `.ci/run` and the README's test section). `family` runs the
//! real binaries of this build together, always.

mod cargo_shim;
mod cli;
mod config_check;
mod cron_service;
mod daemon_lifecycle;
mod doctor_components;
mod family;
mod first_run;
mod logs;
mod ps_health;
mod quick_start;
mod restart_rule;
mod search_service;
mod strangers;
mod supervisor;
mod support;
mod where_binaries_are;
