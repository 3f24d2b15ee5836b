//! `crabup pull`: `cargo install` by short name.
//!
//! The crates of the family (`crabtalkd`, the components, the TUI, crabup
//! itself) are installed at crabup's own version: the registry's names are
//! shared with other crabtalk releases, and a daemon of another release
//! speaks another protocol and reads another command line. `--version`
//! overrides with a warning; `--path` and `--git` install from source.

use crate::cargo::find_package;
use crate::cli::PullArgs;
use crate::context::Context;
use crate::names::{self, FAMILY_VERSION, ThirdParty};

/// The `cargo install` arguments for one name.
pub(super) fn install_args(name: &str, args: &PullArgs) -> anyhow::Result<Vec<String>> {
    let crate_name = names::crate_for(name);
    let mut cargo = vec!["install".to_owned()];
    if let Some(dir) = &args.path {
        let package = find_package(dir, crate_name)?;
        let package = std::path::absolute(&package).unwrap_or(package);
        cargo.push("--path".into());
        cargo.push(package.display().to_string());
        // The checkout's lock file, not whatever resolves today.
        cargo.push("--locked".into());
    } else if let Some(url) = &args.git {
        cargo.extend(["--git".into(), url.clone()]);
        if let Some(rev) = &args.rev {
            cargo.extend(["--rev".into(), rev.clone()]);
        }
        cargo.extend([crate_name.to_owned(), "--locked".into()]);
    } else {
        cargo.push(crate_name.to_owned());
        match &args.version {
            Some(version) => cargo.extend(["--version".into(), version.clone()]),
            None if names::is_family_crate(crate_name) => {
                cargo.extend(["--version".into(), format!("={FAMILY_VERSION}")]);
            }
            None => {}
        }
    }
    let features: Vec<&str> = args
        .features
        .iter()
        .flat_map(|f| f.split([',', ' ']))
        .filter(|f| !f.is_empty())
        .collect();
    if !features.is_empty() {
        cargo.push("--features".into());
        cargo.push(features.join(","));
    }
    Ok(cargo)
}

/// The warning for a family crate asked for at another version, if it is.
pub(super) fn mismatch_warning(name: &str, args: &PullArgs) -> Option<String> {
    let crate_name = names::crate_for(name);
    let version = args.version.as_deref()?;
    if !names::is_family_crate(crate_name) || names::matches_family(version) {
        return None;
    }
    Some(format!(
        "warning: installing {crate_name} {version}, not {FAMILY_VERSION} (crabup's own version): \
         a crabtalk binary of another release may speak another protocol or read another \
         command line than this crabup's service units give it; --version asked for it"
    ))
}

/// What to tell someone whose registry install of a family crate failed
/// because its version is not published.
fn unpublished_hint(crate_name: &str) -> String {
    format!(
        "{crate_name} {FAMILY_VERSION} (the version that matches this crabup) is not published \
         on crates.io. Install the family from a checkout: `crabup up --path <checkout>` (or \
         `crabup pull <name> --path <checkout>`), or from a repository: `crabup pull <name> \
         --git <url> [--rev <rev>]`. A crate of the same name at another version is another \
         crabtalk release; `--version` installs one anyway."
    )
}

/// A family crate whose matching version the registry does not have; the
/// message says how to install from a checkout or a repository.
#[derive(Debug)]
pub(super) struct Unpublished(pub String);

impl std::fmt::Display for Unpublished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unpublished {}

pub(super) fn run(ctx: &Context, args: &PullArgs) -> anyhow::Result<()> {
    // Every name is checked before anything is installed.
    for name in &args.names {
        names::check_name(name, ThirdParty::from_flag(args.third_party))?;
    }
    for name in &args.names {
        install(ctx, name, args, &[])?;
        if let Ok(service) = names::service_for(name)
            && ctx.manager()?.status(&ctx.spec(&service))?.is_running()
        {
            println!(
                "{} is running the previous binary; `crabup {} restart` switches to the new one",
                service.name(),
                service.name()
            );
        }
    }
    Ok(())
}

/// `cargo install` of one name, with `extra` cargo arguments (`up` gives
/// every install one `--target-dir`). A family crate missing from the
/// registry fails with [`Unpublished`].
pub(super) fn install(
    ctx: &Context,
    name: &str,
    args: &PullArgs,
    extra: &[String],
) -> anyhow::Result<()> {
    let mut cargo_args = install_args(name, args)?;
    cargo_args.extend(extra.iter().cloned());
    if let Some(warning) = mismatch_warning(name, args) {
        eprintln!("crabup: {warning}");
    }
    println!("crabup: cargo {}", cargo_args.join(" "));
    let crate_name = names::crate_for(name);
    let from_registry = args.path.is_none() && args.git.is_none();
    let outcome = ctx.cargo.run_watching(&cargo_args)?;
    if !outcome.success {
        if from_registry && names::is_family_crate(crate_name) && outcome.version_missing() {
            return Err(Unpublished(unpublished_hint(crate_name)).into());
        }
        anyhow::bail!(
            "`cargo {}` failed ({})",
            cargo_args.join(" "),
            outcome.status
        );
    }
    Ok(())
}
