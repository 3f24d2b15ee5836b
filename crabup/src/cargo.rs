//! cargo: finding it, running `cargo install`/`uninstall`, and reading its
//! install records.
//!
//! crabup keeps no state of its own about what is installed: cargo's
//! records in `$CARGO_HOME` are the truth (`.crates2.json`, which also has
//! features, else `.crates.toml`). `CARGO_HOME` is honoured throughout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// One line when cargo is missing.
pub(crate) const NO_CARGO: &str =
    "cargo was not found on PATH: install Rust from https://rustup.rs and try again";

/// cargo and its home.
#[derive(Debug, Clone)]
pub(crate) struct Cargo {
    home: PathBuf,
}

/// One crate cargo installed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Installed {
    pub name: String,
    pub version: String,
    /// `registry+…`, `path+file://…`, `git+…`.
    pub source: String,
    pub bins: Vec<String>,
    pub features: Vec<String>,
    pub all_features: bool,
    pub no_default_features: bool,
}

impl Installed {
    /// The local folder it was installed from, for `--path` installs.
    pub(crate) fn path_source(&self) -> Option<PathBuf> {
        let url = self.source.strip_prefix("path+file://")?;
        let path = url.split(['?', '#']).next().unwrap_or(url);
        // A file URL: a checkout in "my code" is recorded as my%20code.
        let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
        }
        #[cfg(not(unix))]
        Some(PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// The git URL it was installed from, for `--git` installs.
    pub(crate) fn git_source(&self) -> Option<&str> {
        let url = self.source.strip_prefix("git+")?;
        Some(url.split(['?', '#']).next().unwrap_or(url))
    }
}

/// How a cargo run ended, with the end of its stderr.
#[derive(Debug, Clone)]
pub(crate) struct CargoOutcome {
    pub success: bool,
    /// The exit status, in words.
    pub status: String,
    pub stderr_tail: String,
}

impl CargoOutcome {
    /// Whether cargo failed because the registry has no such crate or no
    /// such version of it.
    pub(crate) fn version_missing(&self) -> bool {
        let said = &self.stderr_tail;
        said.contains("could not find `") && said.contains("in registry")
            || said.contains("no matching package named")
    }
}

impl Cargo {
    /// `$CARGO_HOME`, else `~/.cargo`.
    pub(crate) fn from_env() -> anyhow::Result<Self> {
        let home = match std::env::var_os("CARGO_HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home),
            None => dirs::home_dir()
                .context("cannot find the home directory; set CARGO_HOME")?
                .join(".cargo"),
        };
        Ok(Self { home })
    }

    pub(crate) fn home(&self) -> &Path {
        &self.home
    }

    /// `$CARGO_HOME/bin`, where `cargo install` puts binaries.
    pub(crate) fn bin_dir(&self) -> PathBuf {
        self.home.join("bin")
    }

    /// The cargo executable: on PATH, else in `$CARGO_HOME/bin`.
    pub(crate) fn program(&self) -> Option<PathBuf> {
        find_on_path("cargo").or_else(|| {
            let path = self.bin_dir().join(exe("cargo"));
            path.is_file().then_some(path)
        })
    }

    /// Runs cargo with `args`, output going straight to the user.
    pub(crate) fn run(&self, args: &[String]) -> anyhow::Result<()> {
        let Some(program) = self.program() else {
            bail!(NO_CARGO);
        };
        let status = Command::new(&program)
            .args(args)
            .env("CARGO_HOME", &self.home)
            .status()
            .with_context(|| format!("cannot run {}", program.display()))?;
        if !status.success() {
            bail!("`cargo {}` failed ({status})", args.join(" "));
        }
        Ok(())
    }

    /// Runs cargo with `args`: its output goes straight to the user, and
    /// the end of what it said on stderr is kept for the caller to read.
    pub(crate) fn run_watching(&self, args: &[String]) -> anyhow::Result<CargoOutcome> {
        use std::io::{Read, Write};

        /// How much of cargo's stderr is kept: its last error is at the end.
        const KEPT: usize = 64 * 1024;
        let Some(program) = self.program() else {
            bail!(NO_CARGO);
        };
        let mut command = Command::new(&program);
        command
            .args(args)
            .env("CARGO_HOME", &self.home)
            .stderr(std::process::Stdio::piped());
        keep_progress_bar(&mut command);
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot run {}", program.display()))?;
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let mut kept: Vec<u8> = Vec::new();
        let mut buffer = [0u8; 8192];
        let mut stderr = std::io::stderr();
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => {
                    let _ = stderr.write_all(&buffer[..read]);
                    kept.extend_from_slice(&buffer[..read]);
                    if kept.len() > KEPT {
                        kept.drain(..kept.len() - KEPT);
                    }
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let status = child
            .wait()
            .with_context(|| format!("waiting for {}", program.display()))?;
        Ok(CargoOutcome {
            success: status.success(),
            status: status.to_string(),
            stderr_tail: String::from_utf8_lossy(&kept).into_owned(),
        })
    }

    /// Every crate cargo installed, from its records (none when there are
    /// no records yet).
    pub(crate) fn installed(&self) -> anyhow::Result<Vec<Installed>> {
        let json = self.home.join(".crates2.json");
        match std::fs::read_to_string(&json) {
            Ok(text) => {
                return parse_crates2(&text).with_context(|| format!("reading {}", json.display()));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err).with_context(|| format!("reading {}", json.display())),
        }
        let toml = self.home.join(".crates.toml");
        match std::fs::read_to_string(&toml) {
            Ok(text) => {
                parse_crates_toml(&text).with_context(|| format!("reading {}", toml.display()))
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(err) => Err(err).with_context(|| format!("reading {}", toml.display())),
        }
    }

    /// Where `binary` is: `$CARGO_HOME/bin` first, then PATH.
    pub(crate) fn find_binary(&self, binary: &str) -> Option<PathBuf> {
        let installed = self.bin_dir().join(exe(binary));
        if installed.is_file() {
            return Some(installed);
        }
        find_on_path(binary)
    }
}

/// cargo draws its progress bar only on a terminal, and its stderr is a
/// pipe here (crabup keeps the end of it): when crabup's own stderr is a
/// terminal, cargo is told to draw it anyway, in colour, unless the
/// person chose otherwise.
fn keep_progress_bar(command: &mut Command) {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return;
    }
    let unset = |var: &str| std::env::var_os(var).is_none();
    if unset("CARGO_TERM_PROGRESS_WHEN") {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .unwrap_or(80);
        command
            .env("CARGO_TERM_PROGRESS_WHEN", "always")
            .env("CARGO_TERM_PROGRESS_WIDTH", width.to_string());
    }
    if unset("CARGO_TERM_COLOR") {
        command.env("CARGO_TERM_COLOR", "always");
    }
}

/// `name` with the platform's executable suffix.
pub(crate) fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

/// The first `name` on PATH.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(exe(name)))
        .find(|candidate| candidate.is_file())
}

/// Splits a record key: `"name version (source)"`.
fn parse_key(key: &str) -> Option<(String, String, String)> {
    let (name, rest) = key.split_once(' ')?;
    let (version, source) = rest.split_once(' ')?;
    let source = source.strip_prefix('(')?.strip_suffix(')')?;
    Some((name.to_owned(), version.to_owned(), source.to_owned()))
}

#[derive(serde::Deserialize)]
struct Crates2 {
    #[serde(default)]
    installs: BTreeMap<String, Crates2Entry>,
}

#[derive(serde::Deserialize)]
struct Crates2Entry {
    #[serde(default)]
    bins: Vec<String>,
    #[serde(default)]
    features: Vec<String>,
    #[serde(default)]
    all_features: bool,
    #[serde(default)]
    no_default_features: bool,
}

/// Parses `.crates2.json`.
pub(crate) fn parse_crates2(text: &str) -> anyhow::Result<Vec<Installed>> {
    let records: Crates2 = serde_json::from_str(text)?;
    Ok(records
        .installs
        .into_iter()
        .filter_map(|(key, entry)| {
            let (name, version, source) = parse_key(&key)?;
            Some(Installed {
                name,
                version,
                source,
                bins: entry.bins,
                features: entry.features,
                all_features: entry.all_features,
                no_default_features: entry.no_default_features,
            })
        })
        .collect())
}

/// Parses `.crates.toml` (no features recorded there).
pub(crate) fn parse_crates_toml(text: &str) -> anyhow::Result<Vec<Installed>> {
    let table: toml::Table = toml::from_str(text)?;
    let Some(v1) = table.get("v1").and_then(|v| v.as_table()) else {
        return Ok(Vec::new());
    };
    Ok(v1
        .iter()
        .filter_map(|(key, bins)| {
            let (name, version, source) = parse_key(key)?;
            let bins = bins
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|b| b.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            Some(Installed {
                name,
                version,
                source,
                bins,
                features: Vec::new(),
                all_features: false,
                no_default_features: false,
            })
        })
        .collect())
}

/// The folder of package `crate_name` under `dir`: `dir` itself when it is
/// that package, else the workspace member of that name.
pub(crate) fn find_package(dir: &Path, crate_name: &str) -> anyhow::Result<PathBuf> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("{} is not a Rust package or workspace", dir.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("cannot parse {}", manifest.display()))?;
    if package_name(&table) == Some(crate_name) {
        return Ok(dir.to_owned());
    }
    let members = table
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .map(|m| m.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
    for member in members {
        for candidate in expand_member(dir, member) {
            let Ok(text) = std::fs::read_to_string(candidate.join("Cargo.toml")) else {
                continue;
            };
            let Ok(table) = toml::from_str::<toml::Table>(&text) else {
                continue;
            };
            if package_name(&table) == Some(crate_name) {
                return Ok(candidate);
            }
        }
    }
    bail!("there is no package {crate_name} in {}", dir.display())
}

fn package_name(table: &toml::Table) -> Option<&str> {
    table.get("package")?.get("name")?.as_str()
}

/// A workspace member path, with a trailing `/*` expanded.
fn expand_member(root: &Path, member: &str) -> Vec<PathBuf> {
    match member.strip_suffix("/*") {
        Some(parent) => std::fs::read_dir(root.join(parent))
            .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).collect())
            .unwrap_or_default(),
        None => vec![root.join(member)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates2_records_keep_versions_sources_and_features() {
        let text = r#"{"installs":{
            "crabtalkd 0.1.0 (path+file:///src/crabtalk/daemon)":{"version_req":null,"bins":["crabtalkd"],"features":["x"],"all_features":false,"no_default_features":true,"profile":"release"},
            "crabtalk-search 0.2.0 (registry+https://github.com/rust-lang/crates.io-index)":{"bins":["crabtalk-search"],"features":[],"all_features":true,"no_default_features":false}
        }}"#;
        let installed = parse_crates2(text).unwrap();
        assert_eq!(installed.len(), 2);
        let search = &installed[0];
        assert_eq!(
            (search.name.as_str(), search.version.as_str()),
            ("crabtalk-search", "0.2.0")
        );
        assert!(search.all_features);
        let daemon = &installed[1];
        assert_eq!(daemon.features, ["x"]);
        assert!(daemon.no_default_features);
        assert_eq!(
            daemon.path_source(),
            Some(PathBuf::from("/src/crabtalk/daemon"))
        );
    }

    #[test]
    fn path_sources_are_percent_decoded() {
        let text = r#"{"installs":{
            "crabtalkd 0.1.0 (path+file:///home/me/my%20code/crab%25talk/daemon)":{"bins":["crabtalkd"]},
            "crabtalk-cron 0.1.0 (path+file:///home/me/caf%C3%A9/cron#0.1.0)":{"bins":["crabtalk-cron"]}
        }}"#;
        let installed = parse_crates2(text).unwrap();
        let source = |name: &str| {
            installed
                .iter()
                .find(|i| i.name == name)
                .unwrap()
                .path_source()
        };
        assert_eq!(
            source("crabtalkd"),
            Some(PathBuf::from("/home/me/my code/crab%talk/daemon"))
        );
        assert_eq!(
            source("crabtalk-cron"),
            Some(PathBuf::from("/home/me/café/cron"))
        );
    }

    #[test]
    fn crates_toml_records_are_read_too() {
        let text = "[v1]\n\"crabtalk-cron 0.3.1 (registry+https://github.com/rust-lang/crates.io-index)\" = [\"crabtalk-cron\"]\n";
        let installed = parse_crates_toml(text).unwrap();
        assert_eq!(installed[0].name, "crabtalk-cron");
        assert_eq!(installed[0].version, "0.3.1");
        assert_eq!(installed[0].bins, ["crabtalk-cron"]);
    }

    #[test]
    fn packages_are_found_in_a_workspace_checkout() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(
            find_package(root, "crabtalkd").unwrap(),
            root.join("daemon")
        );
        assert_eq!(find_package(root, "crabup").unwrap(), root.join("crabup"));
        let crabup = root.join("crabup");
        assert_eq!(find_package(&crabup, "crabup").unwrap(), crabup);
        assert!(
            find_package(root, "nope")
                .unwrap_err()
                .to_string()
                .contains("no package nope")
        );
    }
}
