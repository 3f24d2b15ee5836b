//! launchd agents, driven with `launchctl` in the `gui/<uid>` domain.
//!
//! | operation | commands |
//! |---|---|
//! | install | write `~/Library/LaunchAgents/<label>.plist` |
//! | start | install, `enable gui/<uid>/<label>`, `bootstrap gui/<uid> <plist>` (or `kickstart` when loaded) |
//! | stop | `bootout gui/<uid>/<label>`, `disable gui/<uid>/<label>` |
//! | restart | `kickstart -k gui/<uid>/<label>` (or start) |
//! | status | `print gui/<uid>/<label>` (`state`, `pid`, `last exit code`) |
//! | uninstall | `bootout`, remove the plist |

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{
    Installed, ManagerError, ManagerKind, Restarted, ServiceManager, ServiceState, ServiceStatus,
    Started, Stopped, Tool, Uninstalled, prepare_home, require_binary, write_unit,
};
use crate::unit::{UnitFormat, UnitSpec};

/// launchd agents of one user.
#[derive(Debug, Clone)]
pub struct Launchd {
    launchctl: Tool,
    agents_dir: PathBuf,
    uid: u32,
}

impl Launchd {
    /// `launchctl`, `~/Library/LaunchAgents`, the current uid.
    pub fn for_current_user() -> Result<Self, ManagerError> {
        let home = dirs::home_dir()
            .ok_or_else(|| ManagerError::Other("cannot find the user's home directory".into()))?;
        #[cfg(unix)]
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        #[cfg(not(unix))]
        let uid = 0;
        Ok(Self::new(
            Path::new("launchctl"),
            &home.join("Library").join("LaunchAgents"),
            uid,
        ))
    }

    pub fn new(launchctl: &Path, agents_dir: &Path, uid: u32) -> Self {
        Self {
            launchctl: Tool::new(launchctl, &[]),
            agents_dir: agents_dir.to_owned(),
            uid,
        }
    }

    fn plist_path(&self, spec: &UnitSpec) -> PathBuf {
        self.agents_dir
            .join(format!("{}.plist", spec.service.label()))
    }

    fn domain(&self) -> String {
        format!("gui/{}", self.uid)
    }

    fn target(&self, spec: &UnitSpec) -> String {
        format!("gui/{}/{}", self.uid, spec.service.label())
    }

    /// `launchctl print` output, or `None` when the job is not loaded.
    fn print(&self, spec: &UnitSpec) -> Result<Option<String>, ManagerError> {
        let out = self.launchctl.output(&["print", &self.target(spec)])?;
        Ok(out.success.then_some(out.stdout))
    }
}

/// Reads `launchctl print` output into a status.
pub fn status_from_print(text: &str) -> ServiceStatus {
    let value = |key: &str| {
        text.lines().find_map(|line| {
            let (k, v) = line.trim().split_once(" = ")?;
            (k == key).then(|| v.trim().to_owned())
        })
    };
    let pid = value("pid").and_then(|p| p.parse().ok());
    let exit = value("last exit code");
    match value("state").as_deref() {
        Some("running") => ServiceStatus::running(pid),
        state => {
            let failed = exit
                .as_deref()
                .is_some_and(|code| code != "0" && !code.starts_with("(never"));
            let status = ServiceStatus::new(if failed {
                ServiceState::Failed
            } else {
                ServiceState::Stopped
            });
            status.with_detail(format!(
                "state {}, last exit code {}",
                state.unwrap_or("unknown"),
                exit.as_deref().unwrap_or("unknown")
            ))
        }
    }
}

impl ServiceManager for Launchd {
    fn kind(&self) -> ManagerKind {
        ManagerKind::Launchd
    }

    fn unit_path(&self, spec: &UnitSpec) -> Option<PathBuf> {
        Some(self.plist_path(spec))
    }

    fn install(&self, spec: &UnitSpec) -> Result<Installed, ManagerError> {
        require_binary(spec)?;
        prepare_home(spec)?;
        let text = spec.render(UnitFormat::Launchd)?;
        write_unit(&self.plist_path(spec), text.as_bytes())
    }

    fn start(&self, spec: &UnitSpec) -> Result<Started, ManagerError> {
        let status = self.status(spec)?;
        if status.is_running() {
            return Ok(Started::AlreadyRunning { pid: status.pid });
        }
        let installed = self.install(spec)?;
        let target = self.target(spec);
        self.launchctl.run(&["enable", &target])?;
        let loaded = self.print(spec)?.is_some();
        if loaded && matches!(installed, Installed::Written(_)) {
            // A loaded job keeps its old definition until booted out.
            self.launchctl.run(&["bootout", &target])?;
        }
        if loaded && matches!(installed, Installed::Unchanged(_)) {
            self.launchctl.run(&["kickstart", &target])?;
        } else {
            let plist = self.plist_path(spec);
            let domain = self.domain();
            self.launchctl.run(&[
                OsStr::new("bootstrap"),
                OsStr::new(&domain),
                plist.as_os_str(),
            ])?;
        }
        Ok(Started::Started {
            pid: self.status(spec)?.pid,
        })
    }

    fn stop(&self, spec: &UnitSpec) -> Result<Stopped, ManagerError> {
        let Some(print) = self.print(spec)? else {
            return Ok(Stopped::NotRunning);
        };
        let status = status_from_print(&print);
        let target = self.target(spec);
        self.launchctl.run(&["bootout", &target])?;
        self.launchctl.run(&["disable", &target])?;
        Ok(if status.is_running() {
            Stopped::Stopped { pid: status.pid }
        } else {
            Stopped::NotRunning
        })
    }

    fn restart(&self, spec: &UnitSpec) -> Result<Restarted, ManagerError> {
        let old = self.status(spec)?;
        if self.print(spec)?.is_none() || matches!(self.install(spec)?, Installed::Written(_)) {
            self.stop(spec)?;
            let new_pid = match self.start(spec)? {
                Started::Started { pid } | Started::AlreadyRunning { pid } => pid,
            };
            return Ok(Restarted {
                old_pid: old.pid,
                new_pid,
            });
        }
        self.launchctl
            .run(&["kickstart", "-k", &self.target(spec)])?;
        Ok(Restarted {
            old_pid: old.pid,
            new_pid: self.status(spec)?.pid,
        })
    }

    fn status(&self, spec: &UnitSpec) -> Result<ServiceStatus, ManagerError> {
        Ok(match self.print(spec)? {
            Some(text) => status_from_print(&text),
            None if self.plist_path(spec).exists() => {
                ServiceStatus::new(ServiceState::Stopped).with_detail("installed, not loaded")
            }
            None => ServiceStatus::new(ServiceState::NotInstalled),
        })
    }

    fn uninstall(&self, spec: &UnitSpec) -> Result<Uninstalled, ManagerError> {
        if self.print(spec)?.is_some() {
            self.launchctl.run(&["bootout", &self.target(spec)])?;
        }
        let path = self.plist_path(spec);
        if !path.exists() {
            return Ok(Uninstalled::NotInstalled);
        }
        std::fs::remove_file(&path).map_err(ManagerError::io("removing", &path))?;
        Ok(Uninstalled::Removed(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_output_gives_state_pid_and_failures() {
        let running = status_from_print(
            "gui/501/ai.crabtalk.daemon = {\n\tstate = running\n\tpid = 812\n\tlast exit code = (never exited)\n}",
        );
        assert_eq!(running, ServiceStatus::running(Some(812)));
        let failed = status_from_print("x = {\n\tstate = not running\n\tlast exit code = 78\n}");
        assert_eq!(failed.state, ServiceState::Failed);
        let stopped = status_from_print("x = {\n\tstate = not running\n\tlast exit code = 0\n}");
        assert_eq!(stopped.state, ServiceState::Stopped);
    }
}
