//! `crabup up`: install (if needed) and start the daemon and every
//! configured component.

use crabtalk_command::Service;

use crate::cli::{PullArgs, ServiceAction, UpArgs};
use crate::context::Context;
use crate::daemon_config::{self, ConfigVerdict};
use crate::names;

/// The services `up` brings up: the daemon, then each component that has a
/// config file in `config/` or is installed already.
pub fn targets(ctx: &Context) -> Vec<&'static str> {
    names::TABLE
        .iter()
        .filter(|known| known.service)
        .filter(|known| {
            known.short == "daemon"
                || known.config.is_some_and(|file| {
                    ctx.home
                        .component_config(file)
                        .is_ok_and(|path| path.is_file())
                })
                || names::service_for(known.short)
                    .is_ok_and(|service: Service| ctx.binary(&service).is_some())
        })
        .map(|known| known.short)
        .collect()
}

pub fn run(ctx: &Context, args: &UpArgs) -> anyhow::Result<()> {
    // The daemon's configuration first, before anything is started: a
    // running daemon would otherwise be reported "already running" over a
    // configuration it would refuse on its next restart. (With --path the
    // fresh binary checks it, in its restart.)
    if args.path.is_none()
        && let Some(binary) = ctx.binary(&Service::daemon())
        && let ConfigVerdict::Refused(problems) = daemon_config::check(&binary, &ctx.home)
    {
        anyhow::bail!(
            "{problems}\nNothing was started or restarted: crabtalkd would refuse this configuration (a running daemon keeps running as it is). Fix the files above (`crabtalkd check` checks them again), then run `crabup up` again."
        );
    }
    let mut failures = Vec::new();
    for name in targets(ctx) {
        let service = names::service_for(name)?;
        if args.path.is_some() || ctx.binary(&service).is_none() {
            let pull = PullArgs {
                names: vec![name.to_owned()],
                version: None,
                path: args.path.clone(),
                git: None,
                rev: None,
                features: Vec::new(),
            };
            if let Err(err) = super::pull::run(ctx, &pull) {
                eprintln!("crabup: {name}: {err:#}");
                failures.push(name);
                continue;
            }
        }
        let action = if args.path.is_some() {
            // A fresh binary: a running service must pick it up.
            ServiceAction::Restart
        } else {
            ServiceAction::Start
        };
        if let Err(err) = super::service::run(ctx, name, &action) {
            eprintln!("crabup: {name}: {err:#}");
            failures.push(name);
        }
    }
    if !failures.is_empty() {
        anyhow::bail!("not up: {}", failures.join(", "));
    }
    Ok(())
}
