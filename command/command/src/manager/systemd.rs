//! systemd user units, driven with `systemctl --user`.
//!
//! | operation | commands |
//! |---|---|
//! | install | write `~/.config/systemd/user/<label>.service`, `daemon-reload` |
//! | start | install, `enable --now` |
//! | stop | `disable --now` |
//! | restart | install, `enable`, `restart` |
//! | status | `show -p LoadState,ActiveState,SubState,MainPID,Result` |
//! | uninstall | `disable --now`, remove the unit, `daemon-reload`, `reset-failed` |
//!
//! User units stop at logout unless the user has *linger* enabled
//! (`loginctl enable-linger`); [`linger_enabled`] tells, for `crabup doctor`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{
    Installed, ManagerError, ManagerKind, Restarted, ServiceManager, ServiceState, ServiceStatus,
    Started, Stopped, Tool, Uninstalled, prepare_home, require_binary, write_unit,
};
use crate::unit::{UnitFormat, UnitSpec};

/// systemd user units for one user.
#[derive(Debug, Clone)]
pub struct Systemd {
    systemctl: Tool,
    unit_dir: PathBuf,
}

/// Whether this machine runs systemd with a reachable user manager.
pub fn user_manager_available() -> bool {
    if !Path::new("/run/systemd/system").is_dir() {
        return false;
    }
    Tool::new("systemctl", &["--user"])
        .output(&["show-environment"])
        .is_ok_and(|out| out.success)
}

/// Whether the current user lingers (keeps user units running without a
/// login session); `None` when `loginctl` cannot tell.
pub fn linger_enabled() -> Option<bool> {
    let user = std::env::var("USER").ok()?;
    let out = Tool::new("loginctl", &[])
        .output(&["show-user", &user, "--property=Linger"])
        .ok()?;
    if !out.success {
        return None;
    }
    Some(out.stdout.trim() == "Linger=yes")
}

impl Systemd {
    /// `systemctl --user` and `$XDG_CONFIG_HOME/systemd/user`.
    pub fn for_current_user() -> Result<Self, ManagerError> {
        let config = dirs::config_dir().ok_or_else(|| {
            ManagerError::Other("cannot find the user's config directory for systemd units".into())
        })?;
        Ok(Self::new(
            Path::new("systemctl"),
            &config.join("systemd").join("user"),
        ))
    }

    /// A manager using `systemctl` at `systemctl` and units in `unit_dir`
    /// (tests point both at a temp dir).
    pub fn new(systemctl: &Path, unit_dir: &Path) -> Self {
        Self {
            systemctl: Tool::new(systemctl, &["--user"]),
            unit_dir: unit_dir.to_owned(),
        }
    }

    fn unit_name(spec: &UnitSpec) -> String {
        format!("{}.service", spec.service.label())
    }

    fn show(&self, spec: &UnitSpec) -> Result<HashMap<String, String>, ManagerError> {
        let out = self.systemctl.run(&[
            "show",
            "--property=LoadState,ActiveState,SubState,MainPID,Result,NRestarts,ExecMainCode,ExecMainStatus",
            &Self::unit_name(spec),
        ])?;
        Ok(out
            .stdout
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect())
    }
}

/// Reads `systemctl show` properties into a status.
pub fn status_from_properties(props: &HashMap<String, String>) -> ServiceStatus {
    let get = |key: &str| props.get(key).map(String::as_str).unwrap_or("");
    let pid = get("MainPID").parse::<u32>().ok().filter(|&pid| pid > 0);
    if get("LoadState") == "not-found" {
        return ServiceStatus::new(ServiceState::NotInstalled);
    }
    let detail = format!("{} ({})", get("ActiveState"), get("SubState"));
    let mut status = match (get("ActiveState"), get("SubState")) {
        ("activating", "auto-restart") => {
            ServiceStatus::new(ServiceState::Restarting).with_detail(detail)
        }
        ("active" | "activating" | "reloading" | "deactivating" | "refreshing", _) => {
            ServiceStatus::running(pid).with_detail(detail)
        }
        ("failed", _) => ServiceStatus::new(ServiceState::Failed)
            .with_detail(format!("{detail}, result {}", get("Result"))),
        _ => ServiceStatus::new(ServiceState::Stopped).with_detail(detail),
    };
    status.restarts = get("NRestarts").parse().ok();
    status.last_exit = last_exit(get("ExecMainCode"), get("ExecMainStatus"));
    status
}

/// How the main process last ended, from `ExecMainCode` (the `CLD_*`
/// code: 1 exited, 2 killed, 3 dumped core) and `ExecMainStatus`.
fn last_exit(code: &str, status: &str) -> Option<String> {
    let status: i32 = status.parse().ok()?;
    match code {
        "1" => Some(format!("exited with status {status}")),
        "2" | "3" => Some(format!("killed by signal {status}")),
        _ => None,
    }
}

impl ServiceManager for Systemd {
    fn kind(&self) -> ManagerKind {
        ManagerKind::Systemd
    }

    fn unit_path(&self, spec: &UnitSpec) -> Option<PathBuf> {
        Some(self.unit_dir.join(Self::unit_name(spec)))
    }

    fn install(&self, spec: &UnitSpec) -> Result<Installed, ManagerError> {
        require_binary(spec)?;
        prepare_home(spec)?;
        let text = spec.render(UnitFormat::Systemd)?;
        let path = self.unit_dir.join(Self::unit_name(spec));
        let installed = write_unit(&path, text.as_bytes())?;
        if matches!(installed, Installed::Written(_)) {
            self.systemctl.run(&["daemon-reload"])?;
        }
        Ok(installed)
    }

    fn start(&self, spec: &UnitSpec) -> Result<Started, ManagerError> {
        let status = self.status(spec)?;
        if status.is_running() {
            return Ok(Started::AlreadyRunning { pid: status.pid });
        }
        self.install(spec)?;
        self.systemctl
            .run(&["enable", "--now", &Self::unit_name(spec)])?;
        Ok(Started::Started {
            pid: self.status(spec)?.pid,
        })
    }

    fn stop(&self, spec: &UnitSpec) -> Result<Stopped, ManagerError> {
        let status = self.status(spec)?;
        if status.state == ServiceState::NotInstalled {
            return Ok(Stopped::NotRunning);
        }
        self.systemctl
            .run(&["disable", "--now", &Self::unit_name(spec)])?;
        if status.is_running() {
            Ok(Stopped::Stopped { pid: status.pid })
        } else {
            Ok(Stopped::NotRunning)
        }
    }

    fn restart(&self, spec: &UnitSpec) -> Result<Restarted, ManagerError> {
        let old_pid = self.status(spec)?.pid;
        self.install(spec)?;
        let unit = Self::unit_name(spec);
        self.systemctl.run(&["enable", &unit])?;
        self.systemctl.run(&["restart", &unit])?;
        Ok(Restarted {
            old_pid,
            new_pid: self.status(spec)?.pid,
        })
    }

    fn status(&self, spec: &UnitSpec) -> Result<ServiceStatus, ManagerError> {
        Ok(status_from_properties(&self.show(spec)?))
    }

    fn uninstall(&self, spec: &UnitSpec) -> Result<Uninstalled, ManagerError> {
        let path = self.unit_dir.join(Self::unit_name(spec));
        let unit = Self::unit_name(spec);
        if self.status(spec)?.state != ServiceState::NotInstalled {
            self.systemctl.run(&["disable", "--now", &unit])?;
        }
        if !path.exists() {
            return Ok(Uninstalled::NotInstalled);
        }
        std::fs::remove_file(&path).map_err(ManagerError::io("removing", &path))?;
        self.systemctl.run(&["daemon-reload"])?;
        // Forget a failed state so `ps` does not show a ghost.
        let _ = self.systemctl.output(&["reset-failed", &unit]);
        Ok(Uninstalled::Removed(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> HashMap<String, String> {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.into(), v.into()))
            .collect()
    }

    #[test]
    fn state_comes_from_active_state_not_from_the_unit_file() {
        let running = status_from_properties(&props(
            "LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=77\nResult=success",
        ));
        assert_eq!(running.state, ServiceState::Running);
        assert_eq!(running.pid, Some(77));
        let failed = status_from_properties(&props(
            "LoadState=loaded\nActiveState=failed\nSubState=failed\nMainPID=0\nResult=exit-code",
        ));
        assert_eq!(failed.state, ServiceState::Failed);
        assert_eq!(failed.pid, None);
        assert!(failed.detail.unwrap().contains("exit-code"));
        let missing = status_from_properties(&props(
            "LoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0",
        ));
        assert_eq!(missing.state, ServiceState::NotInstalled);
        let stopped = status_from_properties(&props(
            "LoadState=loaded\nActiveState=inactive\nSubState=dead\nMainPID=0",
        ));
        assert_eq!(stopped.state, ServiceState::Stopped);
        let restarting = status_from_properties(&props(
            "LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nMainPID=0\nNRestarts=2\nExecMainCode=2\nExecMainStatus=9",
        ));
        assert_eq!(restarting.state, ServiceState::Restarting);
        assert_eq!(restarting.restarts, Some(2));
        assert_eq!(restarting.last_exit.as_deref(), Some("killed by signal 9"));
    }
}
