//! `crabtalk-command`: what every crabtalk service binary and `crabup` share
//! to run a binary as a service.
//!
//! A crabtalk component is an independent program that runs as a system
//! service, announces itself with a port file in `$CRABTALK_HOME/run/`, and
//! serves MCP over HTTP on that port (RFC 0043). This crate holds the pieces
//! of that contract:
//!
//! - [`Service`]: a binary as a service — short name, label
//!   (`ai.crabtalk.<name>`), description, binary, foreground arguments.
//! - [`unit`]: rendering launchd plists, systemd user units and Task
//!   Scheduler XML from the templates in `service-templates/`, every value
//!   escaped for its format.
//! - [`manager`]: the service managers (launchd, systemd, schtasks, and a
//!   plain `process` backend) behind one [`ServiceManager`] interface, with
//!   automatic selection and `CRABTALK_SERVICE_MANAGER` to force one.
//! - [`liveness`]: whether a pid is alive and is the binary it should be,
//!   and whether a port file is live or stale.
//! - [`logs`]: the last lines of a log and following it across rotation.
//! - [`mcp`]: [`run_mcp`], the component runtime — bind, write the port
//!   file, serve `/mcp`, remove the port file on the way out.
//! - [`health`]: `GET /health` next to `/mcp`, and the check that asks it.
//! - [`component`]: the `main` of a component binary — `run`, `-v`,
//!   tracing to stderr, exit codes.

pub mod component;
pub mod health;
pub mod liveness;
pub mod logs;
pub mod manager;
pub mod mcp;
mod service;
pub mod unit;

pub use manager::{ManagerKind, ServiceManager, ServiceState, ServiceStatus};
pub use mcp::{mcp_router, run_mcp, run_mcp_reporting};
pub use service::{RUN_ARGS, Service};
pub use unit::{UnitFormat, UnitSpec};
