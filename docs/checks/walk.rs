//! Finding the files to check under the repository root, skipping build
//! output and hidden folders.

use std::path::{Path, PathBuf};

/// Folders never looked into: build output, version control, dependencies.
const SKIPPED: &[&str] = &["target", "node_modules", "book"];

/// Every file under `root` whose name ends with one of `extensions`,
/// sorted.
fn files_with(root: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !SKIPPED.contains(&name.as_ref()) {
                    folders.push(path);
                }
            } else if extensions.iter().any(|ext| name.ends_with(ext)) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every Markdown file of the repository at `root`.
pub fn markdown_files(root: &Path) -> Vec<PathBuf> {
    files_with(root, &[".md"])
}

/// Every protobuf schema of the repository at `root`.
pub fn schema_files(root: &Path) -> Vec<PathBuf> {
    files_with(root, &[".proto"])
}

/// Every Rust source file of the repository at `root`.
pub fn source_files(root: &Path) -> Vec<PathBuf> {
    files_with(root, &[".rs"])
}
