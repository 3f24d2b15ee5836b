//! One `cargo build` of a checkout's programs, and installing what it
//! built (RFC 0017).
//!
//! `crabup up --path <checkout>` used to run one `cargo install` per
//! program: each resolved features anew, so the crates they share were
//! compiled again wherever their features differed, under the release
//! profile's LTO. Now one `cargo build --release --workspace --bins` builds
//! every program with one feature resolution — the same command line a
//! person types to build the workspace, so what that already built is
//! fresh and reused — and its JSON messages say where each binary is. Each
//! is then copied into `$CARGO_HOME/bin` the way a release install is put
//! there (a temp file beside, fsync, rename) and recorded.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use crabtalk_home::Staged;

use crate::cargo::{Cargo, NO_CARGO, exe};
use crate::installs::{Installs, Record, now};

/// What the build made: each binary's path and its package's version.
#[derive(Debug, Default)]
pub(crate) struct Built {
    pub binaries: BTreeMap<String, BuiltBinary>,
}

#[derive(Debug, Clone)]
pub(crate) struct BuiltBinary {
    pub path: PathBuf,
    pub version: String,
}

/// The arguments of the one build (after `cargo`).
pub(crate) const BUILD_ARGS: [&str; 5] =
    ["build", "--release", "--workspace", "--bins", "--locked"];

/// Builds every program of the workspace at `root` in one cargo run,
/// cargo's progress and errors going to stderr.
pub(crate) fn build_workspace(cargo: &Cargo, root: &Path) -> anyhow::Result<Built> {
    let Some(program) = cargo.program() else {
        bail!(NO_CARGO);
    };
    let mut command = Command::new(&program);
    command
        .args(BUILD_ARGS)
        .arg("--message-format=json-render-diagnostics")
        .current_dir(root)
        .env("CARGO_HOME", cargo.home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    println!(
        "crabup: cargo {}   (in {})",
        BUILD_ARGS.join(" "),
        root.display()
    );
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot run {}", program.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut built = Built::default();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Some((name, binary)) = artifact(&line) {
            built.binaries.insert(name, binary);
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for {}", program.display()))?;
    if !status.success() {
        bail!(
            "`cargo {}` in {} failed ({status}); its errors are above",
            BUILD_ARGS.join(" "),
            root.display()
        );
    }
    Ok(built)
}

/// A binary from one line of cargo's JSON messages, if the line is one.
fn artifact(line: &str) -> Option<(String, BuiltBinary)> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" {
        return None;
    }
    let path = message["executable"].as_str()?;
    let target = &message["target"];
    let is_bin = target["kind"]
        .as_array()
        .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
    if !is_bin {
        return None;
    }
    let name = target["name"].as_str()?.to_owned();
    let version = package_version(message["package_id"].as_str()?)?;
    Some((
        name,
        BuiltBinary {
            path: PathBuf::from(path),
            version,
        },
    ))
}

/// The version in a cargo package id: `path+file:///src/x/daemon#crabtalkd@0.1.0`,
/// `path+file:///src/x/crabup#0.1.0`, or the older `crabup 0.1.0 (path+file:///…)`.
fn package_version(id: &str) -> Option<String> {
    if let Some((_, fragment)) = id.rsplit_once('#') {
        let version = fragment.rsplit_once('@').map_or(fragment, |(_, v)| v);
        return Some(version.to_owned());
    }
    id.split_whitespace().nth(1).map(str::to_owned)
}

/// Copies `built` into `bin_dir` as `binary` (temp file beside, fsync,
/// rename: a running service keeps its old file until it restarts) and
/// records it as built from `root`.
pub(crate) fn install_built(
    cargo: &Cargo,
    binary: &str,
    package: &str,
    built: &BuiltBinary,
    root: &Path,
) -> anyhow::Result<PathBuf> {
    let dest = cargo.bin_dir().join(exe(binary));
    let mut source = std::fs::File::open(&built.path)
        .with_context(|| format!("reading {}", built.path.display()))?;
    let mut staged =
        Staged::create(&dest, 0o755).with_context(|| format!("installing {}", dest.display()))?;
    std::io::copy(
        &mut source,
        staged.file().expect("a new staged file is open"),
    )
    .with_context(|| format!("installing {}", dest.display()))?;
    staged.finish_writing()?;
    let sha256 = crabtalk_dist::Sha256::of_file(staged.temp_path())?;
    staged
        .commit()
        .with_context(|| format!("installing {}", dest.display()))?;
    Installs::record(
        cargo.home(),
        binary,
        Record {
            package: package.to_owned(),
            version: built.version.clone(),
            source: format!("path+file://{}", root.display()),
            archive_sha256: None,
            sha256,
            target: crabtalk_dist::HOST_TARGET.to_owned(),
            installed_at: now(),
        },
    )?;
    Ok(dest)
}

/// The workspace holding `dir` (a checkout's root or one of its packages).
pub(crate) fn workspace_root(dir: &Path) -> PathBuf {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    dir.ancestors()
        .find(|candidate| {
            std::fs::read_to_string(candidate.join("Cargo.toml"))
                .ok()
                .and_then(|text| text.parse::<toml::Table>().ok())
                .is_some_and(|manifest| manifest.contains_key("workspace"))
        })
        .map_or(dir.clone(), Path::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_and_versions_are_read_from_cargo_s_messages() {
        let line = r#"{"reason":"compiler-artifact","package_id":"path+file:///src/ct/daemon#crabtalkd@0.1.0","target":{"kind":["bin"],"name":"crabtalkd"},"executable":"/src/ct/target/release/crabtalkd","fresh":true}"#;
        let (name, binary) = artifact(line).unwrap();
        assert_eq!(name, "crabtalkd");
        assert_eq!(binary.path, Path::new("/src/ct/target/release/crabtalkd"));
        assert_eq!(binary.version, "0.1.0");
        let lib = r#"{"reason":"compiler-artifact","package_id":"path+file:///src/ct/proto#crabtalk-proto@0.1.0","target":{"kind":["lib"],"name":"crabtalk_proto"},"executable":null}"#;
        assert!(artifact(lib).is_none());
        assert!(artifact(r#"{"reason":"build-finished","success":true}"#).is_none());
        assert!(artifact("not json").is_none());
        assert_eq!(
            package_version("path+file:///src/ct/crabup#0.2.0").as_deref(),
            Some("0.2.0")
        );
        assert_eq!(
            package_version("crabup 0.1.0 (path+file:///src/ct/crabup)").as_deref(),
            Some("0.1.0")
        );
    }

    #[test]
    fn the_workspace_is_found_from_any_of_its_packages() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(workspace_root(root), root);
        assert_eq!(workspace_root(&root.join("crabup")), root);
    }
}
