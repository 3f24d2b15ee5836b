//! What every command works with: the crabtalk home, cargo, and the
//! selected service manager.

use std::path::PathBuf;

use anyhow::Context as _;
use crabtalk_command::manager::process::{ProcessManager, SupervisorCommand};
use crabtalk_command::{ManagerKind, Service, ServiceManager, UnitSpec};
use crabtalk_home::Home;

use crate::cargo::{Cargo, exe};

pub(crate) struct Context {
    pub home: Home,
    pub cargo: Cargo,
    pub manager_kind: ManagerKind,
}

impl Context {
    pub(crate) fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            home: Home::from_env()?,
            cargo: Cargo::from_env()?,
            manager_kind: ManagerKind::select()?,
        })
    }

    /// The selected service manager. The process backend supervises its
    /// services with crabup itself (`crabup supervise`, hidden), which
    /// restarts a service that fails.
    pub(crate) fn manager(&self) -> anyhow::Result<Box<dyn ServiceManager>> {
        if self.manager_kind == ManagerKind::Process {
            let program = std::env::current_exe()
                .context("finding crabup's own executable, which supervises services")?;
            return Ok(Box::new(ProcessManager::new(&self.home).supervised_by(
                SupervisorCommand {
                    program,
                    args: vec!["supervise".into()],
                },
            )));
        }
        self.manager_kind
            .open(&self.home)
            .with_context(|| format!("opening the {} service manager", self.manager_kind))
    }

    /// Where the binary of `service` is, if installed.
    pub(crate) fn binary(&self, service: &Service) -> Option<PathBuf> {
        self.cargo.find_binary(service.binary())
    }

    /// The unit for `service`: its installed binary (or where `cargo
    /// install` would put it), this home, and PATH with cargo's bin first.
    pub(crate) fn spec(&self, service: &Service) -> UnitSpec {
        let program = self
            .binary(service)
            .unwrap_or_else(|| self.cargo.bin_dir().join(exe(service.binary())));
        UnitSpec::new(
            service.clone(),
            &self.home,
            absolute(program),
            self.service_path(),
        )
    }

    /// PATH for services: cargo's bin folder, then this PATH.
    pub(crate) fn service_path(&self) -> String {
        let bin = absolute(self.cargo.bin_dir());
        let current = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = vec![bin.clone()];
        dirs.extend(std::env::split_paths(&current).filter(|dir| *dir != bin));
        std::env::join_paths(dirs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| current.to_string_lossy().into_owned())
    }
}

fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}
