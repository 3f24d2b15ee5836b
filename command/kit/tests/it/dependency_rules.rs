//! Who links what, checked on the real dependency graph (`cargo tree`,
//! normal dependencies only, each package with its default features as a
//! `cargo install` would build it):
//!
//! - a component binary links no unit templates (askama) — those are
//!   `crabtalk-command`'s, for `crabup` alone;
//! - `crabup` links no HTTP server and no MCP (axum, rmcp), although it
//!   reads and writes components' configs with their own types;
//! - the TUI links neither; the daemon links no HTTP server (`crabtalkd
//!   mcp` serves MCP over stdio);
//! - `crabtalk-proto` moves frames: it depends on nothing of ours, not
//!   even the home crate; `crabtalk-home` depends on nothing of ours;
//! - the folders are floors (`proto/`, `command/`, `daemon/`,
//!   `components/`, `crabup/`; RFC 0024): a crate's normal and build
//!   dependencies of ours are in its own folder or on a lower floor, read
//!   from `cargo metadata`. Tests and examples may use anything built.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The packages `package` links, by name.
fn linked(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "-p",
        ])
        .arg(package)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn assert_links_none(package: &str, forbidden: &[&str]) {
    let linked = linked(package);
    assert!(
        linked.contains(package),
        "{package} is not in its own tree: {linked:?}"
    );
    for name in forbidden {
        assert!(!linked.contains(*name), "{package} links {name}");
    }
}

#[test]
fn components_link_no_unit_templates() {
    for component in [
        "crabtalk-cron",
        "crabtalk-search",
        "crabtalk-telegram",
        "crabtalk-kit",
    ] {
        assert_links_none(component, &["askama", "crabtalk-command"]);
    }
    // The kit's service feature really is on for them: they serve MCP.
    assert!(linked("crabtalk-telegram").contains("rmcp"));
}

#[test]
fn crabup_links_no_http_server_and_no_mcp() {
    assert_links_none("crabup", &["axum", "rmcp"]);
    // …while it does use the gateway's own config type and the templates.
    let linked = linked("crabup");
    assert!(linked.contains("crabtalk-telegram") && linked.contains("askama"));
}

#[test]
fn the_daemon_serves_mcp_over_stdio_only() {
    // `crabtalkd mcp` speaks to its host over pipes; no HTTP server.
    assert_links_none("crabtalkd", &["axum"]);
    assert!(linked("crabtalkd").contains("rmcp"));
}

#[test]
fn the_tui_links_no_server_parts() {
    assert_links_none("crabtalk-tui", &["axum", "rmcp", "askama"]);
}

#[test]
fn the_wire_and_the_home_depend_on_nothing_of_ours() {
    for (package, own) in [
        ("crabtalk-proto", "crabtalk-proto"),
        ("crabtalk-home", "crabtalk-home"),
    ] {
        let ours: Vec<String> = linked(package)
            .into_iter()
            .filter(|name| name.starts_with("crabtalk") && name != own)
            .collect();
        assert!(ours.is_empty(), "{package} depends on {ours:?}");
    }
}

/// The folders that are floors, lowest first.
const FLOORS: [&str; 5] = ["proto", "command", "daemon", "components", "crabup"];

/// A crate's place: its folder relative to the workspace root and its
/// floor (`FLOORS.len()` for one outside the floors, the book's).
fn place(root: &Path, manifest_or_folder: &Path) -> (String, usize) {
    let folder = if manifest_or_folder.ends_with("Cargo.toml") {
        manifest_or_folder.parent().unwrap()
    } else {
        manifest_or_folder
    };
    let relative = folder
        .strip_prefix(root)
        .unwrap_or(folder)
        .to_string_lossy()
        .replace('\\', "/");
    let top = relative.split('/').next().unwrap_or_default().to_owned();
    let floor = FLOORS
        .iter()
        .position(|floor| *floor == top)
        .unwrap_or(FLOORS.len());
    (relative, floor)
}

/// Every normal or build dependency of a workspace crate on a crate of
/// ours that sits on a higher floor, as `crate (folder/) → dep (folder/)`.
fn upward_dependencies(metadata: &Value) -> Vec<String> {
    let root = Path::new(metadata["workspace_root"].as_str().unwrap());
    let mut upward = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let (folder, floor) = place(root, manifest);
        for dependency in package["dependencies"].as_array().unwrap() {
            if dependency["kind"].as_str() == Some("dev") {
                continue;
            }
            let Some(path) = dependency["path"].as_str() else {
                continue;
            };
            let (dep_folder, dep_floor) = place(root, Path::new(path));
            let same_folder = dep_folder.split('/').next() == folder.split('/').next();
            if dep_floor > floor && !same_folder {
                upward.push(format!(
                    "{} ({folder}/) depends on {} ({dep_folder}/), a higher floor",
                    package["name"].as_str().unwrap(),
                    dependency["name"].as_str().unwrap(),
                ));
            }
        }
    }
    upward
}

#[test]
fn dependencies_point_down_the_floors() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    assert!(
        packages.len() >= 15,
        "the whole workspace: {}",
        packages.len()
    );
    let upward = upward_dependencies(&metadata);
    assert!(upward.is_empty(), "{}", upward.join("\n"));
}

#[test]
fn a_dependency_up_a_floor_is_named_and_a_test_one_is_not() {
    // The arrow the tree had before RFC 0024: the daemon on the kit in
    // `components/`; and a kit test on the daemon's test kit.
    let metadata = serde_json::json!({
        "workspace_root": "/w",
        "packages": [
            {
                "name": "crabtalkd",
                "manifest_path": "/w/daemon/Cargo.toml",
                "dependencies": [
                    {"name": "crabtalk-kit", "kind": null, "path": "/w/components/kit"},
                    {"name": "crabtalk-bm25", "kind": null, "path": "/w/daemon/bm25"},
                    {"name": "crabtalk-proto", "kind": "build", "path": "/w/proto"},
                    {"name": "tokio", "kind": null}
                ]
            },
            {
                "name": "crabtalk-kit",
                "manifest_path": "/w/command/kit/Cargo.toml",
                "dependencies": [
                    {"name": "crabtalk-testkit", "kind": "dev", "path": "/w/daemon/testkit"}
                ]
            }
        ]
    });
    assert_eq!(
        upward_dependencies(&metadata),
        ["crabtalkd (daemon/) depends on crabtalk-kit (components/kit/), a higher floor"]
    );
}
