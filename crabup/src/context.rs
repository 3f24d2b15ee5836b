//! What every command works with: the crabtalk home, cargo, and the
//! selected service manager.

use std::path::PathBuf;

use anyhow::Context as _;
use crabtalk_command::{ManagerKind, Service, ServiceManager, UnitSpec};
use crabtalk_home::Home;

use crate::cargo::{Cargo, exe};

pub struct Context {
    pub home: Home,
    pub cargo: Cargo,
    pub manager_kind: ManagerKind,
}

impl Context {
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            home: Home::from_env()?,
            cargo: Cargo::from_env()?,
            manager_kind: ManagerKind::select()?,
        })
    }

    pub fn manager(&self) -> anyhow::Result<Box<dyn ServiceManager>> {
        self.manager_kind
            .open(&self.home)
            .with_context(|| format!("opening the {} service manager", self.manager_kind))
    }

    /// Where the binary of `service` is, if installed.
    pub fn binary(&self, service: &Service) -> Option<PathBuf> {
        self.cargo.find_binary(service.binary())
    }

    /// The unit for `service`: its installed binary (or where `cargo
    /// install` would put it), this home, and PATH with cargo's bin first.
    pub fn spec(&self, service: &Service) -> UnitSpec {
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
    pub fn service_path(&self) -> String {
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
