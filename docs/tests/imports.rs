//! No two files of the workspace import each other in a circle, in any
//! crate (RFC 0045): every member's sources are read (`src/`, and the
//! book's `checks/`), and a circle fails the test named file by file, each
//! step with the `file:line` and the line that makes it.

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("docs/ is inside the repository")
        .to_path_buf()
}

/// Every circle among `imports`, file by file: each step with the
/// `file:line` and the line that makes it.
fn circles_told(imports: &[crabtalk_docs::Import]) -> Vec<String> {
    crabtalk_docs::circles(imports, |i| (i.from.as_str(), i.to.as_str()))
        .into_iter()
        .map(|circle| {
            circle
                .iter()
                .map(|import| format!("  {} → {}\n      {import}", import.from, import.to))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn no_files_of_the_workspace_import_each_other_in_a_circle() {
    let root = repository();
    let members = crabtalk_docs::workspace_crates(&root).expect("the workspace's Cargo.toml");
    let mut read = Vec::new();
    let mut imports = 0;
    let mut told = Vec::new();
    for member in &members {
        let sources = crabtalk_docs::crate_sources(&root, &member.folder);
        if !sources.is_empty() {
            read.push(member.folder.as_str());
        }
        let found = crabtalk_docs::file_imports(&sources);
        imports += found.len();
        told.extend(circles_told(&found));
    }
    for folder in [
        "proto",
        "daemon",
        "command/kit",
        "components/fuzz/oracles",
        "docs",
    ] {
        assert!(
            read.contains(&folder),
            "no sources read for {folder}/; is the checker reading the tree? read: {read:?}"
        );
    }
    assert!(
        imports > 500,
        "only {imports} imports between files found; is the checker reading the sources?"
    );
    assert!(
        told.is_empty(),
        "{} import circles between files; break each by moving what both sides need to a \
         lower file or by passing it in:\n{}",
        told.len(),
        told.join("\n\n")
    );
}

#[test]
fn a_circle_is_told_file_by_file_and_a_parent_with_its_child_is_none() {
    let files = [
        ("lib.rs", "mod gateway;\nmod service;\n"),
        (
            "service.rs",
            "// use crate::tools::Tools;\nuse crate::gateway::poller;\npub struct Problems;\n",
        ),
        (
            "gateway/mod.rs",
            "pub mod poller;\npub struct Gateway;\nfn f() { poller::run(); }\n",
        ),
        (
            "gateway/poller.rs",
            "use super::Gateway;\nconst S: &str = \"crate::gateway\";\n\
             pub fn run(p: crate::service::Problems) {}\n",
        ),
    ]
    .map(|(file, text)| crabtalk_docs::SourceFile::new(format!("x/src/{file}"), file, text));
    let imports = crabtalk_docs::file_imports(&files);
    assert_eq!(
        circles_told(&imports),
        ["  x/src/gateway/poller.rs → x/src/service.rs\n      \
          x/src/gateway/poller.rs:3: pub fn run(p: crate::service::Problems) {}\n  \
          x/src/service.rs → x/src/gateway/poller.rs\n      \
          x/src/service.rs:2: use crate::gateway::poller;"]
    );
    // Without the poller's path to the service, the parent and its child
    // (which name each other) make no circle.
    let parent_and_child: Vec<_> = imports
        .into_iter()
        .filter(|i| i.to != "x/src/service.rs")
        .collect();
    assert!(circles_told(&parent_and_child).is_empty());
}
