//! The integration tests of `crabtalk-kit`, as one test binary: components
//! built on the kit (the `echo_component` and `kit_probe` examples) run as
//! real processes against the real daemon.

mod access;
mod config_exit;
mod connect;
mod dependency_rules;
mod health;
mod idle;
mod link;
mod loopback;
mod mcp_component;
mod support;
