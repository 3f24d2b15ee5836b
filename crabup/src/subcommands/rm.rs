//! `crabup rm`: stop and unregister the service, then remove the binary
//! (crabup's own install) or `cargo uninstall` it (cargo's).

use crabtalk_command::manager::{Stopped, Uninstalled};

use anyhow::Context as _;

use crate::cargo::exe;
use crate::cli::RmArgs;
use crate::context::Context;
use crate::installs::Installs;
use crate::names::{self, ThirdParty};

pub(super) fn run(ctx: &Context, args: &RmArgs) -> anyhow::Result<()> {
    for name in &args.names {
        names::check_name(name, ThirdParty::from_flag(args.third_party))?;
    }
    for name in &args.names {
        let short = names::short_for_crate(name).unwrap_or(name);
        if let Ok(service) = names::service_for(short) {
            let manager = ctx.manager()?;
            let spec = ctx.spec(&service);
            if let Stopped::Stopped { pid } = manager.stop(&spec)? {
                println!(
                    "{short} stopped (pid {})",
                    pid.map_or("?".into(), |p| p.to_string())
                );
            }
            if let Uninstalled::Removed(path) = manager.uninstall(&spec)? {
                println!("removed {}", path.display());
            }
        }
        // A binary crabup installed is removed by crabup; cargo's by cargo.
        let binary = names::binary_for(name);
        let path = ctx.cargo.bin_dir().join(exe(binary));
        let ours = Installs::load(ctx.cargo.home())?;
        if ours.current(binary, &path).is_some() {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            Installs::forget(ctx.cargo.home(), binary)?;
            println!("removed {}", path.display());
            continue;
        }
        let crate_name = names::crate_for(name);
        println!("crabup: cargo uninstall {crate_name}");
        ctx.cargo
            .run(&["uninstall".into(), crate_name.to_owned()])?;
        Installs::forget(ctx.cargo.home(), binary)?;
    }
    Ok(())
}
