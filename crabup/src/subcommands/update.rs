//! `crabup update`: every installed crabtalk binary to crabup's own
//! version, each the way it was installed — from the release (crabup's
//! record says so), rebuilt from its checkout (an `up --path` build), or
//! reinstalled by cargo keeping its features and source (cargo's record).
//! Family crates from the registry are brought to crabup's own version,
//! never to whatever the registry calls latest (see `pull`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::build;
use crate::cargo::{Installed, exe};
use crate::context::Context;
use crate::installs::Installs;
use crate::names::{self, FAMILY_VERSION};
use crate::release::{DistServer, Fetcher, install_from_release};

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
    let ours = Installs::load(ctx.cargo.home())?;
    let mut handled: BTreeSet<String> = BTreeSet::new();
    let mut fetcher: Option<Fetcher> = None;
    let mut checkouts: BTreeMap<PathBuf, Vec<(String, String)>> = BTreeMap::new();
    for (binary, record) in &ours.binaries {
        let path = ctx.cargo.bin_dir().join(exe(binary));
        if ours.current(binary, &path).is_none() {
            // Replaced since (cargo install, by hand) or gone: not ours to update.
            continue;
        }
        handled.insert(binary.clone());
        if let Some(checkout) = record.checkout() {
            checkouts
                .entry(checkout)
                .or_default()
                .push((binary.clone(), record.package.clone()));
            continue;
        }
        if record.version == FAMILY_VERSION {
            println!("crabup: {binary} {FAMILY_VERSION} is crabup's version already");
            continue;
        }
        println!(
            "crabup: {binary} {} differs from crabup's version {FAMILY_VERSION}; installing {FAMILY_VERSION} from the release",
            record.version
        );
        if fetcher.is_none() {
            fetcher = Some(Fetcher::new()?);
        }
        let installed = install_from_release(
            fetcher.as_ref().expect("just made"),
            &DistServer::from_env(),
            &record.package,
            FAMILY_VERSION,
            &path,
            Some(ctx.cargo.home()),
            false,
        )?;
        println!(
            "crabup: {binary} {} installed in {}",
            installed.version,
            installed.path.display()
        );
    }
    for (checkout, binaries) in &checkouts {
        let root = build::workspace_root(checkout);
        let built = build::build_workspace(&ctx.cargo, &root)?;
        for (binary, package) in binaries {
            let one = built.binaries.get(binary).ok_or_else(|| {
                anyhow::anyhow!("the build of {} made no {binary}", root.display())
            })?;
            let path = build::install_built(&ctx.cargo, binary, package, one, &root)?;
            println!(
                "crabup: {binary} {} rebuilt from {} into {}",
                one.version,
                root.display(),
                path.display()
            );
        }
    }

    let installed: Vec<Installed> = ctx
        .cargo
        .installed()?
        .into_iter()
        .filter(|i| names::is_crabtalk_crate(&i.name))
        .filter(|i| !i.bins.iter().all(|bin| handled.contains(bin)))
        .collect();
    if installed.is_empty() && handled.is_empty() {
        println!(
            "no crabtalk binaries are installed in {}",
            ctx.cargo.bin_dir().display()
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
