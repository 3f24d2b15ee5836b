//! crabtalk's release artifacts, written once and read back the same way.
//!
//! A release is a folder per version tag, `v<version>/`, served as GitHub
//! release assets (or from any static server, `CRABUP_DIST_SERVER`). It
//! holds, per program and target, the layout cargo-dist gives (RFC 0016):
//!
//! ```text
//! crabtalkd-x86_64-unknown-linux-gnu.tar.xz
//!     crabtalkd-x86_64-unknown-linux-gnu/        one folder, named like the archive
//!     crabtalkd-x86_64-unknown-linux-gnu/crabtalkd
//!     crabtalkd-x86_64-unknown-linux-gnu/README.md
//! crabtalkd-x86_64-unknown-linux-gnu.tar.xz.sha256   "<hex> *<archive>"
//! dist-manifest.json                                  every artifact, with its sha256
//! ```
//!
//! - [`layout`]: the names (archive, folder, checksum file) and the
//!   `sha256sum` line.
//! - [`manifest`]: `dist-manifest.json`, in the shape cargo-dist's
//!   `cargo-dist-schema` reads; built from packed artifacts, merged across
//!   the release's build jobs, and searched for a program and target.
//! - [`unpack`]: the one binary taken out of an archive, with every bound a
//!   hostile archive needs (nothing is written but the caller's file).
//! - `pack` (feature `pack`, and the `crabtalk-dist` binary): the packer
//!   the release workflow, local runs and tests use.
//! - [`sizes`]: the size each released binary must stay under, and the
//!   table that checks it.
//! - [`Sha256`]: the digest, as lowercase hex.
//!
//! crabup links this crate without `pack`: it reads releases, never writes
//! them.

pub mod layout;
pub mod manifest;
#[cfg(feature = "pack")]
pub mod pack;
pub mod sizes;
pub mod unpack;

mod digest;

pub use digest::Sha256;

/// The target this crate (and so the program that links it) was built
/// for, e.g. `x86_64-unknown-linux-gnu`.
pub const HOST_TARGET: &str = env!("CRABTALK_DIST_TARGET");

/// The targets a release is built for (RFC 0016): Linux with glibc on
/// x86_64 and aarch64, macOS on both, Windows on x86_64.
pub const RELEASE_TARGETS: [&str; 5] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
    "x86_64-pc-windows-msvc",
];

/// The programs a release carries, by package (each package's binary has
/// its name).
pub const PROGRAMS: [&str; 6] = [
    "crabup",
    "crabtalkd",
    "crabtalk-tui",
    "crabtalk-cron",
    "crabtalk-search",
    "crabtalk-telegram",
];
