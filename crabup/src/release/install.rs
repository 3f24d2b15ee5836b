//! One program from a release into its place: find, download, verify,
//! unpack, try, rename, record.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_dist::layout::{binary_name, checksum_name, parse_checksum_file, root_folder};
use crabtalk_dist::manifest::{MAX_MANIFEST_BYTES, Manifest};
use crabtalk_dist::unpack::{Limits, extract_binary};
use crabtalk_dist::{HOST_TARGET, Sha256};
use crabtalk_home::Staged;

use super::{DistServer, Fetcher, PullError};
use crate::installs::{Installs, Record, now};

/// The largest archive downloaded (a release binary is 10–30 MB).
const MAX_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;
/// The largest checksum file read.
const MAX_CHECKSUM_BYTES: u64 = 4096;
/// How long a new binary gets to print its `--version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// What was installed.
#[derive(Debug, Clone)]
pub(crate) struct Installed {
    pub version: String,
    pub path: PathBuf,
    /// The SHA-256 of the archive, as verified.
    pub archive_sha256: String,
}

/// Installs `program` of release `v<version>` at `dest` (the binary's full
/// path), for the target crabup was built for. With `record_in` (a cargo
/// home), the install is recorded there. `running` says `dest` may be the
/// running crabup itself (which Windows cannot overwrite).
pub(crate) fn install_from_release(
    fetcher: &Fetcher,
    server: &DistServer,
    program: &str,
    version: &str,
    dest: &Path,
    record_in: Option<&Path>,
    running: bool,
) -> Result<Installed, PullError> {
    let manifest_url = server.url(version, "dist-manifest.json");
    let bytes = fetcher
        .get_small(&manifest_url, MAX_MANIFEST_BYTES as u64)
        .map_err(|err| match err {
            PullError::NotFound { url, .. } => PullError::NoRelease {
                version: version.to_owned(),
                url,
            },
            other => other,
        })?;
    let manifest = Manifest::parse(&bytes).map_err(|err| PullError::BadManifest {
        url: manifest_url.clone(),
        detail: err.to_string(),
    })?;
    let Some(archive) = manifest.archive_for(program, HOST_TARGET) else {
        let targets = manifest.targets_of(program);
        return Err(PullError::NoArtifact {
            program: program.to_owned(),
            version: version.to_owned(),
            target: HOST_TARGET.to_owned(),
            available: if targets.is_empty() {
                String::new()
            } else {
                format!("; it has {}", targets.join(", "))
            },
        });
    };
    let checksum_file = archive
        .checksum_file
        .clone()
        .unwrap_or_else(|| checksum_name(&archive.name));
    // Names from the manifest become URLs: one file of this release each.
    for name in [&archive.name, &checksum_file] {
        if !plain_file_name(name) {
            return Err(PullError::BadManifest {
                url: manifest_url.clone(),
                detail: format!("{name:?} is not a file name of this release"),
            });
        }
    }
    let checksum_url = server.url(version, &checksum_file);
    let text = fetcher
        .get_small(&checksum_url, MAX_CHECKSUM_BYTES)
        .map_err(incomplete)?;
    let text = String::from_utf8_lossy(&text);
    let want =
        parse_checksum_file(&text, &archive.name).map_err(|err| PullError::BadChecksumFile {
            url: checksum_url.clone(),
            detail: err.to_string(),
        })?;
    if let Some(in_manifest) = archive.sha256.as_deref()
        && !in_manifest.eq_ignore_ascii_case(&want)
    {
        return Err(PullError::ChecksumsDisagree {
            file: archive.name.clone(),
            in_file: want,
            in_manifest: in_manifest.to_owned(),
        });
    }
    let archive_url = server.url(version, &archive.name);
    let bytes = fetcher
        .get_archive(&archive_url, MAX_ARCHIVE_BYTES, &archive.name)
        .map_err(incomplete)?;
    let mut digest = Sha256::new();
    digest.update(&bytes);
    let got = digest.hex();
    if got != want {
        return Err(PullError::ChecksumMismatch {
            file: archive.name.clone(),
            got,
            want,
        });
    }

    // Verified: now the binary goes into a temp file beside its place.
    let binary = binary_name(program, HOST_TARGET);
    let inside = format!(
        "{}/{}",
        root_folder(program, HOST_TARGET),
        archive.binary_path.as_deref().unwrap_or(&binary)
    );
    let write_error = |err: std::io::Error| PullError::Write {
        path: dest.display().to_string(),
        detail: err.to_string(),
    };
    let mut staged = Staged::create(dest, 0o755).map_err(write_error)?;
    let file = staged.file().expect("a new staged file is open");
    extract_binary(&bytes[..], &inside, &Limits::default(), file).map_err(|err| match err {
        crabtalk_dist::unpack::UnpackError::Write(err) => write_error(err),
        other => PullError::Unpack {
            file: archive.name.clone(),
            detail: other.to_string(),
        },
    })?;
    staged.finish_writing().map_err(write_error)?;
    let said = version_of(staged.temp_path()).map_err(|detail| PullError::DoesNotRun {
        binary: binary.clone(),
        file: archive.name.clone(),
        detail,
    })?;
    if said != version {
        return Err(PullError::WrongVersion {
            binary: binary.clone(),
            file: archive.name.clone(),
            said,
            version: version.to_owned(),
        });
    }
    let sha256 = Sha256::of_file(staged.temp_path()).map_err(write_error)?;
    if running {
        replace_running_exe(staged, dest).map_err(write_error)?;
    } else {
        staged.commit().map_err(write_error)?;
    }
    if let Some(cargo_home) = record_in {
        let record = Record {
            package: program.to_owned(),
            version: version.to_owned(),
            source: archive_url.clone(),
            archive_sha256: Some(want.clone()),
            sha256,
            target: HOST_TARGET.to_owned(),
            installed_at: now(),
        };
        Installs::record(cargo_home, program, record).map_err(|err| PullError::Write {
            path: cargo_home
                .join(crate::installs::RECORDS_FILE)
                .display()
                .to_string(),
            detail: format!("{err:#}"),
        })?;
    }
    Ok(Installed {
        version: version.to_owned(),
        path: dest.to_owned(),
        archive_sha256: want,
    })
}

/// Whether `name` names a file in the release's folder: no folder part,
/// nothing hidden, nothing a URL would read as more.
fn plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

/// A file the manifest lists but the server does not have.
fn incomplete(err: PullError) -> PullError {
    match err {
        PullError::NotFound { url, .. } => PullError::NotFound {
            url,
            hint: ": dist-manifest.json lists it, so the release is incomplete; nothing was \
                   installed"
                .to_owned(),
        },
        other => other,
    }
}

/// Why `<binary> --version` told no version; the text follows "does not
/// run on this machine".
#[derive(Debug, thiserror::Error)]
pub(crate) enum VersionError {
    /// It could not be started, or waited for.
    #[error("{0}")]
    Run(#[from] std::io::Error),
    #[error("`--version` gave no answer within {}s", VERSION_TIMEOUT.as_secs())]
    NoAnswer,
    /// It failed; with the start of what it said on stderr, if anything.
    #[error("`--version` failed ({status}){}", said_after(.said))]
    Failed {
        status: std::process::ExitStatus,
        said: String,
    },
    #[error("`--version` printed nothing")]
    Silent,
}

/// `: <said>`, or nothing when nothing was said.
fn said_after(said: &str) -> String {
    if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    }
}

/// What `<binary> --version` says: its last word (`crabtalkd 0.1.0` →
/// `0.1.0`), or why it did not run.
pub(crate) fn version_of(binary: &Path) -> Result<String, VersionError> {
    let mut child = Command::new(binary)
        .arg("--version")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + VERSION_TIMEOUT;
    let status = loop {
        match child.try_wait()? {
            Some(status) => break status,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(VersionError::NoAnswer);
            }
        }
    };
    let output = child.wait_with_output()?;
    if !status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim().chars().take(300).collect();
        return Err(VersionError::Failed { status, said });
    }
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .last()
        .map(str::to_owned)
        .ok_or(VersionError::Silent)
}

/// Puts `staged` in place of `exe`, a program that may be running. Unix
/// renames over it (the running process keeps the old file). Windows
/// refuses to replace a running executable but lets it be renamed: the old
/// one moves aside to `<exe>.old` first (removed by the next self update).
pub(crate) fn replace_running_exe(staged: Staged, exe: &Path) -> std::io::Result<()> {
    if cfg!(windows) {
        move_aside_then_commit(staged, exe)
    } else {
        staged.commit()
    }
}

/// Windows' way: the running file renamed aside, the new one renamed in;
/// if that fails the old one is moved back.
fn move_aside_then_commit(staged: Staged, exe: &Path) -> std::io::Result<()> {
    let aside = aside_path(exe);
    let _ = std::fs::remove_file(&aside);
    let moved = match std::fs::rename(exe, &aside) {
        Ok(()) => true,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
        Err(err) => return Err(err),
    };
    if let Err(err) = staged.commit() {
        if moved {
            let _ = std::fs::rename(&aside, exe);
        }
        return Err(err);
    }
    Ok(())
}

/// Where a replaced running executable waits to be removed.
pub(crate) fn aside_path(exe: &Path) -> PathBuf {
    let mut name = exe.as_os_str().to_owned();
    name.push(".old");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_from_the_manifest_become_urls() {
        assert!(plain_file_name("crabtalkd-x86_64-unknown-linux-gnu.tar.xz"));
        assert!(plain_file_name("crabup-aarch64-apple-darwin.tar.xz.sha256"));
        for hostile in [
            "",
            "../crabup.tar.xz",
            "a/b.tar.xz",
            "a\\b.tar.xz",
            ".hidden",
            "x.tar.xz?y=1",
            "x.tar.xz#y",
            "%2e%2e/x",
        ] {
            assert!(!plain_file_name(hostile), "{hostile}");
        }
    }

    #[test]
    fn a_running_executable_is_moved_aside_then_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("crabup.exe");
        std::fs::write(&exe, b"old").unwrap();
        let mut staged = Staged::create(&exe, 0o755).unwrap();
        std::io::Write::write_all(staged.file().unwrap(), b"new").unwrap();
        move_aside_then_commit(staged, &exe).unwrap();
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");
        assert_eq!(std::fs::read(aside_path(&exe)).unwrap(), b"old");
        // Again: the previous leftover makes way.
        let staged = Staged::create(&exe, 0o755).unwrap();
        move_aside_then_commit(staged, &exe).unwrap();
        assert_eq!(std::fs::read(aside_path(&exe)).unwrap(), b"new");
    }
}
