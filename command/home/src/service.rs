//! [`Service`]: what a crabtalk binary is when it runs as a service.

use crate::{DAEMON_RUN_NAME, Home, HomeError, validate_service_name};
use std::path::PathBuf;

/// The arguments every crabtalk service binary runs with in the foreground.
pub const RUN_ARGS: &[&str] = &["run"];

/// A crabtalk binary run as a service.
///
/// `name` is the short name people type (`daemon`, `search`); it names the
/// log (`logs/<name>.log`), the label (`ai.crabtalk.<name>`) and the unit.
/// `run_name` names the files in `run/`: the same as `name` for components,
/// `crabtalk` for the daemon (`run/crabtalk.sock`, `run/crabtalk.port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    name: String,
    run_name: String,
    binary: String,
    description: String,
    args: Vec<String>,
}

impl Service {
    /// A component: `run/<name>.port`, `logs/<name>.log`, `<binary> run`.
    pub fn new(name: &str, binary: &str, description: &str) -> Result<Self, HomeError> {
        validate_service_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            run_name: name.to_owned(),
            binary: binary.to_owned(),
            description: description.to_owned(),
            args: RUN_ARGS.iter().map(|arg| arg.to_string()).collect(),
        })
    }

    /// The daemon: service name `daemon`, run files `run/crabtalk.*`.
    pub fn daemon() -> Self {
        Self {
            name: "daemon".into(),
            run_name: DAEMON_RUN_NAME.into(),
            binary: "crabtalkd".into(),
            description: "crabtalk daemon".into(),
            args: RUN_ARGS.iter().map(|arg| arg.to_string()).collect(),
        }
    }

    /// Replaces the foreground arguments (default `run`).
    pub fn with_args(mut self, args: &[&str]) -> Self {
        self.args = args.iter().map(|arg| arg.to_string()).collect();
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stem of this service's files in `run/`.
    pub fn run_name(&self) -> &str {
        &self.run_name
    }

    /// The executable's file name (without `.exe`).
    pub fn binary(&self) -> &str {
        &self.binary
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    /// The arguments of the foreground command, after the program.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// `ai.crabtalk.<name>`: the launchd label, systemd unit stem and task name.
    pub fn label(&self) -> String {
        format!("ai.crabtalk.{}", self.name)
    }

    pub fn is_daemon(&self) -> bool {
        self.run_name == DAEMON_RUN_NAME
    }

    /// `logs/<name>.log`.
    pub fn log_file(&self, home: &Home) -> PathBuf {
        home.log_file(&self.name)
            .expect("service names are validated on construction")
    }

    /// `run/<run_name>.port`.
    pub fn port_file(&self, home: &Home) -> PathBuf {
        if self.is_daemon() {
            return home.daemon_port_file();
        }
        home.port_file(&self.run_name)
            .expect("service names are validated on construction")
    }

    /// `run/<name>.pid`, written by the process backend.
    pub fn pid_file(&self, home: &Home) -> PathBuf {
        home.pid_file(&self.name)
            .expect("service names are validated on construction")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_files_use_the_crabtalk_run_name_but_the_daemon_log() {
        let home = Home::new("/h");
        let daemon = Service::daemon();
        assert_eq!(daemon.label(), "ai.crabtalk.daemon");
        assert_eq!(
            daemon.port_file(&home),
            PathBuf::from("/h/run/crabtalk.port")
        );
        assert_eq!(daemon.log_file(&home), PathBuf::from("/h/logs/daemon.log"));
        assert_eq!(daemon.pid_file(&home), PathBuf::from("/h/run/daemon.pid"));
        assert_eq!(daemon.args(), ["run"]);
    }

    #[test]
    fn component_names_are_validated() {
        assert!(Service::new("../etc", "x", "x").is_err());
        let search = Service::new("search", "crabtalk-search", "meta-search").unwrap();
        assert_eq!(
            search.port_file(&Home::new("/h")),
            PathBuf::from("/h/run/search.port")
        );
    }
}
