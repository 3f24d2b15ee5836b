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
//!   even the home crate; `crabtalk-home` depends on nothing of ours.

use std::collections::BTreeSet;
use std::process::Command;

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
