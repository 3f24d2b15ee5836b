//! `crabtalk-dist`: the release's packer (RFC 0016).
//!
//! ```sh
//! cargo build --profile dist --workspace --bins
//! cargo run -p crabtalk-dist -- pack --bin-dir target/dist --out target/distrib
//! cargo run -p crabtalk-dist -- sizes --bin-dir target/dist
//! cargo run -p crabtalk-dist -- merge --out dist-manifest.json job1/dist-manifest.json job2/dist-manifest.json
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use crabtalk_dist::manifest::Manifest;
use crabtalk_dist::pack::Packer;

/// Packs crabtalk's built binaries into release archives, as cargo-dist
/// lays them out: `<program>-<target>.tar.xz` (one folder of the same name
/// with the binary and the README), `<archive>.sha256`, and
/// `dist-manifest.json`.
#[derive(Debug, Parser)]
#[command(name = "crabtalk-dist", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Pack the programs' binaries of one target; the folder's
    /// dist-manifest.json gets them (made, or added to).
    Pack {
        /// The target the binaries were built for (default: this machine's).
        #[arg(long, default_value = crabtalk_dist::HOST_TARGET)]
        target: String,
        /// Where the built binaries are (`target/<profile>` or
        /// `target/<target>/<profile>`).
        #[arg(long, value_name = "DIR")]
        bin_dir: PathBuf,
        /// Where the archives go.
        #[arg(long, value_name = "DIR", default_value = "target/distrib")]
        out: PathBuf,
        /// The programs to pack (default: all of the release's).
        #[arg(long = "program", value_name = "NAME")]
        programs: Vec<String>,
        /// A file put beside each binary (default: the workspace's README.md).
        #[arg(long = "include", value_name = "FILE")]
        includes: Vec<PathBuf>,
        /// xz preset: 0 (fast) to 9 (smallest).
        #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
        preset: u32,
    },
    /// Check the built binaries against their size limits (the daemon
    /// 12 MB, each component 8 MB, crabup 6 MB): prints a Markdown table,
    /// and fails when a binary is over its limit or missing.
    Sizes {
        /// The target the binaries were built for (default: this machine's).
        #[arg(long, default_value = crabtalk_dist::HOST_TARGET)]
        target: String,
        /// Where the built binaries are (`target/dist` or
        /// `target/<target>/dist`).
        #[arg(long, value_name = "DIR")]
        bin_dir: PathBuf,
    },
    /// Join the manifests of a release's build jobs into one.
    Merge {
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[arg(required = true, value_name = "MANIFEST")]
        manifests: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crabtalk-dist: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Pack {
            target,
            bin_dir,
            out,
            programs,
            includes,
            preset,
        } => {
            let programs: Vec<String> = if programs.is_empty() {
                crabtalk_dist::PROGRAMS
                    .iter()
                    .map(|p| (*p).to_owned())
                    .collect()
            } else {
                programs
            };
            let includes = if includes.is_empty() {
                let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md");
                vec![readme]
            } else {
                includes
            };
            let mut packer = Packer::new(&target, &out);
            packer.preset = preset;
            packer.extras = includes
                .into_iter()
                .map(|path| {
                    let kind = asset_kind(&path);
                    (path, kind.to_owned())
                })
                .collect();
            let manifest_path = out.join("dist-manifest.json");
            let mut manifest = match std::fs::read(&manifest_path) {
                Ok(bytes) => Manifest::parse(&bytes)
                    .with_context(|| format!("reading {}", manifest_path.display()))?,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    Manifest::new(&packer.version)
                }
                Err(err) => return Err(err).context(manifest_path.display().to_string()),
            };
            for program in &programs {
                let binary = bin_dir.join(crabtalk_dist::layout::binary_name(program, &target));
                let packed = packer
                    .pack(program, &binary, &mut manifest)
                    .with_context(|| format!("packing {program} from {}", binary.display()))?;
                println!("{}  {}", packed.sha256, packed.archive.display());
            }
            std::fs::write(&manifest_path, manifest.to_json())
                .with_context(|| manifest_path.display().to_string())?;
            println!("wrote {}", manifest_path.display());
            Ok(())
        }
        Command::Sizes { target, bin_dir } => {
            let rows = crabtalk_dist::sizes::measure(&bin_dir, &target);
            print!("{}", crabtalk_dist::sizes::table(&rows));
            let failing: Vec<&str> = rows
                .iter()
                .filter(|row| !row.fits())
                .map(|row| row.program.as_str())
                .collect();
            if failing.is_empty() {
                Ok(())
            } else {
                anyhow::bail!(
                    "over its size limit or not built in {}: {} (build with \
                     `cargo build --profile dist --workspace --bins`)",
                    bin_dir.display(),
                    failing.join(", ")
                )
            }
        }
        Command::Merge { out, manifests } => {
            let mut merged = Manifest::default();
            for path in &manifests {
                let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
                let manifest = Manifest::parse(&bytes)
                    .with_context(|| format!("reading {}", path.display()))?;
                merged
                    .merge(manifest)
                    .with_context(|| format!("merging {}", path.display()))?;
            }
            std::fs::write(&out, merged.to_json()).with_context(|| out.display().to_string())?;
            println!(
                "wrote {} ({} artifacts)",
                out.display(),
                merged.artifacts.len()
            );
            Ok(())
        }
    }
}

/// cargo-dist's asset kind for a file put beside the binary.
fn asset_kind(path: &std::path::Path) -> &'static str {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_uppercase())
        .unwrap_or_default();
    if name.starts_with("README") {
        "readme"
    } else if name.starts_with("LICENSE") || name.starts_with("COPYING") {
        "license"
    } else if name.starts_with("CHANGELOG") || name.starts_with("RELEASES") {
        "changelog"
    } else {
        "unknown"
    }
}
