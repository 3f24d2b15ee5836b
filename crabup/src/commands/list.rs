//! `crabup list`: installed crabtalk binaries, from cargo's records.

use crate::context::Context;
use crate::names;

pub fn run(ctx: &Context) -> anyhow::Result<()> {
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
        println!(
            "{short:<10} {:<20} {:<10} {source:<10} {features}",
            crate_.name, crate_.version
        );
    }
    Ok(())
}
