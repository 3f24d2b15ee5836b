//! Skills: `SKILL.md` files (the agentskills.io format) found under the
//! skill folders, in order.
//!
//! ```text
//! skills/
//!   check-feeds/SKILL.md
//!   writing/summarize/SKILL.md      nested folders are fine
//!   .drafts/…                       hidden folders are skipped
//! ```
//!
//! A skill's front matter names it and describes it; its body is the prompt.
//! Nothing is cached: every lookup walks the folders and every load reads the
//! file, so a skill edited or added on disk is used at once, without a
//! restart. When two folders hold a skill of the same name, the first folder
//! wins and the other is reported.
//!
//! Reported means logged, once: every walk finds the same problems again,
//! so a [`SkillDirs`] remembers what it last logged and logs only what is
//! new (a duplicate added on disk, say). The runtime walks once when it
//! starts and on every reload, so the log always has the current list.

mod front_matter;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use front_matter::{FrontMatter, FrontMatterError};
use parking_lot::Mutex;

/// How deep below a skill folder `SKILL.md` files are looked for.
const MAX_DEPTH: usize = 8;

/// Largest `SKILL.md` read.
const MAX_SKILL_FILE: u64 = 256 * 1024;

/// A skill found on disk (without its body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkillEntry {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
}

/// A skill with its body, read fresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    pub name: String,
    pub description: String,
    pub allowed_tools: Vec<String>,
    pub body: String,
    pub path: PathBuf,
}

/// What a walk of the skill folders found.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    pub skills: Vec<SkillEntry>,
    pub warnings: Vec<String>,
}

/// The skill folders, in priority order. Clones share what was logged.
#[derive(Debug, Clone)]
pub(crate) struct SkillDirs {
    dirs: Vec<PathBuf>,
    /// The warnings of the last walk, all of them logged by now.
    logged: Arc<Mutex<Vec<String>>>,
}

/// Whether `name` can be a skill name: letters, digits, `-`, `_`, `.` (not
/// first), nothing that could be a path.
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.contains("..")
}

impl SkillDirs {
    pub(crate) fn new(dirs: Vec<PathBuf>) -> Self {
        Self {
            dirs,
            logged: Arc::default(),
        }
    }

    /// Every skill, sorted by name; duplicates reported, first folder wins.
    /// Warnings this `SkillDirs` has not logged since they last appeared are
    /// logged now.
    pub(crate) fn discover(&self) -> Discovery {
        let discovery = self.walk();
        for warning in self.not_yet_logged(&discovery.warnings) {
            tracing::warn!("{warning}");
        }
        discovery
    }

    /// Of `warnings` (the latest walk's), those the previous walk did not
    /// have; remembers `warnings` as logged.
    fn not_yet_logged(&self, warnings: &[String]) -> Vec<String> {
        let mut logged = self.logged.lock();
        if *logged == warnings {
            return Vec::new();
        }
        let new = warnings
            .iter()
            .filter(|warning| !logged.contains(warning))
            .cloned()
            .collect();
        *logged = warnings.to_vec();
        new
    }

    fn walk(&self) -> Discovery {
        let mut discovery = Discovery::default();
        for dir in &self.dirs {
            let mut files = Vec::new();
            collect_skill_files(dir, 0, &mut files);
            files.sort();
            for path in files {
                match read_entry(&path) {
                    Ok(entry) => {
                        if let Some(first) = discovery.skills.iter().find(|s| s.name == entry.name)
                        {
                            discovery.warnings.push(format!(
                                "skill {:?} in {} is ignored: {} has the same name",
                                entry.name,
                                path.display(),
                                first.path.display()
                            ));
                        } else {
                            discovery.skills.push(entry);
                        }
                    }
                    Err(warning) => discovery.warnings.push(warning.to_string()),
                }
            }
        }
        discovery.skills.sort_by(|a, b| a.name.cmp(&b.name));
        discovery
    }

    /// The skill `name`, read fresh from disk.
    pub(crate) fn load(&self, name: &str) -> Option<Result<Skill, SkillError>> {
        if !is_valid_name(name) {
            return None;
        }
        let entry = self
            .discover()
            .skills
            .into_iter()
            .find(|skill| skill.name == name)?;
        Some(read_skill(&entry.path))
    }
}

fn collect_skill_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        // file_type does not follow symlinks: a symlinked folder is not
        // walked (no loops), a symlinked SKILL.md is read.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_skill_files(&entry.path(), depth + 1, out);
        } else if name == "SKILL.md" && depth > 0 {
            out.push(entry.path());
        }
    }
}

/// Why a skill file was skipped or could not be loaded; the text names the
/// file, as the log and the model read it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SkillError {
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is larger than {MAX_SKILL_FILE} bytes; skipped", path.display())]
    TooLarge { path: PathBuf },
    #[error("{}: {source}", path.display())]
    FrontMatter {
        path: PathBuf,
        source: FrontMatterError,
    },
    #[error(
        "{}: {name:?} is not a usable skill name (letters, digits, '-', '_', '.'); skipped",
        path.display()
    )]
    BadName { path: PathBuf, name: String },
}

fn read_text(path: &Path) -> Result<String, SkillError> {
    let unreadable = |source| SkillError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.len() > MAX_SKILL_FILE {
        return Err(SkillError::TooLarge {
            path: path.to_owned(),
        });
    }
    std::fs::read_to_string(path).map_err(unreadable)
}

/// The front matter and body of a skill file.
fn split<'a>(path: &Path, text: &'a str) -> Result<(FrontMatter, &'a str), SkillError> {
    FrontMatter::split(text).map_err(|source| SkillError::FrontMatter {
        path: path.to_owned(),
        source,
    })
}

/// The name a skill file declares, or its folder's name.
fn skill_name(path: &Path, front: &FrontMatter) -> Result<String, SkillError> {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned());
    let name = front.name.clone().or(folder).unwrap_or_default();
    if is_valid_name(&name) {
        Ok(name)
    } else {
        Err(SkillError::BadName {
            path: path.to_owned(),
            name,
        })
    }
}

fn read_entry(path: &Path) -> Result<SkillEntry, SkillError> {
    let text = read_text(path)?;
    let (front, _) = split(path, &text)?;
    Ok(SkillEntry {
        name: skill_name(path, &front)?,
        description: front.description.clone().unwrap_or_default(),
        path: path.to_owned(),
    })
}

fn read_skill(path: &Path) -> Result<Skill, SkillError> {
    let text = read_text(path)?;
    let (front, body) = split(path, &text)?;
    Ok(Skill {
        name: skill_name(path, &front)?,
        description: front.description.clone().unwrap_or_default(),
        allowed_tools: front.allowed_tools.clone(),
        body: body.trim().to_owned(),
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn discovery_walks_nested_folders_skips_hidden_and_warns_on_duplicates() {
        let root = tempfile::tempdir().unwrap();
        let first = root.path().join("first");
        let second = root.path().join("second");
        write(
            &first.join("summarize/SKILL.md"),
            "---\nname: summarize\ndescription: Summarise text\n---\nSay less.",
        );
        write(
            &first.join("writing/haiku/SKILL.md"),
            "---\ndescription: Write a haiku\n---\nFive, seven, five.",
        );
        write(
            &first.join(".drafts/secret/SKILL.md"),
            "---\nname: secret\n---\nhidden",
        );
        write(
            &second.join("summarize/SKILL.md"),
            "---\nname: summarize\n---\nthe other one",
        );
        write(&second.join("bad name/SKILL.md"), "no front matter");
        let dirs = SkillDirs::new(vec![first.clone(), second.clone()]);
        let found = dirs.discover();
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["haiku", "summarize"]);
        assert!(
            found.skills[1].path.starts_with(&first),
            "the first folder wins"
        );
        assert!(
            found.warnings.iter().any(|w| w.contains("same name")),
            "{:?}",
            found.warnings
        );
        assert!(
            found.warnings.iter().any(|w| w.contains("bad name")),
            "{:?}",
            found.warnings
        );

        let haiku = dirs.load("haiku").unwrap().unwrap();
        assert_eq!(
            (haiku.description.as_str(), haiku.body.as_str()),
            ("Write a haiku", "Five, seven, five.")
        );
        assert!(dirs.load("secret").is_none());
        assert!(dirs.load("../first/summarize").is_none());
    }

    #[test]
    fn a_warning_is_logged_when_it_appears_not_on_every_walk() {
        let root = tempfile::tempdir().unwrap();
        let (first, second) = (root.path().join("first"), root.path().join("second"));
        write(&first.join("a/SKILL.md"), "---\nname: a\n---\none");
        write(&second.join("a/SKILL.md"), "---\nname: a\n---\ntwo");
        let dirs = SkillDirs::new(vec![first, second.clone()]);
        let warnings = dirs.walk().warnings;
        assert_eq!(dirs.not_yet_logged(&warnings), warnings);
        assert!(dirs.not_yet_logged(&dirs.walk().warnings).is_empty());
        assert!(
            dirs.clone()
                .not_yet_logged(&dirs.walk().warnings)
                .is_empty(),
            "clones share what was logged"
        );
        // Gone, then back: logged again.
        std::fs::remove_file(second.join("a/SKILL.md")).unwrap();
        assert!(dirs.not_yet_logged(&dirs.walk().warnings).is_empty());
        write(&second.join("a/SKILL.md"), "---\nname: a\n---\ntwo");
        assert_eq!(dirs.not_yet_logged(&dirs.walk().warnings), warnings);
    }

    #[test]
    fn a_skill_edited_on_disk_is_read_fresh() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("s/greet/SKILL.md");
        write(&path, "---\nname: greet\n---\nSay hello.");
        let dirs = SkillDirs::new(vec![root.path().join("s")]);
        assert_eq!(dirs.load("greet").unwrap().unwrap().body, "Say hello.");
        write(&path, "---\nname: greet\n---\nSay goodbye.");
        assert_eq!(dirs.load("greet").unwrap().unwrap().body, "Say goodbye.");
    }
}
