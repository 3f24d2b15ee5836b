//! `crabup list`: the crabtalk binaries this machine has, where each one
//! really is, and its version.
//!
//! A binary is looked for as `start` looks for it — `$CARGO_HOME/bin`
//! first, then `PATH` — so what `list` shows is what `start` would run.
//! One in `$CARGO_HOME/bin` has crabup's record (a release or checkout
//! install, believed while the file has the recorded SHA-256) or cargo's
//! (version, source, features); one found elsewhere on `PATH` (a package,
//! a copy) is asked its `--version`. A record whose binary is gone is listed as missing. A
//! family binary whose version differs from crabup's own is marked: it may
//! speak another protocol than the rest.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cargo::Installed;
use crate::context::Context;
use crate::installs::Installs;
use crate::names::{self, FAMILY_VERSION};

/// How long a binary found on PATH gets to print its `--version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

/// One binary as `list` shows it.
struct Row {
    name: String,
    crate_name: String,
    version: String,
    source: String,
    features: String,
    place: String,
}

pub(super) fn run(ctx: &Context) -> anyhow::Result<()> {
    let ours = Installs::load(ctx.cargo.home())?;
    let records: Vec<Installed> = ctx
        .cargo
        .installed()?
        .into_iter()
        .filter(|i| names::is_crabtalk_crate(&i.name))
        .collect();
    // The family's binaries, then any other crabtalk crate cargo recorded.
    let mut binaries: Vec<(String, String, String)> =
        std::iter::once(("crabup", "crabup", "crabup"))
            .chain(
                names::TABLE
                    .iter()
                    .map(|k| (k.short, k.crate_name, k.binary)),
            )
            .map(|(short, krate, binary)| (short.to_owned(), krate.to_owned(), binary.to_owned()))
            .collect();
    for record in &records {
        for bin in &record.bins {
            if !binaries.iter().any(|(_, _, binary)| binary == bin) {
                binaries.push(("-".to_owned(), record.name.clone(), bin.clone()));
            }
        }
    }
    let rows: Vec<Row> = binaries
        .into_iter()
        .filter_map(|(name, crate_name, binary)| {
            row(ctx, &ours, &records, name, crate_name, &binary)
        })
        .collect();
    if rows.is_empty() {
        println!(
            "no crabtalk binaries installed: none in crabup's or cargo's records in {} nor on PATH (try `crabup pull daemon`)",
            ctx.cargo.home().display()
        );
        return Ok(());
    }
    // Each column as wide as its widest cell; WHERE last, as long as it is.
    let header = Row {
        name: "NAME".into(),
        crate_name: "CRATE".into(),
        version: "VERSION".into(),
        source: "SOURCE".into(),
        features: "FEATURES".into(),
        place: "WHERE".into(),
    };
    let width = |cell: fn(&Row) -> &str| {
        rows.iter()
            .chain([&header])
            .map(|row| cell(row).chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [
        width(|r| &r.name),
        width(|r| &r.crate_name),
        width(|r| &r.version),
        width(|r| &r.source),
        width(|r| &r.features),
    ];
    for row in [&header].into_iter().chain(&rows) {
        println!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {:<w4$}  {}",
            row.name,
            row.crate_name,
            row.version,
            row.source,
            row.features,
            row.place,
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        );
    }
    Ok(())
}

/// The row of `binary`, when it is installed or recorded.
fn row(
    ctx: &Context,
    ours: &Installs,
    records: &[Installed],
    name: String,
    crate_name: String,
    binary: &str,
) -> Option<Row> {
    let record = records
        .iter()
        .find(|r| r.bins.iter().any(|bin| bin == binary));
    let found = ctx.cargo.find_binary(binary);
    let in_cargo_bin = found
        .as_deref()
        .is_some_and(|path| path.parent() == Some(ctx.cargo.bin_dir().as_path()));
    let marked = |version: String| {
        if names::is_family_crate(&crate_name) && !names::matches_family(&version) {
            format!("{version} (crabup is {FAMILY_VERSION})")
        } else {
            version
        }
    };
    if let Some(path) = found.as_deref().filter(|_| in_cargo_bin)
        && let Some(mine) = ours.current(binary, path)
    {
        return Some(Row {
            name,
            crate_name: mine.package.clone(),
            version: marked(mine.version.clone()),
            source: mine.kind().to_owned(),
            features: "-".to_owned(),
            place: path.display().to_string(),
        });
    }
    match (found, record) {
        (Some(path), Some(record)) if in_cargo_bin => Some(Row {
            name,
            crate_name: record.name.clone(),
            version: marked(record.version.clone()),
            source: source_of(record).to_owned(),
            features: features_of(record),
            place: path.display().to_string(),
        }),
        (Some(path), _) => {
            let (version, source) = match version_of(&path) {
                Some(version) => (
                    marked(version),
                    if in_cargo_bin { "cargo bin" } else { "PATH" },
                ),
                None => (
                    "?".to_owned(),
                    if in_cargo_bin { "cargo bin" } else { "PATH" },
                ),
            };
            Some(Row {
                name,
                crate_name,
                version,
                source: source.to_owned(),
                features: "-".to_owned(),
                place: if in_cargo_bin {
                    format!("{} (no cargo record)", path.display())
                } else {
                    format!("{} (on PATH, not from cargo install)", path.display())
                },
            })
        }
        (None, Some(record)) => Some(Row {
            name,
            crate_name: record.name.clone(),
            version: marked(record.version.clone()),
            source: source_of(record).to_owned(),
            features: features_of(record),
            place: format!(
                "missing: cargo recorded it, but {} has no {binary} and PATH neither",
                ctx.cargo.bin_dir().display()
            ),
        }),
        (None, None) => None,
    }
}

fn source_of(record: &Installed) -> &'static str {
    if record.path_source().is_some() {
        "path"
    } else if record.git_source().is_some() {
        "git"
    } else {
        "crates.io"
    }
}

fn features_of(record: &Installed) -> String {
    if record.all_features {
        "all".to_owned()
    } else if record.features.is_empty() {
        "-".to_owned()
    } else {
        record.features.join(",")
    }
}

/// What `<path> --version` says (its last word: `crabtalkd 0.1.0` →
/// `0.1.0`), within [`VERSION_TIMEOUT`].
fn version_of(path: &Path) -> Option<String> {
    let mut child = Command::new(path)
        .arg("--version")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + VERSION_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut()?, &mut out).ok()?;
    let version = out.split_whitespace().last()?.to_owned();
    version
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
        .then_some(version)
}
