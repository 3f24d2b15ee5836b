//! Windows Task Scheduler, driven with `schtasks`.
//!
//! | operation | commands |
//! |---|---|
//! | install | write the task XML (re-declared and encoded as UTF-16) to `run/<label>.xml`, `/Create /TN <label> /XML <file> /F` |
//! | start | install, `/Change /ENABLE`, `/Run` |
//! | stop | `/End`, `/Change /DISABLE` |
//! | restart | `/End`, `/Run` |
//! | status | `/Query /TN <label> /FO LIST /V` (`Status:`) |
//! | uninstall | `/End`, `/Delete /F` |
//!
//! Task Scheduler does not report the service's pid (the task runs
//! `cmd.exe`), so the pid comes from the service's port file.

use std::ffi::OsStr;
use std::path::PathBuf;

use crabtalk_home::{Home, PortFile};

use super::{
    Installed, ManagerError, ManagerKind, Restarted, ServiceManager, ServiceState, ServiceStatus,
    Started, Stopped, Tool, Uninstalled, prepare_home, require_binary, write_unit,
};
use crate::unit::{UnitFormat, UnitSpec};

/// Task Scheduler tasks of the current user.
#[derive(Debug, Clone)]
pub struct Schtasks {
    schtasks: Tool,
    home: Home,
}

impl Schtasks {
    pub fn new(home: &Home) -> Self {
        Self {
            schtasks: Tool::new("schtasks", &[]),
            home: home.clone(),
        }
    }

    fn xml_path(&self, spec: &UnitSpec) -> PathBuf {
        self.home
            .run_dir()
            .join(format!("{}.xml", spec.service.label()))
    }

    fn query(&self, spec: &UnitSpec) -> Result<Option<String>, ManagerError> {
        let label = spec.service.label();
        let out = self
            .schtasks
            .output(&["/Query", "/TN", &label, "/FO", "LIST", "/V"])?;
        Ok(out.success.then_some(out.stdout))
    }
}

/// The task file as installed: `schtasks` reads task XML as UTF-16. The
/// rendered text declares UTF-8 — it is what `crabup <service> unit`
/// prints, and a printed file must be what it says — so the declaration is
/// changed with the encoding.
pub fn installed_form(text: &str) -> Vec<u8> {
    utf16_with_bom(&text.replacen("encoding=\"UTF-8\"", "encoding=\"UTF-16\"", 1))
}

/// UTF-16, little endian, with a BOM.
fn utf16_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes
}

/// Reads `schtasks /Query /FO LIST /V` output into a state.
pub fn state_from_query(text: &str) -> ServiceState {
    let status = text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "Status").then(|| value.trim().to_owned())
    });
    match status.as_deref() {
        Some("Running") => ServiceState::Running,
        Some(_) => ServiceState::Stopped,
        None => ServiceState::NotInstalled,
    }
}

impl ServiceManager for Schtasks {
    fn kind(&self) -> ManagerKind {
        ManagerKind::Schtasks
    }

    fn unit_path(&self, spec: &UnitSpec) -> Option<PathBuf> {
        Some(self.xml_path(spec))
    }

    fn install(&self, spec: &UnitSpec) -> Result<Installed, ManagerError> {
        require_binary(spec)?;
        prepare_home(spec)?;
        let text = spec.render(UnitFormat::Schtasks)?;
        let path = self.xml_path(spec);
        let installed = write_unit(&path, &installed_form(&text))?;
        if matches!(installed, Installed::Written(_)) || self.query(spec)?.is_none() {
            let label = spec.service.label();
            self.schtasks.run(&[
                OsStr::new("/Create"),
                OsStr::new("/TN"),
                OsStr::new(&label),
                OsStr::new("/XML"),
                path.as_os_str(),
                OsStr::new("/F"),
            ])?;
        }
        Ok(installed)
    }

    fn start(&self, spec: &UnitSpec) -> Result<Started, ManagerError> {
        let status = self.status(spec)?;
        if status.is_running() {
            return Ok(Started::AlreadyRunning { pid: status.pid });
        }
        self.install(spec)?;
        let label = spec.service.label();
        self.schtasks.run(&["/Change", "/TN", &label, "/ENABLE"])?;
        self.schtasks.run(&["/Run", "/TN", &label])?;
        Ok(Started::Started { pid: None })
    }

    fn stop(&self, spec: &UnitSpec) -> Result<Stopped, ManagerError> {
        let status = self.status(spec)?;
        if status.state == ServiceState::NotInstalled {
            return Ok(Stopped::NotRunning);
        }
        let label = spec.service.label();
        if status.is_running() {
            self.schtasks.run(&["/End", "/TN", &label])?;
        }
        self.schtasks.run(&["/Change", "/TN", &label, "/DISABLE"])?;
        Ok(if status.is_running() {
            Stopped::Stopped { pid: status.pid }
        } else {
            Stopped::NotRunning
        })
    }

    fn restart(&self, spec: &UnitSpec) -> Result<Restarted, ManagerError> {
        let old_pid = self.status(spec)?.pid;
        self.stop(spec)?;
        self.start(spec)?;
        Ok(Restarted {
            old_pid,
            new_pid: None,
        })
    }

    fn status(&self, spec: &UnitSpec) -> Result<ServiceStatus, ManagerError> {
        let Some(text) = self.query(spec)? else {
            return Ok(ServiceStatus::new(ServiceState::NotInstalled));
        };
        let state = state_from_query(&text);
        let pid = PortFile::read(&spec.service.port_file(&self.home))
            .ok()
            .and_then(|file| file.pid);
        Ok(ServiceStatus {
            pid: if state == ServiceState::Running {
                pid
            } else {
                None
            },
            ..ServiceStatus::new(state)
        })
    }

    fn uninstall(&self, spec: &UnitSpec) -> Result<Uninstalled, ManagerError> {
        let label = spec.service.label();
        if self.query(spec)?.is_none() {
            return Ok(Uninstalled::NotInstalled);
        }
        let _ = self.schtasks.output(&["/End", "/TN", &label]);
        self.schtasks.run(&["/Delete", "/TN", &label, "/F"])?;
        let path = self.xml_path(spec);
        let _ = std::fs::remove_file(&path);
        Ok(Uninstalled::Removed(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_xml_is_utf16_with_a_bom() {
        assert_eq!(utf16_with_bom("<a"), [0xFF, 0xFE, b'<', 0, b'a', 0]);
    }

    #[test]
    fn the_installed_file_declares_the_encoding_it_is_in() {
        let printed = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Task>é</Task>\n";
        let bytes = installed_form(printed);
        assert_eq!(bytes[..2], [0xFF, 0xFE]);
        let units: Vec<u16> = bytes[2..]
            .chunks(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        let installed = String::from_utf16(&units).unwrap();
        assert_eq!(
            installed,
            "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<Task>é</Task>\n"
        );
    }

    #[test]
    fn query_status_maps_to_state() {
        let text = "Folder: \\\nHostName: PC\nTaskName: \\ai.crabtalk.daemon\nStatus: Running\n";
        assert_eq!(state_from_query(text), ServiceState::Running);
        assert_eq!(state_from_query("Status: Ready"), ServiceState::Stopped);
        assert_eq!(state_from_query(""), ServiceState::NotInstalled);
    }
}
