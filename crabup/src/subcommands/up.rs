//! `crabup up`: the family in one command.
//!
//! It installs what a person uses next — the services it starts (the
//! daemon, cron and search, and telegram once `config/telegram.toml`
//! exists, since the gateway cannot run without a bot token), the terminal
//! client `crabtalk-tui`, and crabup itself — then starts the services and
//! ends with the `ps` table and the command to type next.
//!
//! From a checkout (`--path`) everything is built in one `cargo build
//! --release --workspace --bins` (`crate::build`, RFC 0017) and installed
//! from there. Without `--path` only what is missing is installed, prebuilt
//! from the release at crabup's own version (`pull`); when the release has
//! no archive for this platform, cargo builds it, and when the registry
//! does not have it either, `up` stops before starting anything and says
//! how to install from a checkout.

use std::path::Path;
use std::time::{Duration, Instant};

use crabtalk_command::Service;

use super::pull::{self, Releases, Unpublished};
use crate::build;
use crate::cli::{PullArgs, ServiceAction, UpArgs};
use crate::config_check::{self, ConfigVerdict};
use crate::context::Context;
use crate::names;

/// What `up` installs besides the services: the client and crabup.
pub(super) const TOOLS: [&str; 2] = ["crabup", "tui"];

/// The services `up` starts: the daemon, cron and search (they run
/// without any config), telegram when its config file exists, and any
/// other component that has its config file in `config/`.
pub(super) fn services(ctx: &Context) -> Vec<&'static str> {
    names::TABLE
        .iter()
        .filter(|known| known.service)
        .filter(|known| match known.short {
            "daemon" | "cron" | "search" => true,
            _ => known.config.is_some_and(|file| {
                ctx.home
                    .component_config(file)
                    .is_ok_and(|path| path.is_file())
            }),
        })
        .map(|known| known.short)
        .collect()
}

/// Everything `up` installs, in order: crabup, the client, the services.
pub(super) fn installs(ctx: &Context) -> Vec<&'static str> {
    let mut all: Vec<&'static str> = TOOLS.to_vec();
    all.extend(services(ctx));
    all
}

/// Whether `name` (a service or a tool) is installed.
fn installed(ctx: &Context, name: &str) -> bool {
    let binary = names::lookup(name).map_or(name, |known| known.binary);
    ctx.cargo.find_binary(binary).is_some()
}

pub(super) fn run(ctx: &Context, args: &UpArgs) -> anyhow::Result<()> {
    // The daemon's configuration first, before anything is started: a
    // running daemon would otherwise be reported "already running" over a
    // configuration it would refuse on its next restart. (With --path the
    // fresh binary checks it, in its restart.)
    if args.path.is_none()
        && let Some(binary) = ctx.binary(&Service::daemon())
        && let ConfigVerdict::Refused(problems) =
            config_check::check(&Service::daemon(), &binary, &ctx.home)
    {
        anyhow::bail!(
            "{problems}\nNothing was started or restarted: crabtalkd would refuse this configuration (a running daemon keeps running as it is). Fix the files above (`crabtalkd check` checks them again), then run `crabup up` again."
        );
    }
    let mut failures = install_all(ctx, args)?;
    for name in services(ctx) {
        if failures.contains(&name) {
            continue;
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
    println!();
    super::ps::print_table(ctx)?;
    println!();
    next_steps(ctx);
    if !failures.is_empty() {
        anyhow::bail!("not up: {}", failures.join(", "));
    }
    Ok(())
}

/// Installs what needs installing, saying how far along it is; the names
/// whose install failed. A family crate the registry lacks stops it all.
fn install_all(ctx: &Context, args: &UpArgs) -> anyhow::Result<Vec<&'static str>> {
    let todo: Vec<&'static str> = installs(ctx)
        .into_iter()
        .filter(|name| args.path.is_some() || !installed(ctx, name))
        .collect();
    if todo.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(checkout) = &args.path {
        return build_and_install(ctx, checkout, &todo);
    }
    println!("crabup: installing {} ({})", todo.len(), todo.join(", "));
    let mut failures = Vec::new();
    let mut releases = Releases::default();
    let started = Instant::now();
    for (n, name) in todo.iter().enumerate() {
        let crate_name = names::crate_for(name);
        println!("crabup: [{}/{}] {crate_name}", n + 1, todo.len());
        let pull = PullArgs {
            names: vec![(*name).to_owned()],
            version: None,
            path: None,
            git: None,
            rev: None,
            features: Vec::new(),
            third_party: false,
            from_source: false,
        };
        let one = Instant::now();
        match pull::install(ctx, &mut releases, name, &pull, &[]) {
            Ok(()) => println!(
                "crabup: [{}/{}] {crate_name} installed in {} ({} so far)",
                n + 1,
                todo.len(),
                minutes(one.elapsed()),
                minutes(started.elapsed())
            ),
            Err(err) if err.is::<Unpublished>() => {
                anyhow::bail!("{err}\nNothing was started.");
            }
            Err(err) => {
                eprintln!("crabup: {name}: {err:#}");
                failures.push(*name);
            }
        }
    }
    println!(
        "crabup: installed {} of {} in {}",
        todo.len() - failures.len(),
        todo.len(),
        minutes(started.elapsed())
    );
    Ok(failures)
}

/// `--path`: one build of the checkout's workspace, then each program
/// installed from it.
fn build_and_install(
    ctx: &Context,
    checkout: &Path,
    todo: &[&'static str],
) -> anyhow::Result<Vec<&'static str>> {
    let root = build::workspace_root(checkout);
    println!(
        "crabup: building {} ({}) from {} in one cargo build",
        todo.len(),
        todo.join(", "),
        root.display()
    );
    let started = Instant::now();
    let built = build::build_workspace(&ctx.cargo, &root)?;
    println!("crabup: built in {}", minutes(started.elapsed()));
    let mut failures = Vec::new();
    for name in todo {
        let binary = names::binary_for(name);
        let installed = built
            .binaries
            .get(binary)
            .ok_or_else(|| anyhow::anyhow!("the build of {} made no {binary}", root.display()))
            .and_then(|one| {
                build::install_built(&ctx.cargo, binary, names::crate_for(name), one, &root)
            });
        match installed {
            Ok(path) => println!("crabup: {binary} installed in {}", path.display()),
            Err(err) => {
                eprintln!("crabup: {name}: {err:#}");
                failures.push(*name);
            }
        }
    }
    println!(
        "crabup: installed {} of {} in {}",
        todo.len() - failures.len(),
        todo.len(),
        minutes(started.elapsed())
    );
    Ok(failures)
}

/// What to type next: the client by name when PATH finds it, else by the
/// path where it really is (never a path that does not exist).
fn next_steps(ctx: &Context) {
    let on_path = |dir: &Path| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|entry| entry == dir))
    };
    let tui = match ctx.cargo.find_binary("crabtalk-tui") {
        Some(path) if path.parent().is_some_and(on_path) => "crabtalk-tui".to_owned(),
        Some(path) => path.display().to_string(),
        None => "crabtalk-tui".to_owned(),
    };
    let width = tui.len().max("crabup daemon logs -f".len());
    if ctx.cargo.find_binary("crabtalk-tui").is_some() {
        println!("Next: {tui:<width$}  # chat (one prompt: {tui} -p \"hello\")");
    } else {
        println!(
            "Next: {:<width$}  # the chat client is not installed: crabup pull tui",
            "crabup pull tui"
        );
    }
    println!("      {:<width$}  # what runs", "crabup ps");
    println!(
        "      {:<width$}  # what the daemon does",
        "crabup daemon logs -f"
    );
    let bin = ctx.cargo.bin_dir();
    let installed_there = names::TABLE
        .iter()
        .any(|known| bin.join(crate::cargo::exe(known.binary)).is_file());
    if installed_there {
        pull::path_note(ctx);
    }
}

/// `1m02s`, or `4.2s` under a minute.
fn minutes(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    if secs < 60 {
        format!("{:.1}s", elapsed.as_secs_f64())
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_minutes() {
        assert_eq!(minutes(Duration::from_millis(4200)), "4.2s");
        assert_eq!(minutes(Duration::from_secs(62)), "1m02s");
    }
}
