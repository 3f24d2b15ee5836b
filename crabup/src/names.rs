//! The name table: short names people type, and what they stand for.
//!
//! `crabup pull daemon` installs the crate `crabtalkd`; `crabup search
//! start` runs `crabtalk-search` as the service `ai.crabtalk.search`. A
//! name not in the table is refused with the family name it most likely
//! meant ([`check_name`]): `crabup pull deamon` must not `cargo install` a
//! stranger's crate, whose build script would run as the user. Only with
//! `--third-party` ([`ThirdParty::Allowed`]) does it pass through to cargo
//! verbatim for `pull` and `rm`, and, for service commands, name the binary
//! `crabtalk-<name>` (a third-party component that follows the contract).

use crabtalk_command::Service;

/// One first-party binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Known {
    pub short: &'static str,
    pub crate_name: &'static str,
    pub binary: &'static str,
    pub description: &'static str,
    /// Whether it runs as a service (the TUI does not).
    pub service: bool,
    /// Its config file in `$CRABTALK_HOME/config/`, if it has one: its
    /// presence makes `crabup up` start the component.
    pub config: Option<&'static str>,
}

pub(crate) const TABLE: &[Known] = &[
    Known {
        short: "daemon",
        crate_name: "crabtalkd",
        binary: "crabtalkd",
        description: "crabtalk daemon",
        service: true,
        config: None,
    },
    Known {
        short: "tui",
        crate_name: "crabtalk-tui",
        binary: "crabtalk-tui",
        description: "crabtalk terminal client",
        service: false,
        config: None,
    },
    Known {
        short: "telegram",
        crate_name: "crabtalk-telegram",
        binary: "crabtalk-telegram",
        description: "crabtalk Telegram gateway",
        service: true,
        config: Some("telegram.toml"),
    },
    Known {
        short: "search",
        crate_name: "crabtalk-search",
        binary: "crabtalk-search",
        description: "crabtalk meta-search service",
        service: true,
        config: Some("search.toml"),
    },
    Known {
        short: "cron",
        crate_name: "crabtalk-cron",
        binary: "crabtalk-cron",
        description: "crabtalk scheduler",
        service: true,
        config: Some("crons.toml"),
    },
];

/// The known entry for a short name or crate name.
pub(crate) fn lookup(name: &str) -> Option<&'static Known> {
    TABLE
        .iter()
        .find(|known| known.short == name || known.crate_name == name)
}

/// Whether names outside the family may be used: only when the user said
/// so with `--third-party`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThirdParty {
    Refused,
    Allowed,
}

impl ThirdParty {
    /// `--third-party` given or not.
    pub(crate) fn from_flag(given: bool) -> Self {
        if given { Self::Allowed } else { Self::Refused }
    }
}

/// Refuses `name` unless it is one of the family's (a short name, a crate
/// name, or `crabup`) or third parties are allowed; the refusal names the
/// family program it most likely meant.
pub(crate) fn check_name(name: &str, third_party: ThirdParty) -> anyhow::Result<()> {
    if lookup(name).is_some() || name == "crabup" || third_party == ThirdParty::Allowed {
        return Ok(());
    }
    let mut known: Vec<&str> = TABLE.iter().map(|known| known.short).collect();
    known.extend(TABLE.iter().map(|known| known.crate_name));
    known.push("crabup");
    let hint = crabtalk_kit::closest(name, &known)
        .map(|likely| format!(" Did you mean `{likely}`?"))
        .unwrap_or_default();
    let family: Vec<&str> = TABLE.iter().map(|known| known.short).collect();
    anyhow::bail!(
        "`{name}` is not a crabtalk program.{hint} The family is: {}. \
         A name outside it is a crate or component someone else publishes: installing one runs \
         its build script as you, so crabup does it only when you add --third-party.",
        family.join(", ")
    )
}

/// The crate `cargo install` gets for `name`.
pub(crate) fn crate_for(name: &str) -> &str {
    lookup(name).map_or(name, |known| known.crate_name)
}

/// The binary of `name` (a short name, a crate name, `crabup`, or a
/// third-party crate named like its binary).
pub(crate) fn binary_for(name: &str) -> &str {
    lookup(name).map_or(name, |known| known.binary)
}

/// The short name of an installed crate, if it is one of ours.
pub(crate) fn short_for_crate(crate_name: &str) -> Option<&'static str> {
    TABLE
        .iter()
        .find(|known| known.crate_name == crate_name)
        .map(|known| known.short)
}

/// The version of the crabtalk family this crabup belongs to. The family
/// speaks one protocol and one unit format, so what crabup installs from a
/// registry is this version unless the user asks for another.
pub(crate) const FAMILY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Whether a crate is one of this family's own (the table's crates and
/// crabup itself): those are installed at [`FAMILY_VERSION`].
pub(crate) fn is_family_crate(crate_name: &str) -> bool {
    crate_name == "crabup" || TABLE.iter().any(|known| known.crate_name == crate_name)
}

/// Whether `version` is the family's, for an installed family crate.
pub(crate) fn matches_family(version: &str) -> bool {
    version.trim().trim_start_matches('=') == FAMILY_VERSION
}

/// Whether a crate looks like part of crabtalk (for `list` and `update`).
pub(crate) fn is_crabtalk_crate(crate_name: &str) -> bool {
    crate_name.starts_with("crabtalk") || crate_name == "crabup"
}

/// The service for a short name: first-party from the table, anything else
/// as the third-party component `crabtalk-<name>`.
pub(crate) fn service_for(name: &str) -> anyhow::Result<Service> {
    match lookup(name) {
        Some(known) if !known.service => anyhow::bail!(
            "{} is not a service: it is the {}; run `{}` directly",
            known.short,
            known.description,
            known.binary
        ),
        Some(known) if known.short == "daemon" => Ok(Service::daemon()),
        Some(known) => Ok(Service::new(known.short, known.binary, known.description)?),
        None => {
            let binary = format!("crabtalk-{name}");
            Service::new(name, &binary, &format!("crabtalk component {name}")).map_err(|err| {
                anyhow::anyhow!("{err}; a service name becomes a file name under $CRABTALK_HOME")
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outside_the_family_need_the_flag_and_typos_get_a_suggestion() {
        for ours in [
            "daemon",
            "crabtalkd",
            "tui",
            "crabtalk-search",
            "cron",
            "crabup",
        ] {
            check_name(ours, ThirdParty::Refused).unwrap();
        }
        let err = check_name("deamon", ThirdParty::Refused)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Did you mean `daemon`?"), "{err}");
        assert!(err.contains("--third-party"), "{err}");
        let err = check_name("crabtalk-serch", ThirdParty::Refused)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Did you mean `crabtalk-search`?"), "{err}");
        let err = check_name("ripgrep", ThirdParty::Refused)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("Did you mean"), "{err}");
        check_name("ripgrep", ThirdParty::Allowed).unwrap();
    }

    #[test]
    fn short_names_resolve_and_unknown_names_pass_through() {
        assert_eq!(crate_for("daemon"), "crabtalkd");
        assert_eq!(crate_for("tui"), "crabtalk-tui");
        assert_eq!(crate_for("crabtalk-search"), "crabtalk-search");
        assert_eq!(crate_for("some-gateway"), "some-gateway");
        assert_eq!(short_for_crate("crabtalkd"), Some("daemon"));
        assert_eq!(service_for("daemon").unwrap().label(), "ai.crabtalk.daemon");
        assert_eq!(service_for("echo").unwrap().binary(), "crabtalk-echo");
        let tui = service_for("tui").unwrap_err().to_string();
        assert!(tui.contains("not a service"), "{tui}");
        assert!(service_for("../x").is_err());
    }
}
