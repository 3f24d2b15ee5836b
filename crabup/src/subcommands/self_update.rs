//! `crabup self update`: this crabup replaced by the release's.
//!
//! The same download and checks as `pull` (`crate::release`), into the
//! file this crabup runs from. On Unix the new file is renamed over the
//! old one (this process keeps running the old one to the end); Windows
//! cannot replace a running executable, so the old one is first renamed
//! to `crabup.exe.old`, which the next self update removes.

use crate::cli::SelfAction;
use crate::context::Context;
use crate::names::FAMILY_VERSION;
use crate::release::{DistServer, Fetcher, install::aside_path, install_from_release};

pub(super) fn run(ctx: &Context, action: &SelfAction) -> anyhow::Result<()> {
    let SelfAction::Update { version } = action;
    let version = version
        .as_deref()
        .unwrap_or(FAMILY_VERSION)
        .trim_start_matches(['=', 'v']);
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map_err(|err| anyhow::anyhow!("cannot find crabup's own executable: {err}"))?;
    let _ = std::fs::remove_file(aside_path(&exe));
    let bin_dir = ctx.cargo.bin_dir();
    let in_bin_dir = exe.parent().is_some_and(|dir| {
        dir.canonicalize()
            .is_ok_and(|dir| Some(dir) == bin_dir.canonicalize().ok())
    });
    let server = DistServer::from_env();
    println!(
        "crabup: crabup {version} from {} replaces {} (crabup {FAMILY_VERSION})",
        server.url(version, ""),
        exe.display()
    );
    let installed = install_from_release(
        &Fetcher::new()?,
        &server,
        "crabup",
        version,
        &exe,
        in_bin_dir.then(|| ctx.cargo.home()),
        true,
    )?;
    println!(
        "crabup: crabup {} installed in {} (sha256 {} verified)",
        installed.version,
        installed.path.display(),
        &installed.archive_sha256[..16]
    );
    if version != FAMILY_VERSION {
        println!("`crabup update` brings the other programs to {version} too");
    }
    Ok(())
}
