//! Which modules of its crate a Rust file names, and so which files import
//! which (RFC 0045).
//!
//! A file is a module: `src/gateway/poller.rs` is `gateway::poller`,
//! `src/gateway/mod.rs` is `gateway`, `src/lib.rs` and `src/main.rs` are
//! the crate root. A path in a file names a module of the crate when it
//! starts with `crate::`, `super::` or `self::`, or with the name of one of
//! the file's child modules (`poller::run` in `gateway/mod.rs`); a `use`
//! tree's groups (`use crate::{a::b, c::{d, e}}`) are read entry by entry.
//! The module a path names is the longest start of it that is a file of the
//! crate: `crate::gateway::poller::run` names `gateway/poller.rs`,
//! `crate::gateway::Gateway` names `gateway/mod.rs`.
//!
//! A path from a file to itself or to one of its ancestors is no import: a
//! parent declares its children (`mod poller;`), so a child's
//! `super::Gateway` would otherwise make every parent and child a circle.
//! Every other path is one, a parent's path into its own child included.
//! Comments and string literals do not count; `$crate` (a macro's) does
//! not either.

use std::collections::BTreeMap;
use std::path::Path;

use crate::tokens::{Token, code_only, tokens};

/// The module path of a file, relative to its crate's source folder
/// (`/`-separated): `runtime/turn.rs` → `[runtime, turn]`,
/// `tools/bash/mod.rs` → `[tools, bash]`, `lib.rs` and `main.rs` → `[]`.
pub fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// A path written in a file, resolved from its crate's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    /// Every segment from the crate's root: `super::poller::run` in
    /// `gateway/inbound.rs` is `[gateway, poller, run]`.
    pub segments: Vec<String>,
    /// The 1-based line of each segment; segments the path did not spell
    /// (those `super` or `self` stand for) have the line of that word.
    pub lines: Vec<usize>,
    /// Whether it starts with a plain name (`poller::run`) rather than
    /// `crate`, `super` or `self`: it names a module only if a child of the
    /// file has that name.
    pub plain: bool,
}

/// One segment of a path as written, with its line.
type Segment = (String, usize);

/// Every path in `source` (the file `file`, relative to its crate's source
/// folder) that may name a module of the crate.
pub fn named_paths(file: &str, source: &str) -> Vec<NamedPath> {
    paths_in(&module_path(file), source)
}

/// [`named_paths`] of the source of the module `module`.
fn paths_in(module: &[String], source: &str) -> Vec<NamedPath> {
    let tokens = tokens(&code_only(source));
    let mut found = Vec::new();
    // Inline `mod name { … }` blocks open at this point, with the brace
    // depth inside each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let mut depth: usize = 0;
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        let previous = i.checked_sub(1).map(|p| &tokens[p].0);
        let starts_path = matches!(tokens.get(i + 1), Some((Token::PathSep, _)))
            && !matches!(
                previous,
                Some(Token::PathSep | Token::Punct('$') | Token::Punct('.'))
            );
        match token {
            Token::Punct('{') => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, open)| *open == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Token::Punct(';') => pending_mod = None,
            Token::Ident(word) if word == "mod" => {
                if let Some((Token::Ident(name), _)) = tokens.get(i + 1) {
                    pending_mod = Some(name.clone());
                }
            }
            Token::Ident(word) if starts_path => {
                let scope: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(name, _)| name.clone()))
                    .collect();
                let (paths, end) = path_tree(&tokens, i);
                let (base, skip, plain) = match word.as_str() {
                    "crate" => (Some(Vec::new()), 1, false),
                    "self" => (Some(scope), 1, false),
                    "super" => {
                        let climbs = tokens[i..]
                            .chunks(2)
                            .take_while(|pair| {
                                matches!(&pair[0].0, Token::Ident(w) if w == "super")
                                    && matches!(pair.get(1), Some((Token::PathSep, _)))
                            })
                            .count();
                        let base = scope
                            .len()
                            .checked_sub(climbs)
                            .map(|kept| scope[..kept].to_vec());
                        (base, climbs, false)
                    }
                    _ => (Some(scope), 0, true),
                };
                if let Some(base) = base {
                    for path in paths {
                        let Some(spelled) = path.get(skip..) else {
                            continue;
                        };
                        let mut lines = vec![*line; base.len()];
                        lines.extend(spelled.iter().map(|(_, line)| *line));
                        let mut segments = base.clone();
                        segments.extend(spelled.iter().map(|(name, _)| name.clone()));
                        found.push(NamedPath {
                            segments,
                            lines,
                            plain,
                        });
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The paths written from `tokens[at]` on (an identifier followed by
/// `::`), a `use` tree's groups expanded: `a::{b, c::{d, self}, e as f}`
/// is `a::b`, `a::c::d`, `a::c` and `a::e`. Returns them and the index
/// just past the path.
fn path_tree(tokens: &[(Token, usize)], at: usize) -> (Vec<Vec<Segment>>, usize) {
    let mut prefix: Vec<Segment> = Vec::new();
    let mut i = at;
    loop {
        match tokens.get(i) {
            Some((Token::Ident(name), line)) => {
                prefix.push((name.clone(), *line));
                i += 1;
            }
            Some((Token::Punct('{'), _)) => {
                let (entries, end) = group(tokens, i);
                let paths = entries
                    .into_iter()
                    .map(|entry| prefix.iter().cloned().chain(entry).collect())
                    .collect();
                return (paths, end);
            }
            // A glob names the module it is in.
            Some((Token::Punct('*'), _)) => return (vec![prefix], i + 1),
            _ => return (vec![prefix], i),
        }
        if matches!(tokens.get(i), Some((Token::PathSep, _))) {
            i += 1;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The entries of the `{…}` group at `tokens[at]`, each as the segments it
/// adds (`self` adds none), and the index just past the group.
fn group(tokens: &[(Token, usize)], at: usize) -> (Vec<Vec<Segment>>, usize) {
    let mut entries = Vec::new();
    let mut i = at + 1;
    while let Some((token, _)) = tokens.get(i) {
        match token {
            Token::Punct('}') => return (entries, i + 1),
            Token::Punct(',') => i += 1,
            Token::Ident(word) if word == "self" => {
                entries.push(Vec::new());
                i += 1;
            }
            Token::Ident(word) if word == "as" => i += 2,
            Token::Ident(_) | Token::Punct('{') | Token::Punct('*') => {
                let (paths, end) = if matches!(token, Token::Ident(_)) {
                    path_tree(tokens, i)
                } else if matches!(token, Token::Punct('{')) {
                    group(tokens, i)
                } else {
                    (vec![Vec::new()], i + 1)
                };
                entries.extend(paths);
                i = end.max(i + 1);
            }
            _ => i += 1,
        }
    }
    (entries, i)
}

/// A Rust file of a crate: how it is shown, its module path, its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The file as a report names it, e.g. `daemon/src/storage/log.rs`.
    pub shown: String,
    /// Its module path in its crate ([`module_path()`]).
    pub module: Vec<String>,
    pub text: String,
}

impl SourceFile {
    /// The file `file` (relative to its crate's source folder), shown as
    /// `shown`.
    pub fn new(shown: impl Into<String>, file: &str, text: impl Into<String>) -> Self {
        Self {
            shown: shown.into(),
            module: module_path(file),
            text: text.into(),
        }
    }
}

/// One file of a crate importing another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The importing file, as shown.
    pub from: String,
    /// The 1-based line of the path.
    pub line: usize,
    /// The imported file, as shown.
    pub to: String,
    /// The line, trimmed.
    pub text: String,
}

impl std::fmt::Display for Import {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.from, self.line, self.text)
    }
}

/// Every import between the files of one crate, in file order, one per
/// importing line and imported file.
pub fn file_imports(files: &[SourceFile]) -> Vec<Import> {
    let by_module: BTreeMap<&[String], &SourceFile> = files
        .iter()
        .map(|file| (file.module.as_slice(), file))
        .collect();
    let mut found: Vec<Import> = Vec::new();
    for file in files {
        let lines: Vec<&str> = file.text.lines().collect();
        for path in paths_in(&file.module, &file.text) {
            let Some(length) = (0..=path.segments.len())
                .rev()
                .find(|length| by_module.contains_key(&path.segments[..*length]))
            else {
                continue;
            };
            let target = &path.segments[..length];
            // Itself, or an ancestor that declares it: no import.
            if file.module.starts_with(target) {
                continue;
            }
            // A plain name that is no child of the file names no module.
            if path.plain && length <= file.module.len() {
                continue;
            }
            let line = path.lines[length - 1];
            let to = &by_module[target].shown;
            if found
                .iter()
                .any(|seen| seen.from == file.shown && seen.line == line && seen.to == *to)
            {
                continue;
            }
            found.push(Import {
                from: file.shown.clone(),
                line,
                to: to.clone(),
                text: lines.get(line - 1).map_or("", |l| l.trim()).to_owned(),
            });
        }
    }
    found
}

/// The Rust files of the crate in `folder` (relative to `root`, `/`
/// separated): everything under its `src/`, and under the folder of its
/// `[lib] path` when that is elsewhere (the book's checks are in
/// `checks/`). Shown relative to `root`.
pub fn crate_sources(root: &Path, folder: &str) -> Vec<SourceFile> {
    let mut source_folders = vec!["src".to_owned()];
    if let Some(lib) = std::fs::read_to_string(root.join(folder).join("Cargo.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|manifest| {
            manifest
                .get("lib")?
                .get("path")?
                .as_str()
                .map(str::to_owned)
        })
        && let Some((lib_folder, _)) = lib.rsplit_once('/')
        && !source_folders.iter().any(|f| f == lib_folder)
    {
        source_folders.push(lib_folder.to_owned());
    }
    let mut files = Vec::new();
    for source_folder in source_folders {
        let base = root.join(folder).join(&source_folder);
        for path in crate::walk::source_files(&base) {
            let Ok(relative) = path.strip_prefix(&base) else {
                continue;
            };
            let relative = relative.to_string_lossy().replace('\\', "/");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            files.push(SourceFile::new(
                format!("{folder}/{source_folder}/{relative}"),
                &relative,
                text,
            ));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(file: &str, source: &str) -> Vec<(Vec<String>, bool)> {
        named_paths(file, source)
            .into_iter()
            .map(|path| (path.segments, path.plain))
            .collect()
    }

    fn owned(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|part| (*part).to_owned()).collect()
    }

    #[test]
    fn module_paths_follow_the_files() {
        assert_eq!(module_path("runtime/turn.rs"), ["runtime", "turn"]);
        assert_eq!(module_path("tools/bash/mod.rs"), ["tools", "bash"]);
        assert!(module_path("lib.rs").is_empty());
        assert!(module_path("main.rs").is_empty());
    }

    #[test]
    fn paths_are_resolved_from_the_crate_root() {
        let source = "\
use crate::storage::log::SessionLog;
use super::poller;
use self::slash::register;
fn f() { super::super::x::y(); std::mem::drop(poller::run); }
mod tests {
    use super::super::inbox::Inbox;
}
";
        assert_eq!(
            segments("gateway/relay.rs", source),
            [
                (owned(&["storage", "log", "SessionLog"]), false),
                (owned(&["gateway", "poller"]), false),
                (owned(&["gateway", "relay", "slash", "register"]), false),
                (owned(&["x", "y"]), false),
                (owned(&["gateway", "relay", "std", "mem", "drop"]), true),
                (owned(&["gateway", "relay", "poller", "run"]), true),
                (owned(&["gateway", "inbox", "Inbox"]), false),
            ]
        );
    }

    #[test]
    fn use_trees_are_read_entry_by_entry() {
        let source = "use crate::{a::{b, c::{self, D}}, e as f, g::*};\n";
        assert_eq!(
            segments("lib.rs", source)
                .into_iter()
                .map(|(segments, _)| segments.join("::"))
                .collect::<Vec<_>>(),
            ["a::b", "a::c", "a::c::D", "e", "g"]
        );
    }

    #[test]
    fn macro_crate_paths_method_turbofish_and_too_many_supers_name_nothing() {
        let source = "\
macro_rules! m { () => { $crate::runtime::x } }
fn f() { x.poller::<u8>(); super::super::super::y(); }
";
        assert!(segments("a/b.rs", source).is_empty());
    }

    fn crate_of(files: &[(&str, &str)]) -> Vec<SourceFile> {
        files
            .iter()
            .map(|(file, text)| SourceFile::new(format!("x/src/{file}"), file, *text))
            .collect()
    }

    fn pairs(imports: &[Import]) -> Vec<(&str, usize, &str)> {
        imports
            .iter()
            .map(|i| (i.from.as_str(), i.line, i.to.as_str()))
            .collect()
    }

    #[test]
    fn a_path_names_the_deepest_file_it_reaches() {
        let files = crate_of(&[
            ("lib.rs", "pub mod gateway;\npub mod service;\n"),
            ("gateway/mod.rs", "pub mod poller;\n"),
            ("gateway/poller.rs", ""),
            (
                "service.rs",
                "use crate::gateway::poller::run;\nuse crate::gateway::Gateway;\n",
            ),
        ]);
        assert_eq!(
            pairs(&file_imports(&files)),
            [
                ("x/src/service.rs", 1, "x/src/gateway/poller.rs"),
                ("x/src/service.rs", 2, "x/src/gateway/mod.rs"),
            ]
        );
    }

    #[test]
    fn a_child_naming_its_parent_is_no_import_and_a_parent_naming_its_child_is() {
        let files = crate_of(&[
            ("lib.rs", "pub mod gateway;\nconst X: u8 = 1;\n"),
            (
                "gateway/mod.rs",
                "mod poller;\npub struct Gateway;\nfn f() { poller::run(); }\n",
            ),
            (
                "gateway/poller.rs",
                "use super::Gateway;\nuse crate::X;\npub fn run() {}\n",
            ),
        ]);
        assert_eq!(
            pairs(&file_imports(&files)),
            [("x/src/gateway/mod.rs", 3, "x/src/gateway/poller.rs")]
        );
    }

    #[test]
    fn grouped_entries_on_their_own_lines_are_named_at_their_lines() {
        let files = crate_of(&[
            ("a.rs", "use crate::{\n    b::B,\n    c::{C, self},\n};\n"),
            ("b.rs", ""),
            ("c.rs", ""),
        ]);
        let found = file_imports(&files);
        assert_eq!(
            pairs(&found),
            [
                ("x/src/a.rs", 2, "x/src/b.rs"),
                ("x/src/a.rs", 3, "x/src/c.rs")
            ]
        );
        assert_eq!(found[1].to_string(), "x/src/a.rs:3: c::{C, self},");
    }

    #[test]
    fn comments_and_strings_import_nothing() {
        let files = crate_of(&[
            (
                "a.rs",
                "// use crate::b::B;\n/// [`crate::b`]\nconst S: &str = \"crate::b::B\";\n",
            ),
            ("b.rs", ""),
        ]);
        assert!(file_imports(&files).is_empty());
    }
}
