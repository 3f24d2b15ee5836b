//! Dependencies nobody uses: every dependency a crate's `Cargo.toml`
//! declares is named in that crate's Rust files (`name::…`, `use name`,
//! `name!`, `extern crate name`), with `-` read as `_` and a `package =`
//! rename read by its key. A normal or build dependency must be named by
//! the code that ships (anything but `tests/`, `examples/` and `benches/`);
//! a dev-dependency anywhere in the crate.
//!
//! Some dependencies are there for what they switch on, not for a name the
//! code writes (a feature of a shared crate, a linked C library). A crate
//! says so, with the reason beside it, in its manifest:
//!
//! ```toml
//! [package.metadata.unused-dependencies]
//! # rustls's ring provider is chosen through reqwest's feature.
//! ignored = ["rustls"]
//! ```

use std::path::{Path, PathBuf};

use crate::code_map::workspace_crates;

/// A declared dependency no Rust file of its crate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusedDependency {
    /// The crate's folder, relative to the repository root.
    pub folder: String,
    /// The dependency's key in the manifest.
    pub name: String,
    /// `dependencies`, `dev-dependencies` or `build-dependencies`.
    pub table: String,
}

/// Every dependency of every workspace crate at `root` that its code does
/// not name.
pub fn unused_dependencies(root: &Path) -> Result<Vec<UnusedDependency>, String> {
    let members = workspace_crates(root)?;
    let nested: Vec<String> = members.iter().map(|m| m.folder.clone()).collect();
    let mut unused = Vec::new();
    for member in &members {
        let folder = root.join(&member.folder);
        let manifest_path = folder.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest_path)
            .map_err(|err| format!("{}: {err}", manifest_path.display()))?;
        let manifest: toml::Table = text
            .parse()
            .map_err(|err| format!("{}: {err}", manifest_path.display()))?;
        let ignored = ignored(&manifest);
        // The crate's own files, not those of crates nested in its folder.
        let others: Vec<PathBuf> = nested
            .iter()
            .filter(|other| other.starts_with(&format!("{}/", member.folder)))
            .map(|other| root.join(other))
            .collect();
        let all_files = rust_files(&folder, &others);
        let shipped: Vec<&PathBuf> = all_files
            .iter()
            .filter(|file| {
                !["tests", "examples", "benches"]
                    .iter()
                    .any(|dev| file.starts_with(folder.join(dev)))
            })
            .collect();
        let shipped_code = read_all(&shipped);
        let all_code = read_all(&all_files.iter().collect::<Vec<_>>());
        for (table, names) in declared(&manifest) {
            for name in names {
                if ignored.contains(&name) {
                    continue;
                }
                let code = if table == "dev-dependencies" {
                    &all_code
                } else {
                    &shipped_code
                };
                if !names_crate(code, &name.replace('-', "_")) {
                    unused.push(UnusedDependency {
                        folder: member.folder.clone(),
                        name,
                        table: table.to_owned(),
                    });
                }
            }
        }
    }
    Ok(unused)
}

/// The dependency keys of each table, target-specific tables included.
fn declared(manifest: &toml::Table) -> Vec<(&'static str, Vec<String>)> {
    let mut tables: Vec<&toml::Table> = vec![manifest];
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        tables.extend(targets.values().filter_map(toml::Value::as_table));
    }
    ["dependencies", "dev-dependencies", "build-dependencies"]
        .into_iter()
        .map(|table| {
            let names = tables
                .iter()
                .filter_map(|t| t.get(table).and_then(toml::Value::as_table))
                .flat_map(|deps| deps.keys().cloned())
                .collect();
            (table, names)
        })
        .collect()
}

/// The keys listed in `[package.metadata.unused-dependencies] ignored`.
fn ignored(manifest: &toml::Table) -> Vec<String> {
    manifest
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("unused-dependencies"))
        .and_then(|u| u.get("ignored"))
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Whether `code` names the crate `ident` as a path, an import or a macro.
pub fn names_crate(code: &str, ident: &str) -> bool {
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find(ident) {
        let start = from + at;
        let end = start + ident.len();
        from = end;
        let before = start.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
            continue;
        }
        let rest = &code[end..];
        if rest.starts_with("::") || rest.starts_with('!') {
            return true;
        }
        let line_start = code[..start].rfind('\n').map_or(0, |i| i + 1);
        let line = code[line_start..start].trim_start();
        let ends_word = !rest
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        if ends_word
            && (line.starts_with("use ")
                || line.starts_with("pub use ")
                || line.starts_with("extern crate "))
        {
            return true;
        }
    }
    false
}

fn read_all(files: &[&PathBuf]) -> String {
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file under `folder`, not under `target/`, hidden folders or
/// any of `others` (nested crates).
fn rust_files(folder: &Path, others: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && !others.contains(&path) => folders.push(path),
                Ok(kind) if !kind.is_dir() && name.ends_with(".rs") => found.push(path),
                _ => {}
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crate_is_named_by_paths_imports_and_macros_only() {
        assert!(names_crate(
            "fn f() { serde_json::json!({}) }",
            "serde_json"
        ));
        assert!(names_crate("use tokio;\n", "tokio"));
        assert!(names_crate("    use tempfile::TempDir;\n", "tempfile"));
        assert!(names_crate("let v = vec![]; anyhow!(\"x\")", "anyhow"));
        assert!(names_crate("extern crate libc;\n", "libc"));
        // A word in a comment's prose, a longer name, a path inside another
        // crate: not a use.
        assert!(!names_crate("// tokio runs it\n", "tokio"));
        assert!(!names_crate("use serde_json::Value;\n", "serde"));
        assert!(!names_crate("use rmcp::model::tokio::X;\n", "tokio"));
    }

    #[test]
    fn an_unnamed_dependency_is_reported_unless_ignored_with_a_reason() {
        let root = std::env::temp_dir().join(format!("crabtalk-docs-deps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("proto/src")).unwrap();
        std::fs::create_dir_all(root.join("proto/tests")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"proto\"]\n",
        )
        .unwrap();
        std::fs::write(
            root.join("proto/Cargo.toml"),
            "[package]\nname = \"crabtalk-proto\"\n\n\
             [package.metadata.unused-dependencies]\n\
             # Switched on for its feature.\nignored = [\"rustls\"]\n\n\
             [dependencies]\nprost = \"0.14\"\nbytes = \"1\"\nrustls = \"0.23\"\n\
             tempfile = \"3\"\n\n[dev-dependencies]\ntokio = \"1\"\n\n\
             [target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n",
        )
        .unwrap();
        std::fs::write(
            root.join("proto/src/lib.rs"),
            "use prost::Message;\npub fn f() { libc::getpid(); }\n",
        )
        .unwrap();
        // Named only by a test: a normal dependency the product never uses.
        std::fs::write(
            root.join("proto/tests/t.rs"),
            "use tempfile::TempDir;\n#[tokio::test] async fn t() {}\n",
        )
        .unwrap();
        let unused = unused_dependencies(&root).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        let names: Vec<(&str, &str)> = unused
            .iter()
            .map(|u| (u.name.as_str(), u.table.as_str()))
            .collect();
        assert_eq!(
            names,
            [("bytes", "dependencies"), ("tempfile", "dependencies")]
        );
    }
}
