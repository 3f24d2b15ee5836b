//! The daemon's layers hold: no module imports one of a higher layer, and
//! the top-level modules import each other in no circle.
//!
//! The layers, lowest first (ARCHITECTURE.md, "Layers"; RFC 0041):
//!
//! | layer | modules |
//! |---|---|
//! | foundation | `private`, `token`, `lock`, `leftovers`, `config`, `storage`, `provider`, `memories`, `sessions`, `skills`, `bus` |
//! | tool contract | `hook` |
//! | capabilities | `tools`, `mcp` |
//! | runtime | `runtime` |
//! | edge | `server`, `process`, `subcommands`, `bridge`, `cli`, `fuzzing` |
//!
//! A module may name modules of its own layer or of lower ones. The test
//! reads every file under `daemon/src`, finds the paths it names into the
//! crate — `crate::x::…`, `use crate::{x, y}`, and `super::` paths that
//! climb out of their top-level module — and fails naming `file:line`, both
//! modules and the line itself. Comments and string literals do not count.
//! A new top-level module fails the test until it is given a layer here.
//! The wire's error type (`ErrorMsg`) may appear in the edge layer only.
//! The sources are read by `crabtalk-docs`' reader, the one that checks
//! every crate of the workspace for circles between files (RFC 0045);
//! this test looks at the same paths from the top-level modules.
//!
//! The checker is shown to work on synthetic sources in its own tests: for
//! example `use crate::runtime::Runtime;` added to `tools/delegate.rs` is
//! reported as
//!
//! ```text
//! daemon/src/tools/delegate.rs:2: tools (capabilities) imports runtime (runtime), a higher layer: use crate::runtime::Runtime;
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crabtalk_docs::{Token, circles, code_only, module_path, named_paths, tokens};

/// The layers, lowest first, and the top-level modules in each.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "private",
            "token",
            "lock",
            "leftovers",
            "config",
            "storage",
            "provider",
            "memories",
            "sessions",
            "skills",
            "bus",
        ],
    ),
    ("tool contract", &["hook"]),
    ("capabilities", &["tools", "mcp"]),
    ("runtime", &["runtime"]),
    (
        "edge",
        &[
            "server",
            "process",
            "subcommands",
            "bridge",
            "cli",
            "fuzzing",
        ],
    ),
];

/// One path from a module into another top-level module of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Import {
    /// The file, relative to `daemon/src`.
    file: String,
    line: usize,
    /// The top-level module the file belongs to.
    from: String,
    /// The top-level module it names.
    to: String,
    /// The source line, trimmed.
    text: String,
}

impl Import {
    fn place(&self) -> String {
        format!("daemon/src/{}:{}", self.file, self.line)
    }
}

/// The layer of every top-level module: its index in [`LAYERS`] and name.
fn layer_table() -> BTreeMap<&'static str, (usize, &'static str)> {
    let mut table = BTreeMap::new();
    for (rank, (layer, modules)) in LAYERS.iter().enumerate() {
        for module in *modules {
            table.insert(*module, (rank, *layer));
        }
    }
    table
}

// ---------------------------------------------------------------- imports

/// Every path in `source` (the file `file` under `daemon/src`) that leads
/// into another top-level module: `crate::x`, `use crate::{x, y}`, and
/// `super::` paths that climb out of their top-level module.
fn imports(file: &str, source: &str) -> Vec<Import> {
    let Some(top) = module_path(file).first().cloned() else {
        return Vec::new();
    };
    let lines: Vec<&str> = source.lines().collect();
    named_paths(file, source)
        .into_iter()
        // A plain path starts in its own module.
        .filter(|path| !path.plain)
        .filter_map(|path| {
            let to = path.segments.first()?;
            let line = path.lines[0];
            (*to != top).then(|| Import {
                file: file.to_owned(),
                line,
                from: top.clone(),
                to: to.clone(),
                text: lines.get(line - 1).map_or("", |l| l.trim()).to_owned(),
            })
        })
        .collect()
}

// ---------------------------------------------------------------- rules

/// Every import of a module of a higher layer, and every module that has
/// no layer, as messages naming `file:line`.
fn layer_violations(imports: &[Import]) -> Vec<String> {
    let table = layer_table();
    let mut problems = Vec::new();
    for import in imports {
        let (Some(&(from_rank, from_layer)), Some(&(to_rank, to_layer))) = (
            table.get(import.from.as_str()),
            table.get(import.to.as_str()),
        ) else {
            let unknown = if table.contains_key(import.from.as_str()) {
                &import.to
            } else {
                &import.from
            };
            problems.push(format!(
                "{}: module {unknown} has no layer; add it to LAYERS in daemon/tests/it/layers.rs \
                 and to ARCHITECTURE.md: {}",
                import.place(),
                import.text
            ));
            continue;
        };
        if to_rank > from_rank {
            problems.push(format!(
                "{}: {} ({from_layer}) imports {} ({to_layer}), a higher layer: {}",
                import.place(),
                import.from,
                import.to,
                import.text
            ));
        }
    }
    problems
}

/// A circle among the top-level modules, if there is one: each step with
/// one import that makes it.
fn circle(imports: &[Import]) -> Option<Vec<String>> {
    let first = circles(imports, |import| (import.from.as_str(), import.to.as_str()))
        .into_iter()
        .next()?;
    Some(
        first
            .into_iter()
            .map(|import| {
                format!(
                    "{} → {} ({}: {})",
                    import.from,
                    import.to,
                    import.place(),
                    import.text
                )
            })
            .collect(),
    )
}

// ---------------------------------------------------------------- the tree

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every import in the daemon's sources (the crate root and the binary
/// only declare and wire, and are not in a layer).
fn daemon_imports() -> Vec<Import> {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut all = Vec::new();
    for path in files {
        let file = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if file == "lib.rs" || file == "main.rs" {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        all.extend(imports(&file, &source));
    }
    all
}

#[test]
fn no_daemon_module_imports_a_higher_layer() {
    let imports = daemon_imports();
    assert!(
        imports.iter().any(|import| import.to == "hook"),
        "the checker found no import of hook at all; is it reading the sources?"
    );
    let problems = layer_violations(&imports);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_daemon_modules_import_each_other_in_no_circle() {
    if let Some(steps) = circle(&daemon_imports()) {
        panic!("a circle among the daemon's modules:\n{}", steps.join("\n"));
    }
}

/// Every mention of the wire's error type below the edge layer.
fn wire_errors_below_the_edge(file: &str, source: &str) -> Vec<String> {
    let table = layer_table();
    let edge = LAYERS.len() - 1;
    let top = module_path(file).first().cloned().unwrap_or_default();
    if table
        .get(top.as_str())
        .is_some_and(|(rank, _)| *rank == edge)
    {
        return Vec::new();
    }
    let lines: Vec<&str> = source.lines().collect();
    tokens(&code_only(source))
        .into_iter()
        .filter(|(token, _)| *token == Token::Ident("ErrorMsg".into()))
        .map(|(_, line)| {
            format!(
                "daemon/src/{file}:{line}: the wire's ErrorMsg below the edge ({top}); return \
                 runtime::Error and let server.rs translate: {}",
                lines[line - 1].trim()
            )
        })
        .collect()
}

#[test]
fn the_wire_error_type_stays_at_the_edge() {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for path in files {
        let file = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        problems.extend(wire_errors_below_the_edge(
            &file,
            &std::fs::read_to_string(&path).unwrap(),
        ));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn every_module_of_the_daemon_has_exactly_one_layer() {
    let root = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let declared: BTreeSet<String> = root
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            line.strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))
        })
        .map(|rest| rest.trim_end_matches(';').to_owned())
        .collect();
    let placed: Vec<&str> = LAYERS
        .iter()
        .flat_map(|(_, modules)| modules.iter().copied())
        .collect();
    let unique: BTreeSet<String> = placed.iter().map(|m| m.to_string()).collect();
    assert_eq!(placed.len(), unique.len(), "a module is in two layers");
    assert_eq!(
        declared, unique,
        "lib.rs declares these modules; LAYERS must place exactly them"
    );
}

// ---------------------------------------------------------------- the checker

#[test]
fn an_upward_import_is_reported_with_its_file_line_and_text() {
    let source = "use crate::hook::ToolSpec;\nuse crate::runtime::Runtime;\n";
    let problems = layer_violations(&imports("tools/delegate.rs", source));
    assert_eq!(
        problems,
        [
            "daemon/src/tools/delegate.rs:2: tools (capabilities) imports runtime (runtime), \
          a higher layer: use crate::runtime::Runtime;"
        ]
    );
}

#[test]
fn downward_and_internal_imports_pass() {
    let source =
        "use super::files::resolve;\nuse crate::hook::Chain;\nuse crate::tools::scope::Scope;\n";
    let found = imports("tools/delegate.rs", source);
    assert_eq!(
        found.iter().map(|i| i.to.as_str()).collect::<Vec<_>>(),
        ["hook"]
    );
    assert!(layer_violations(&found).is_empty());
}

#[test]
fn grouped_paths_and_full_paths_in_code_count() {
    let source = "\
use crate::{config::agent::AgentDef, server::DaemonServer};
fn f() {
    let x = crate::process::run;
}
";
    let found = imports("mcp/peer.rs", source);
    let named: Vec<(usize, &str)> = found.iter().map(|i| (i.line, i.to.as_str())).collect();
    assert_eq!(named, [(1, "config"), (1, "server"), (3, "process")]);
    assert_eq!(layer_violations(&found).len(), 2);
}

#[test]
fn super_paths_that_climb_out_of_their_module_count() {
    // From tools/bash/mod.rs, two `super`s reach the crate root.
    let found = imports("tools/bash/mod.rs", "use super::super::runtime::Runtime;\n");
    assert_eq!(found[0].to, "runtime");
    // Inside an inline `mod tests`, one more is needed.
    let source = "\
mod tests {
    use super::super::Tools;
    fn f() { super::super::super::server::VERSION; }
}
";
    let found = imports("tools/bash/mod.rs", source);
    assert_eq!(
        found
            .iter()
            .map(|i| (i.line, i.to.as_str()))
            .collect::<Vec<_>>(),
        [(3, "server")]
    );
}

#[test]
fn comments_strings_and_macros_do_not_count() {
    let source = r####"
// use crate::runtime::Runtime;
/* crate::server /* nested */ crate::process */
/// See [`crate::runtime`].
const QUOTE: char = '"';
const TEXT: &str = "crate::runtime::Runtime";
const RAW: &str = r#"crate::server "quoted""#;
macro_rules! m { () => { $crate::runtime::x } }
fn lifetime<'a>(x: &'a str) -> &'a str { x }
use crate::server::VERSION;
"####;
    let found = imports("config/mod.rs", source);
    assert_eq!(
        found
            .iter()
            .map(|i| (i.line, i.to.as_str()))
            .collect::<Vec<_>>(),
        [(10, "server")],
        "{found:#?}"
    );
}

#[test]
fn a_circle_is_reported_step_by_step() {
    let mut found = imports("mcp/mod.rs", "use crate::tools::Tools;\n");
    found.extend(imports("tools/mcp.rs", "use crate::mcp::McpHub;\n"));
    let steps = circle(&found).expect("mcp and tools import each other");
    assert_eq!(
        steps,
        [
            "mcp → tools (daemon/src/mcp/mod.rs:1: use crate::tools::Tools;)",
            "tools → mcp (daemon/src/tools/mcp.rs:1: use crate::mcp::McpHub;)",
        ]
    );
    assert!(circle(&found[1..]).is_none());
}

#[test]
fn the_wire_error_is_reported_below_the_edge_and_allowed_at_it() {
    let source = "//! Not `ErrorMsg` in a comment.\nfn f() -> Result<(), ErrorMsg> { todo!() }\n";
    let problems = wire_errors_below_the_edge("runtime/mod.rs", source);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(
            "daemon/src/runtime/mod.rs:2: the wire's ErrorMsg below the edge (runtime)"
        )
    );
    assert!(wire_errors_below_the_edge("server.rs", source).is_empty());
}

#[test]
fn a_module_without_a_layer_is_reported() {
    let problems = layer_violations(&imports("gadgets/mod.rs", "use crate::hook::Hook;\n"));
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with("daemon/src/gadgets/mod.rs:1: module gadgets has no layer"),
        "{}",
        problems[0]
    );
}
