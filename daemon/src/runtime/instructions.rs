//! `Crab.md` instructions: the global file in the home directory, then every
//! `Crab.md` found from the filesystem root down to the turn's working
//! directory (outermost first, so the closest file has the last word). Read
//! fresh on every turn, so edits apply at once.

use std::path::{Path, PathBuf};

use crabtalk_home::Home;

/// The file name looked for.
pub(crate) const FILE_NAME: &str = "Crab.md";

/// Largest instruction file read (bytes); longer files are cut.
const MAX_FILE: usize = 64 * 1024;

/// Most project files read from one working directory.
const MAX_PROJECT_FILES: usize = 8;

/// The instruction files that apply to `cwd`, in order.
pub(crate) fn files(home: &Home, cwd: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let global = home.instructions_file();
    if global.is_file() {
        found.push(global.clone());
    }
    let mut project: Vec<PathBuf> = cwd
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .filter(|path| path.is_file() && *path != global)
        .take(MAX_PROJECT_FILES)
        .collect();
    project.reverse();
    found.extend(project);
    found
}

/// The `<instructions>` block for `cwd`, or `None` when there are none.
pub(crate) fn block(home: &Home, cwd: &Path) -> Option<String> {
    let mut block = String::new();
    for path in files(home, cwd) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE)]).into_owned();
        if bytes.len() > MAX_FILE {
            text.push_str("\n[truncated]");
        }
        if text.trim().is_empty() {
            continue;
        }
        block.push_str(&format!(
            "<instructions source=\"{}\">\n{}\n</instructions>\n",
            path.display(),
            text.trim()
        ));
    }
    (!block.is_empty()).then_some(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_then_outermost_to_closest() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("home"));
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(home.instructions_file(), "global rules").unwrap();
        let project = dir.path().join("work").join("project");
        let nested = project.join("src");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(dir.path().join("work").join(FILE_NAME), "work rules").unwrap();
        std::fs::write(project.join(FILE_NAME), "project rules").unwrap();
        let text = block(&home, &nested).unwrap();
        let global = text.find("global rules").unwrap();
        let work = text.find("work rules").unwrap();
        let project = text.find("project rules").unwrap();
        assert!(global < work && work < project, "{text}");
        assert!(block(&Home::new(dir.path().join("none")), Path::new("/")).is_none());
    }
}
