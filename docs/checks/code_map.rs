//! ARCHITECTURE.md's code map against the tree: a section per crate of the
//! workspace, headed ``### `<folder>/` — `<package>` ``, in the order of the
//! floors (`proto/`, `command/`, `daemon/`, `components/`, `crabup/`, then
//! what stands outside them), and every source file a section names
//! (`peer.rs`, `tools/mcp.rs`) present in that crate's folder.

use std::path::{Path, PathBuf};

/// The folders that are floors, lowest first (RFC 0024). A crate in none
/// of them (the book's) comes after them all.
pub const FLOORS: [&str; 5] = ["proto", "command", "daemon", "components", "crabup"];

/// The floor of a crate at `folder` (relative to the repository root, `/`
/// separated): its index in [`FLOORS`], or `FLOORS.len()` outside them.
pub fn floor_of(folder: &str) -> usize {
    let top = folder.split('/').next().unwrap_or_default();
    FLOORS
        .iter()
        .position(|floor| *floor == top)
        .unwrap_or(FLOORS.len())
}

/// One section of the code map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSection {
    /// The crate's folder as written, without the trailing `/`.
    pub folder: String,
    /// The package name as written.
    pub package: String,
    /// The heading's 1-based line.
    pub line: usize,
    /// The section's text below the heading.
    pub body: String,
}

/// The sections of the `## Code map` chapter of `architecture`.
pub fn code_map(architecture: &str) -> Vec<MapSection> {
    let mut sections: Vec<MapSection> = Vec::new();
    let mut inside = false;
    for (index, line) in architecture.lines().enumerate() {
        if let Some(title) = line.strip_prefix("## ") {
            inside = title.trim() == "Code map";
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(heading) = line.strip_prefix("### ") {
            let quoted: Vec<&str> = heading.split('`').skip(1).step_by(2).collect();
            let (Some(folder), Some(package)) = (quoted.first(), quoted.get(1)) else {
                continue;
            };
            sections.push(MapSection {
                folder: folder.trim_end_matches('/').to_owned(),
                package: (*package).to_owned(),
                line: index + 1,
                body: String::new(),
            });
        } else if let Some(section) = sections.last_mut() {
            section.body.push_str(line);
            section.body.push('\n');
        }
    }
    sections
}

/// A crate of the workspace: its folder (relative, `/` separated) and its
/// package name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub folder: String,
    pub package: String,
}

/// Every crate of the workspace at `root`: its members, and the crates it
/// excludes but keeps in the tree (the cargo-fuzz crate).
pub fn workspace_crates(root: &Path) -> Result<Vec<Member>, String> {
    let manifest = read_toml(&root.join("Cargo.toml"))?;
    let workspace = manifest
        .get("workspace")
        .ok_or("Cargo.toml has no [workspace]")?;
    let mut folders: Vec<String> = Vec::new();
    for key in ["members", "exclude"] {
        for entry in workspace
            .get(key)
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            let folder = entry
                .as_str()
                .ok_or(format!("Cargo.toml: workspace.{key} holds a non-string"))?;
            folders.push(folder.trim_end_matches('/').to_owned());
        }
    }
    folders
        .into_iter()
        .map(|folder| {
            let manifest = read_toml(&root.join(&folder).join("Cargo.toml"))?;
            let package = manifest
                .get("package")
                .and_then(|package| package.get("name"))
                .and_then(toml::Value::as_str)
                .ok_or(format!("{folder}/Cargo.toml has no package name"))?
                .to_owned();
            Ok(Member { folder, package })
        })
        .collect()
}

fn read_toml(path: &Path) -> Result<toml::Table, String> {
    let text =
        std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    text.parse::<toml::Table>()
        .map_err(|err| format!("{}: {err}", path.display()))
}

/// What keeps `ARCHITECTURE.md` at `root` from being the tree's map, one
/// sentence each; empty when it is.
pub fn code_map_problems(root: &Path) -> Vec<String> {
    let architecture = match std::fs::read_to_string(root.join("ARCHITECTURE.md")) {
        Ok(text) => text,
        Err(err) => return vec![format!("ARCHITECTURE.md: {err}")],
    };
    let members = match workspace_crates(root) {
        Ok(members) => members,
        Err(err) => return vec![err],
    };
    let sections = code_map(&architecture);
    let mut problems = Vec::new();
    for member in &members {
        if !sections.iter().any(|s| s.folder == member.folder) {
            problems.push(format!(
                "ARCHITECTURE.md's code map has no section for `{}/` (`{}`): add \
                 ### `{}/` — `{}`",
                member.folder, member.package, member.folder, member.package
            ));
        }
    }
    let mut previous_floor = 0;
    for section in &sections {
        let place = format!("ARCHITECTURE.md:{}", section.line);
        match members.iter().find(|m| m.folder == section.folder) {
            None => problems.push(format!(
                "{place}: `{}/` is no crate of the workspace",
                section.folder
            )),
            Some(member) if member.package != section.package => problems.push(format!(
                "{place}: `{}/` is `{}`, not `{}`",
                section.folder, member.package, section.package
            )),
            Some(_) => {}
        }
        let floor = floor_of(&section.folder);
        if floor < previous_floor {
            problems.push(format!(
                "{place}: `{}/` comes after a higher floor; the sections follow the floors \
                 ({})",
                section.folder,
                FLOORS.join(", ")
            ));
        }
        previous_floor = previous_floor.max(floor);
        let folder = root.join(&section.folder);
        let files = files_under(&folder);
        for named in named_sources(&section.body) {
            let found = files.iter().any(|file| {
                file.to_string_lossy()
                    .replace('\\', "/")
                    .ends_with(&format!("/{named}"))
            });
            if !found {
                problems.push(format!(
                    "{place}: the section of `{}/` names `{named}`, which is no file of it",
                    section.folder
                ));
            }
        }
    }
    problems
}

/// The Rust files a section's text names in backticks: `peer.rs`,
/// `tools/mcp.rs`; not patterns such as `fuzz_targets/<target>.rs`.
pub fn named_sources(body: &str) -> Vec<String> {
    let mut named: Vec<String> = body
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|token| {
            token.ends_with(".rs")
                && token
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
        })
        .map(|token| token.trim_start_matches("./").to_owned())
        .collect();
    named.sort();
    named.dedup();
    named
}

/// Every file under `folder`, skipping build output and hidden folders.
fn files_under(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push(entry.path()),
                Ok(_) => found.push(entry.path()),
                Err(_) => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "# Architecture\n\n## Code map\n\nIntro `x.rs`.\n\n\
        ### `proto/` — `crabtalk-proto`\n\n- `src/codec.rs`: frames; \
        `fuzz_targets/<target>.rs` and `run/<name>.port` are no files.\n\n\
        ### `daemon/` — `crabtalkd`\n\nText.\n\n## Invariants\n\n### `x/` — `y`\n";

    #[test]
    fn sections_are_read_from_the_code_map_chapter_only() {
        let sections = code_map(MAP);
        assert_eq!(
            sections
                .iter()
                .map(|s| (s.folder.as_str(), s.package.as_str(), s.line))
                .collect::<Vec<_>>(),
            [("proto", "crabtalk-proto", 7), ("daemon", "crabtalkd", 11)]
        );
        assert_eq!(named_sources(&sections[0].body), ["src/codec.rs"]);
    }

    #[test]
    fn floors_go_from_the_wire_to_the_installer() {
        assert!(floor_of("proto") < floor_of("command/kit"));
        assert!(floor_of("command/kit") < floor_of("daemon/bm25"));
        assert!(floor_of("daemon/testkit") < floor_of("components/cron"));
        assert!(floor_of("components/fuzz/oracles") < floor_of("crabup/dist"));
        assert_eq!(floor_of("docs"), FLOORS.len());
    }

    #[test]
    fn a_missing_section_a_wrong_name_a_lost_file_and_a_floor_out_of_order_are_told() {
        let root = std::env::temp_dir().join(format!("crabtalk-docs-map-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (folder, package) in [
            ("proto", "crabtalk-proto"),
            ("daemon", "crabtalkd"),
            ("daemon/bm25", "crabtalk-bm25"),
        ] {
            std::fs::create_dir_all(root.join(folder).join("src")).unwrap();
            std::fs::write(
                root.join(folder).join("Cargo.toml"),
                format!("[package]\nname = \"{package}\"\n"),
            )
            .unwrap();
        }
        std::fs::write(root.join("proto/src/codec.rs"), "").unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"proto\", \"daemon\", \"daemon/bm25\"]\n",
        )
        .unwrap();
        std::fs::write(
            root.join("ARCHITECTURE.md"),
            "## Code map\n\n### `daemon/` — `crabtalk-daemon`\n\n`server.rs`\n\n\
             ### `proto/` — `crabtalk-proto`\n\n`codec.rs`\n",
        )
        .unwrap();
        let problems = code_map_problems(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems[0].contains("no section for `daemon/bm25/`"));
        assert!(problems[1].contains(":3: `daemon/` is `crabtalkd`, not `crabtalk-daemon`"));
        assert!(problems[2].contains(":3: the section of `daemon/` names `server.rs`"));
        assert!(problems[3].contains(":7: `proto/` comes after a higher floor"));
    }
}
