//! `crabup pull`: a family program prebuilt from the release, or built
//! with `cargo install`.
//!
//! The family (`crabtalkd`, the components, the TUI, crabup itself) is
//! installed at crabup's own version: the registry's names are shared with
//! other crabtalk releases, and a daemon of another release speaks another
//! protocol and reads another command line. By default the release's
//! archive for this platform is downloaded and checked (`crate::release`,
//! RFC 0016); a release without one for this platform is said, and cargo
//! builds it instead, as `--from-source` asks. `--version` overrides the
//! version with a warning; `--path` and `--git` build from source.

use crate::cargo::{exe, find_package};
use crate::cli::PullArgs;
use crate::context::Context;
use crate::installs::Installs;
use crate::names::{self, FAMILY_VERSION, ThirdParty};
use crate::release::{DistServer, Fetcher, PullError, install_from_release};

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
    let mut releases = Releases::default();
    for name in &args.names {
        install(ctx, &mut releases, name, args, &[])?;
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
    path_note(ctx);
    Ok(())
}

/// The release client of one command, made when first needed.
#[derive(Default)]
pub(super) struct Releases {
    fetcher: Option<Fetcher>,
}

impl Releases {
    pub(super) fn fetcher(&mut self) -> anyhow::Result<&Fetcher> {
        if self.fetcher.is_none() {
            self.fetcher = Some(Fetcher::new()?);
        }
        Ok(self.fetcher.as_ref().expect("just made"))
    }
}

/// Whether `name` comes from the release rather than cargo: a family
/// program, asked for without a source, features or `--from-source`.
fn from_release(name: &str, args: &PullArgs) -> bool {
    names::is_family_crate(names::crate_for(name))
        && args.path.is_none()
        && args.git.is_none()
        && !args.from_source
        && args.features.is_empty()
}

/// Installs one name: from the release when it comes from there (and cargo
/// when the release has nothing for this platform), else with `cargo
/// install` and `extra` cargo arguments. A family crate missing from the
/// registry fails with [`Unpublished`].
pub(super) fn install(
    ctx: &Context,
    releases: &mut Releases,
    name: &str,
    args: &PullArgs,
    extra: &[String],
) -> anyhow::Result<()> {
    if let Some(warning) = mismatch_warning(name, args) {
        eprintln!("crabup: {warning}");
    }
    if from_release(name, args) {
        let package = names::crate_for(name);
        let version = args.version.as_deref().unwrap_or(FAMILY_VERSION);
        let version = version.trim_start_matches(['=', 'v']);
        let dest = ctx.cargo.bin_dir().join(exe(names::binary_for(name)));
        let server = DistServer::from_env();
        println!(
            "crabup: {package} {version} from {}",
            server.url(version, "")
        );
        match install_from_release(
            releases.fetcher()?,
            &server,
            package,
            version,
            &dest,
            Some(ctx.cargo.home()),
            is_this_crabup(&dest),
        ) {
            Ok(installed) => {
                println!(
                    "crabup: {package} {} installed in {} (sha256 {} verified)",
                    installed.version,
                    installed.path.display(),
                    &installed.archive_sha256[..16]
                );
                return Ok(());
            }
            Err(err @ (PullError::NoArtifact { .. } | PullError::NoRelease { .. })) => {
                if ctx.cargo.program().is_none() {
                    anyhow::bail!(
                        "{err}, and building it from source needs cargo, which was not found on \
                         PATH: install Rust from https://rustup.rs and try again"
                    );
                }
                eprintln!("crabup: {err}; building it from source with cargo instead");
            }
            Err(err) => return Err(err.into()),
        }
    }
    cargo_install(ctx, name, args, extra)
}

/// `cargo install` of one name, with `extra` cargo arguments (`up` gives
/// every install one `--target-dir`).
fn cargo_install(
    ctx: &Context,
    name: &str,
    args: &PullArgs,
    extra: &[String],
) -> anyhow::Result<()> {
    let mut cargo_args = install_args(name, args)?;
    cargo_args.extend(extra.iter().cloned());
    // A binary crabup put there is not cargo's: cargo would refuse to
    // overwrite it without --force.
    let binary = names::binary_for(name);
    let ours = Installs::load(ctx.cargo.home())?
        .binaries
        .contains_key(binary);
    if ours && ctx.cargo.bin_dir().join(exe(binary)).is_file() {
        cargo_args.push("--force".into());
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
    if ours {
        Installs::forget(ctx.cargo.home(), binary)?;
    }
    Ok(())
}

/// Whether `path` is the crabup running now (`pull crabup` from
/// `$CARGO_HOME/bin`): Windows must move it aside to replace it.
fn is_this_crabup(path: &std::path::Path) -> bool {
    let this = std::env::current_exe().and_then(|exe| exe.canonicalize());
    this.is_ok_and(|this| path.canonicalize().is_ok_and(|path| path == this))
}

/// Says once how to run the installed binaries by name, when their folder
/// is not on PATH.
pub(super) fn path_note(ctx: &Context) {
    let bin = ctx.cargo.bin_dir();
    if on_path(&bin) {
        return;
    }
    let shown = bin.display();
    if cfg!(windows) {
        println!(
            "note: {shown} is not on PATH; add it (Settings → Environment Variables → Path) to run the binaries by name"
        );
    } else {
        println!(
            "note: {shown} is not on PATH; to run the binaries by name, add to your shell's profile:\n      export PATH=\"{shown}:$PATH\""
        );
    }
}

/// Whether `dir` is on this PATH.
pub(super) fn on_path(dir: &std::path::Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|entry| entry == dir))
}
