//! `crabup pull`: `cargo install` by short name.

use crate::cargo::find_package;
use crate::cli::PullArgs;
use crate::context::Context;
use crate::names;

/// The `cargo install` arguments for one name.
pub fn install_args(name: &str, args: &PullArgs) -> anyhow::Result<Vec<String>> {
    let crate_name = names::crate_for(name);
    let mut cargo = vec!["install".to_owned()];
    match &args.path {
        Some(dir) => {
            let package = find_package(dir, crate_name)?;
            let package = std::path::absolute(&package).unwrap_or(package);
            cargo.push("--path".into());
            cargo.push(package.display().to_string());
            // The checkout's lock file, not whatever resolves today.
            cargo.push("--locked".into());
        }
        None => {
            cargo.push(crate_name.to_owned());
            if let Some(version) = &args.version {
                cargo.push("--version".into());
                cargo.push(version.clone());
            }
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

pub fn run(ctx: &Context, args: &PullArgs) -> anyhow::Result<()> {
    for name in &args.names {
        let cargo_args = install_args(name, args)?;
        println!("crabup: cargo {}", cargo_args.join(" "));
        ctx.cargo.run(&cargo_args)?;
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
