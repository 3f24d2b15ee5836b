//! Installing prebuilt binaries from a release (RFC 0016).
//!
//! A release is `v<version>/` on the release server: GitHub's release
//! downloads of the project's repository, or `CRABUP_DIST_SERVER` (as
//! `RUSTUP_DIST_SERVER` is for rustup). For one program crabup reads
//! `dist-manifest.json`, picks the archive of the target it was itself
//! built for, reads the archive's `.sha256`, downloads the archive (a
//! progress bar on a terminal), and checks its SHA-256 against both before
//! anything is written beside the installed binary. Then the binary is
//! taken out of the archive (bounded: `crabtalk_dist::unpack`) into a temp
//! file beside its place, run once with `--version` (a binary this machine
//! cannot run never replaces one it can), and renamed over the old one: a
//! running service keeps the old file until it restarts. The install is
//! recorded (`crate::installs`).
//!
//! Every failure leaves the installed binary as it was and says what
//! failed: the server unreachable or silent, a 404, a download cut short,
//! a checksum that does not match, no archive for this platform
//! ([`PullError::NoArtifact`]) or no release of this version at all
//! ([`PullError::NoRelease`]); on those two `pull` says so and builds from
//! source instead.

mod fetch;
pub(crate) mod install;
mod progress;
mod server;

pub(crate) use fetch::Fetcher;
pub(crate) use install::install_from_release;
pub(crate) use server::DistServer;

/// Why a release install did not happen. Nothing was changed in every case.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PullError {
    #[error(
        "cannot reach the release server for {url}: {detail}. Check the network (or set \
         CRABUP_DIST_SERVER to a mirror); `--from-source` builds with cargo instead"
    )]
    Unreachable { url: String, detail: String },
    #[error(
        "the release server stopped answering: nothing came from {url} for {secs} s \
         (CRABUP_HTTP_TIMEOUT_SECS sets how long crabup waits)"
    )]
    TimedOut { url: String, secs: u64 },
    #[error("{url} is not on the release server (404 Not Found){hint}")]
    NotFound { url: String, hint: String },
    #[error("the release server answered {status} for {url}")]
    Status { url: String, status: String },
    #[error("the download of {url} ended early: {got} of {expected} bytes")]
    Truncated {
        url: String,
        got: u64,
        expected: u64,
    },
    #[error("{url} is larger than the {limit} bytes crabup accepts for it")]
    TooLarge { url: String, limit: u64 },
    #[error("{url} is not a release manifest: {detail}")]
    BadManifest { url: String, detail: String },
    #[error("{url} is not a checksum file: {detail}")]
    BadChecksumFile { url: String, detail: String },
    #[error(
        "the release contradicts itself: {file}.sha256 says {in_file}, dist-manifest.json \
         says {in_manifest}; nothing was downloaded or installed"
    )]
    ChecksumsDisagree {
        file: String,
        in_file: String,
        in_manifest: String,
    },
    #[error(
        "checksum mismatch: {file} as downloaded has SHA-256 {got}, the release says {want}. \
         It was damaged or changed on the way; nothing was installed"
    )]
    ChecksumMismatch {
        file: String,
        got: String,
        want: String,
    },
    #[error("the release server has no release v{version} ({url} is not there)")]
    NoRelease { version: String, url: String },
    #[error("release v{version} has no {program} for this platform ({target}){available}")]
    NoArtifact {
        program: String,
        version: String,
        target: String,
        available: String,
    },
    #[error("{file} (checksum verified) is not a usable archive: {detail}")]
    Unpack { file: String, detail: String },
    #[error(
        "the {binary} in {file} does not run on this machine ({detail}); the installed one \
         was kept. `--from-source` builds one here with cargo"
    )]
    DoesNotRun {
        binary: String,
        file: String,
        detail: install::VersionError,
    },
    #[error(
        "the {binary} in {file} says it is version {said}, but the release is v{version}; \
         the installed one was kept"
    )]
    WrongVersion {
        binary: String,
        file: String,
        said: String,
        version: String,
    },
    #[error("installing {path}: {detail}")]
    Write { path: String, detail: String },
}
