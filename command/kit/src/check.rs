//! `<binary> check`: a component's configuration read as `run` would read
//! it, with nothing started.
//!
//! Every component's command line has `check` (the kit adds it, see
//! [`with_check`](crate::cli::with_check)). It runs the component's own
//! loader on the files `run` reads — no port is bound, no lock taken, the
//! daemon is not asked — and either prints a one-line summary (exit 0) or
//! fails with the [`ConfigError`](crate::config::ConfigError) that `run`
//! would fail with, at `file:line:column` (exit 78). `crabup` runs it
//! before it starts or restarts a service: a running service is never
//! stopped for one that would refuse its files.
//!
//! A component with its own command line says what it checks in
//! [`ComponentCli::check`](crate::cli::ComponentCli::check); a `run`-only
//! one hands [`main_run`](crate::main_run) one of these, or its own
//! function.

use serde::de::DeserializeOwned;

use crate::Component;

/// A check: the component's loader on its files; a summary, or why the
/// service would refuse them.
pub type Check = fn(&Component) -> anyhow::Result<String>;

/// A required `config/<name>.toml`, read into `T` as
/// [`Component::config`] reads it.
pub fn required<T: DeserializeOwned>(component: &Component) -> anyhow::Result<String> {
    component.config::<T>()?;
    Ok(format!(
        "{}: the service would take it",
        component.config_path().display()
    ))
}

/// An optional `config/<name>.toml`, read into `T` as
/// [`Component::config_or_default`] reads it.
pub fn optional<T: DeserializeOwned + Default>(component: &Component) -> anyhow::Result<String> {
    component.config_or_default::<T>()?;
    let path = component.config_path();
    Ok(if path.exists() {
        format!("{}: the service would take it", path.display())
    } else {
        format!(
            "no {} (optional): the service runs on its defaults",
            path.display()
        )
    })
}

/// A component that reads no configuration file: nothing can be wrong.
#[cfg(feature = "service")]
pub(crate) fn no_config(component: &Component) -> anyhow::Result<String> {
    Ok(format!(
        "{} reads no configuration file",
        component.service().binary()
    ))
}

#[cfg(test)]
mod tests {
    use crabtalk_home::{Home, Service};

    use super::*;
    use crate::Shutdown;
    use crate::config::ConfigError;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(default)]
    #[allow(dead_code)]
    struct Probe {
        greeting: String,
    }

    fn component(dir: &std::path::Path) -> Component {
        let service = Service::new("probe", "kit-probe", "probe").unwrap();
        Component::new(Home::new(dir), service, Shutdown::new())
    }

    #[test]
    fn checks_say_what_the_service_would_do_with_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let probe = component(dir.path());
        let missing = required::<Probe>(&probe).unwrap_err();
        assert!(
            missing
                .downcast_ref::<ConfigError>()
                .is_some_and(|err| matches!(err, ConfigError::Missing { .. })),
            "{missing}"
        );
        assert!(optional::<Probe>(&probe).unwrap().contains("defaults"));
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(probe.config_path(), "greting = \"hi\"\n").unwrap();
        let typo = required::<Probe>(&probe).unwrap_err().to_string();
        assert!(
            typo.contains("probe.toml:1:1: unknown key `greting`"),
            "{typo}"
        );
        std::fs::write(probe.config_path(), "greeting = \"hi\"\n").unwrap();
        assert!(required::<Probe>(&probe).unwrap().contains("would take it"));
        assert!(no_config(&probe).unwrap().contains("kit-probe reads no"));
    }
}
