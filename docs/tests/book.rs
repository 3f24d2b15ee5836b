//! The repository's Markdown, read as a reader follows it: every relative
//! link (the book's `SUMMARY.md` entries included) resolves, and every
//! project RFC the code, the schema and the Markdown cite is in the book.

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("docs/ is inside the repository")
        .to_path_buf()
}

#[test]
fn every_relative_link_and_summary_entry_resolves() {
    let files = crabtalk_docs::markdown_files(&repository());
    let summary = repository().join("docs/src/SUMMARY.md");
    assert!(files.contains(&summary), "the book has a SUMMARY.md");
    assert!(
        crabtalk_docs::link_targets(&std::fs::read_to_string(&summary).unwrap()).len() > 10,
        "SUMMARY.md lists the book's pages"
    );
    let broken = crabtalk_docs::broken_links(&files);
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken
            .iter()
            .map(|b| format!("  {}: ({}) {}", b.file.display(), b.target, b.reason))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_rfc_cited_in_code_and_prose_is_in_the_book() {
    let root = repository();
    // The checker's own tests cite made-up numbers on purpose. The seeds'
    // own RFCs are cited as `seed RFC-0NNN`, which the check leaves alone.
    let sources: Vec<PathBuf> = crabtalk_docs::source_files(&root)
        .into_iter()
        .chain(crabtalk_docs::markdown_files(&root))
        .chain(crabtalk_docs::schema_files(&root))
        .filter(|file| !file.starts_with(root.join("docs/checks")))
        .collect();
    let missing = crabtalk_docs::uncited_rfcs(&sources, &root.join("docs/src/rfcs"));
    assert!(
        missing.is_empty(),
        "cited but not in docs/src/rfcs/:\n{}",
        missing
            .iter()
            .map(|m| format!("  {}:{}: RFC {}", m.file.display(), m.line, m.number))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_code_map_matches_the_tree() {
    let problems = crabtalk_docs::code_map_problems(&repository());
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's code map is not the tree:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_declared_dependency_is_used() {
    let unused = crabtalk_docs::unused_dependencies(&repository()).unwrap();
    assert!(
        unused.is_empty(),
        "declared but not named by the crate's code (remove them, or list them under \
         [package.metadata.unused-dependencies] ignored with the reason):\n{}",
        unused
            .iter()
            .map(|u| format!("  {}/Cargo.toml [{}] {}", u.folder, u.table, u.name))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
