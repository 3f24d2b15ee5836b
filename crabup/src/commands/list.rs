//! `crabup list`: installed crabtalk binaries, from cargo's records. A
//! family crate whose version differs from crabup's own is marked: it may
//! speak another protocol than the rest.

use crate::context::Context;
use crate::names::{self, FAMILY_VERSION};

pub(super) fn run(ctx: &Context) -> anyhow::Result<()> {
    let installed: Vec<_> = ctx
        .cargo
        .installed()?
        .into_iter()
        .filter(|i| names::is_crabtalk_crate(&i.name))
        .collect();
    if installed.is_empty() {
        println!(
            "no crabtalk binaries installed in {} (try `crabup pull daemon`)",
            ctx.cargo.home().display()
        );
        return Ok(());
    }
    println!(
        "{:<10} {:<20} {:<10} {:<10} FEATURES",
        "NAME", "CRATE", "VERSION", "SOURCE"
    );
    for crate_ in installed {
        let short = names::short_for_crate(&crate_.name).unwrap_or("-");
        let source = if crate_.path_source().is_some() {
            "path"
        } else if crate_.git_source().is_some() {
            "git"
        } else {
            "crates.io"
        };
        let features = if crate_.all_features {
            "all".to_owned()
        } else if crate_.features.is_empty() {
            "-".to_owned()
        } else {
            crate_.features.join(",")
        };
        let version =
            if names::is_family_crate(&crate_.name) && !names::matches_family(&crate_.version) {
                format!("{} (crabup is {FAMILY_VERSION})", crate_.version)
            } else {
                crate_.version.clone()
            };
        println!(
            "{short:<10} {:<20} {version:<10} {source:<10} {features}",
            crate_.name
        );
    }
    Ok(())
}
