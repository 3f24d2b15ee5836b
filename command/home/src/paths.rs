//! [`Home`]: `CRABTALK_HOME` and every well-known path under it.
//!
//! The root is `$CRABTALK_HOME` when set, else `~/.crabtalk`. Service names
//! that become file names are validated (see [`validate_service_name`]), so
//! no caller can address a file outside its folder through a name.

use std::path::{Path, PathBuf};

/// The environment variable that overrides the home directory.
pub const HOME_ENV: &str = "CRABTALK_HOME";

/// The daemon's service name: `run/crabtalk.*`, but `logs/daemon.log`.
pub const DAEMON_RUN_NAME: &str = "crabtalk";

/// Why a home or a path under it could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error(
        "cannot find the crabtalk home: {HOME_ENV} is not set and the user's home directory is unknown; set {HOME_ENV}"
    )]
    NoHome,
    #[error("cannot resolve the relative {HOME_ENV} {path:?}: {source}")]
    Relative {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "invalid service name {name:?}: use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
    )]
    InvalidServiceName { name: String },
}

/// The crabtalk home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// The home named by `$CRABTALK_HOME`, else `~/.crabtalk`. A relative
    /// `$CRABTALK_HOME` is resolved against the current directory, so every
    /// process of one setup agrees on it.
    pub fn from_env() -> Result<Self, HomeError> {
        match std::env::var_os(HOME_ENV).filter(|value| !value.is_empty()) {
            Some(root) => {
                let root = PathBuf::from(root);
                if root.is_absolute() {
                    return Ok(Self::new(root));
                }
                let cwd = std::env::current_dir().map_err(|source| HomeError::Relative {
                    path: root.clone(),
                    source,
                })?;
                Ok(Self::new(cwd.join(root)))
            }
            None => dirs::home_dir()
                .map(|home| Self::new(home.join(".crabtalk")))
                .ok_or(HomeError::NoHome),
        }
    }

    /// A home rooted at `root` (tests use a temp dir).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `config.toml`: the daemon config.
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// `env`: `KEY=value` lines (provider keys) every service loads at start
    /// (see [`Home::load_env_file`]).
    pub fn env_file(&self) -> PathBuf {
        self.root.join("env")
    }

    /// `Crab.md`: global instructions for every agent.
    pub fn instructions_file(&self) -> PathBuf {
        self.root.join("Crab.md")
    }

    /// `agents/`: `<name>.toml` definitions and `<name>.md` prompts.
    pub fn agents_dir(&self) -> PathBuf {
        self.root.join("agents")
    }

    /// `sessions/`: one log per conversation.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `memory/`: one CRMEM file per agent.
    pub fn memory_dir(&self) -> PathBuf {
        self.root.join("memory")
    }

    /// `skills/`: `SKILL.md` bundles.
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    /// `events/subscriptions.toml`: event bus subscriptions.
    pub fn subscriptions_file(&self) -> PathBuf {
        self.root.join("events").join("subscriptions.toml")
    }

    /// `config/`: component configs.
    pub fn component_config_dir(&self) -> PathBuf {
        self.root.join("config")
    }

    /// `config/<file>`, e.g. `config/crons.toml`.
    pub fn component_config(&self, file: &str) -> Result<PathBuf, HomeError> {
        let stem = file.strip_suffix(".toml").unwrap_or(file);
        validate_service_name(stem)?;
        Ok(self.component_config_dir().join(format!("{stem}.toml")))
    }

    /// `run/`: sockets, port files, pid files, the lock.
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// `run/crabtalk.sock`: the daemon's Unix socket.
    pub fn socket_path(&self) -> PathBuf {
        self.run_dir().join(format!("{DAEMON_RUN_NAME}.sock"))
    }

    /// `run/crabtalk.port`: the daemon's TCP port.
    pub fn daemon_port_file(&self) -> PathBuf {
        self.run_dir().join(format!("{DAEMON_RUN_NAME}.port"))
    }

    /// `run/crabtalk.lock`: held by the one daemon of this home.
    pub fn lock_file(&self) -> PathBuf {
        self.run_dir().join(format!("{DAEMON_RUN_NAME}.lock"))
    }

    /// `run/token`: the token a local client sends in `Hello` when it
    /// reaches the daemon over TCP (the Unix socket needs none).
    pub fn token_file(&self) -> PathBuf {
        self.run_dir().join("token")
    }

    /// `run/<service>.port`: where a component serves MCP.
    pub fn port_file(&self, service: &str) -> Result<PathBuf, HomeError> {
        validate_service_name(service)?;
        Ok(self.run_dir().join(format!("{service}.port")))
    }

    /// `run/<service>.pid`: the pid of a service run by the process backend.
    pub fn pid_file(&self, service: &str) -> Result<PathBuf, HomeError> {
        validate_service_name(service)?;
        Ok(self.run_dir().join(format!("{service}.pid")))
    }

    /// `logs/`: one log per service.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// `logs/<service>.log`.
    pub fn log_file(&self, service: &str) -> Result<PathBuf, HomeError> {
        validate_service_name(service)?;
        Ok(self.logs_dir().join(format!("{service}.log")))
    }
}

/// Checks that `name` is usable as a service file name: 1-64 characters of
/// `[a-z0-9_-]`, starting with a letter or digit.
pub fn validate_service_name(name: &str) -> Result<(), HomeError> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if valid {
        Ok(())
    } else {
        Err(HomeError::InvalidServiceName {
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_paths_sit_under_the_root() {
        let home = Home::new("/h");
        assert_eq!(home.socket_path(), Path::new("/h/run/crabtalk.sock"));
        assert_eq!(home.daemon_port_file(), Path::new("/h/run/crabtalk.port"));
        assert_eq!(home.lock_file(), Path::new("/h/run/crabtalk.lock"));
        assert_eq!(
            home.port_file("search").unwrap(),
            Path::new("/h/run/search.port")
        );
        assert_eq!(
            home.log_file("daemon").unwrap(),
            Path::new("/h/logs/daemon.log")
        );
        assert_eq!(
            home.component_config("crons.toml").unwrap(),
            Path::new("/h/config/crons.toml")
        );
        assert_eq!(
            home.component_config("telegram").unwrap(),
            Path::new("/h/config/telegram.toml")
        );
        assert_eq!(
            home.subscriptions_file(),
            Path::new("/h/events/subscriptions.toml")
        );
    }

    #[test]
    fn service_names_cannot_leave_their_folder() {
        let home = Home::new("/h");
        for bad in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "A",
            "a b",
            "-x",
            &"x".repeat(65),
            "a\0b",
        ] {
            assert!(home.port_file(bad).is_err(), "{bad:?} accepted");
            assert!(home.log_file(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["search", "cron", "daemon", "my-gateway_2", "0x"] {
            assert!(home.port_file(good).is_ok(), "{good:?} refused");
        }
    }
}
