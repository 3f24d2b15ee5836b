//! `crabtalk-command`: running crabtalk binaries as services of this
//! machine — what `crabup` is built on.
//!
//! - [`unit`](mod@unit): rendering launchd plists, systemd user units and Task
//!   Scheduler XML from the templates in `service-templates/`, every value
//!   escaped for its format.
//! - [`manager`]: the service managers (launchd, systemd, schtasks, and a
//!   plain `process` backend) behind one [`ServiceManager`] interface, with
//!   automatic selection and `CRABTALK_SERVICE_MANAGER` to force one.
//! - [`liveness`]: whether a pid is alive and is the binary it should be,
//!   and whether a port file is live or stale.
//! - [`logs`]: the last lines of a log and following it across rotation.
//! - [`health`]: asking a component's `GET /health`.
//!
//! What a service *is* ([`Service`]: name, label, binary, run files) lives
//! below, in `crabtalk-home`, because components need it too; the other
//! side of the contract — serving MCP and `/health`, the component `main`
//! — is the component kit (`crabtalk-kit`). This crate links no HTTP
//! server and no MCP, and components do not link it (nor its templates).
//!
//! ```no_run
//! use crabtalk_command::{ManagerKind, UnitSpec};
//! use crabtalk_home::{Home, Service};
//!
//! # fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let home = Home::from_env()?;
//! let manager = ManagerKind::select()?.open(&home)?;
//! let spec = UnitSpec::new(
//!     Service::daemon(),
//!     &home,
//!     "/usr/local/bin/crabtalkd".into(),
//!     "/usr/local/bin:/usr/bin".into(),
//! );
//! let status = manager.status(&spec)?;
//! println!("the daemon is {:?}", status.state);
//! # Ok(()) }
//! ```

pub mod health;
pub mod liveness;
pub mod logs;
pub mod manager;
pub mod unit;

pub use crabtalk_home::{RUN_ARGS, Service};
pub use manager::{ManagerKind, ServiceManager, ServiceState, ServiceStatus};
pub use unit::{UnitFormat, UnitSpec};
