//! `crabup update`: reinstall every installed crabtalk crate, keeping how
//! it was installed (features, local path or git source). Family crates
//! from the registry are brought to crabup's own version, never to
//! whatever the registry calls latest (see `pull`).

use crate::cargo::Installed;
use crate::context::Context;
use crate::names::{self, FAMILY_VERSION};

/// The `cargo install` arguments that update `installed` in place.
pub(super) fn update_args(installed: &Installed) -> Vec<String> {
    let mut args = vec!["install".to_owned()];
    if let Some(path) = installed.path_source() {
        args.extend([
            "--path".into(),
            path.display().to_string(),
            "--locked".into(),
        ]);
    } else if let Some(git) = installed.git_source() {
        args.extend(["--git".into(), git.to_owned(), installed.name.clone()]);
    } else {
        args.push(installed.name.clone());
        if names::is_family_crate(&installed.name) {
            args.extend(["--version".into(), format!("={FAMILY_VERSION}")]);
        }
    }
    if installed.all_features {
        args.push("--all-features".into());
    } else if !installed.features.is_empty() {
        args.extend(["--features".into(), installed.features.join(",")]);
    }
    if installed.no_default_features {
        args.push("--no-default-features".into());
    }
    args
}

pub(super) fn run(ctx: &Context) -> anyhow::Result<()> {
    let installed: Vec<Installed> = ctx
        .cargo
        .installed()?
        .into_iter()
        .filter(|i| names::is_crabtalk_crate(&i.name))
        .collect();
    if installed.is_empty() {
        println!(
            "no crabtalk crates are installed in {}",
            ctx.cargo.home().display()
        );
        return Ok(());
    }
    for crate_ in &installed {
        if names::is_family_crate(&crate_.name)
            && !names::matches_family(&crate_.version)
            && crate_.path_source().is_none()
            && crate_.git_source().is_none()
        {
            println!(
                "crabup: {} {} differs from crabup's version {FAMILY_VERSION}; installing {FAMILY_VERSION}",
                crate_.name, crate_.version
            );
        }
        let args = update_args(crate_);
        println!("crabup: cargo {}", args.join(" "));
        ctx.cargo.run(&args)?;
    }
    println!("restart running services to use the new binaries (`crabup ps` lists them)");
    Ok(())
}
