//! The memory as an mdbook tree, for people (RFC 0020, "Dump and load").
//!
//! ```text
//! DIR/
//!   book.toml          written only when absent (`src = "."`); edits survive
//!   SUMMARY.md         the book's table of contents (ignored by load)
//!   notes/<name>.md    one file per Note
//!   archives/<name>.md one file per Archive
//! ```
//!
//! `<name>` is the entry name escaped by [`file_name`](crate::file_name), so
//! every name stays one file inside its folder. Each file is a metadata block
//! followed by the content, verbatim:
//!
//! ```text
//! <div id="meta">
//! <dl>
//!   <dt>Created</dt>
//!   <dd><time datetime="2026-04-14T10:23:45Z">2026-04-14T10:23:45Z</time></dd>
//!   <dt>Aliases</dt>
//!   <dd><ul><li>ship</li><li>release</li></ul></dd>
//! </dl>
//! </div>
//!
//! content...
//! ```
//!
//! Dump clears `notes/` and `archives/` and nothing else. Load reads and
//! checks the whole tree first (names, aliases, uniqueness, sizes, UTF-8) and
//! replaces the memory only when all of it is good; ids are assigned anew.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat};
use crabtalk_home::write_atomic;

use crate::entry::{Entry, EntryKind, MAX_CONTENT_BYTES, check_name};
use crate::error::MemoryError;
use crate::file_name;
use crate::store::{Memory, unix_now};

const KINDS: [EntryKind; 2] = [EntryKind::Note, EntryKind::Archive];
const META_OPEN: &str = "<div id=\"meta\">";
const META_CLOSE: &str = "</div>";
const BOOK_TOML: &str = "[book]\ntitle = \"Memory\"\nsrc = \".\"\n";

impl Memory {
    /// Writes the memory to `dir` as an mdbook tree. Returns the number of
    /// entry files written.
    pub fn dump(&self, dir: &Path) -> Result<usize, MemoryError> {
        // Work out every file first, so a name that cannot be dumped stops the
        // dump before anything is cleared.
        let mut files: Vec<(EntryKind, String, &Entry)> = Vec::with_capacity(self.len());
        let mut folded: HashMap<(EntryKind, String), &str> = HashMap::new();
        for entry in self.list() {
            let stem = file_name::encode(&entry.name);
            if stem.is_empty() || stem.len() > file_name::MAX_STEM_BYTES {
                return Err(MemoryError::tree(
                    dir,
                    format!(
                        "the entry {:?} has a name that cannot be a file name",
                        entry.name
                    ),
                ));
            }
            // Case-insensitive file systems (macOS, Windows) would merge these.
            if let Some(other) = folded.insert((entry.kind, stem.to_lowercase()), &entry.name) {
                return Err(MemoryError::tree(
                    dir,
                    format!(
                        "the entries {other:?} and {:?} differ only in case and would overwrite each other on some file systems; rename one",
                        entry.name
                    ),
                ));
            }
            files.push((entry.kind, stem, entry));
        }

        fs::create_dir_all(dir).map_err(|err| MemoryError::io(dir, err))?;
        let book = dir.join("book.toml");
        if !book.exists() {
            write_atomic(&book, BOOK_TOML.as_bytes()).map_err(|err| MemoryError::io(&book, err))?;
        }
        for kind in KINDS {
            let folder = dir.join(kind.folder());
            match fs::remove_dir_all(&folder) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(MemoryError::io(&folder, err)),
            }
            fs::create_dir(&folder).map_err(|err| MemoryError::io(&folder, err))?;
        }
        // Entry files are plain writes into folders this dump just created:
        // a crash part-way leaves a partial export that the next dump
        // replaces, never a damaged memory.
        for (kind, stem, entry) in &files {
            let path = dir.join(kind.folder()).join(format!("{stem}.md"));
            fs::write(&path, render_entry(entry)).map_err(|err| MemoryError::io(&path, err))?;
        }
        let summary = dir.join("SUMMARY.md");
        write_atomic(&summary, render_summary(&files).as_bytes())
            .map_err(|err| MemoryError::io(&summary, err))?;
        Ok(files.len())
    }

    /// Replaces the memory with the tree in `dir` (as written by
    /// [`dump`](Memory::dump), possibly edited). The tree is read and checked
    /// in full first; on any error the memory and its file are unchanged.
    /// Returns the number of entries loaded.
    pub fn load(&mut self, dir: &Path) -> Result<usize, MemoryError> {
        let entries = read_tree(dir)?;
        let count = entries.len();
        self.replace_all(entries)?;
        Ok(count)
    }
}

fn render_entry(entry: &Entry) -> String {
    let created = format_time(entry.created_at);
    let mut out = String::with_capacity(entry.content.len() + 256);
    out.push_str(META_OPEN);
    out.push_str("\n<dl>\n  <dt>Created</dt>\n");
    out.push_str(&format!(
        "  <dd><time datetime=\"{created}\">{created}</time></dd>\n"
    ));
    if !entry.aliases.is_empty() {
        out.push_str("  <dt>Aliases</dt>\n  <dd><ul>");
        for alias in &entry.aliases {
            out.push_str("<li>");
            out.push_str(&escape_html(alias));
            out.push_str("</li>");
        }
        out.push_str("</ul></dd>\n");
    }
    out.push_str("</dl>\n");
    out.push_str(META_CLOSE);
    out.push_str("\n\n");
    out.push_str(&entry.content);
    out
}

fn render_summary(files: &[(EntryKind, String, &Entry)]) -> String {
    let mut out = String::from("# Summary\n");
    for kind in KINDS {
        let title = match kind {
            EntryKind::Note => "Notes",
            EntryKind::Archive => "Archives",
        };
        let mut any = false;
        for (_, stem, entry) in files.iter().filter(|(k, _, _)| *k == kind) {
            if !any {
                out.push_str(&format!("\n# {title}\n\n"));
                any = true;
            }
            out.push_str(&format!(
                "- [{}]({}/{}.md)\n",
                escape_link_text(&entry.name),
                kind.folder(),
                escape_url_path(stem)
            ));
        }
    }
    out
}

/// Unix seconds as RFC 3339 UTC; seconds beyond chrono's range (only a
/// hand-made file has them) as plain digits, which load also accepts.
fn format_time(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|secs| DateTime::from_timestamp(secs, 0))
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_else(|| secs.to_string())
}

fn parse_time(text: &str) -> Option<u64> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    let t = DateTime::parse_from_rfc3339(text).ok()?;
    u64::try_from(t.timestamp()).ok()
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn unescape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let mut matched = false;
        for (entity, ch) in [
            ("&amp;", '&'),
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&quot;", '"'),
            ("&#39;", '\''),
        ] {
            if let Some(after) = rest.strip_prefix(entity) {
                out.push(ch);
                rest = after;
                matched = true;
                break;
            }
        }
        if !matched {
            out.push('&');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

fn escape_link_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if matches!(ch, '\\' | '[' | ']' | '*' | '_' | '`' | '<' | '>') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Percent-encodes a file stem for a Markdown link target (mdbook decodes it
/// back to the file name).
fn escape_url_path(stem: &str) -> String {
    let mut out = String::with_capacity(stem.len());
    for byte in stem.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Reads and checks a whole dump tree: entries ordered by creation time, then
/// kind, then name.
fn read_tree(dir: &Path) -> Result<Vec<Entry>, MemoryError> {
    if !dir.is_dir() {
        return Err(MemoryError::tree(dir, "not a directory"));
    }
    let folders: Vec<(EntryKind, PathBuf)> = KINDS
        .iter()
        .map(|kind| (*kind, dir.join(kind.folder())))
        .filter(|(_, path)| path.is_dir())
        .collect();
    if folders.is_empty() {
        return Err(MemoryError::tree(
            dir,
            "not a memory dump: it has neither notes/ nor archives/ (refusing to load it as an empty memory)",
        ));
    }

    let mut entries = Vec::new();
    // Every name and alias, to the file that claims it.
    let mut claimed: BTreeMap<String, PathBuf> = BTreeMap::new();
    let now = unix_now();
    for (kind, folder) in folders {
        let mut paths = Vec::new();
        for item in fs::read_dir(&folder).map_err(|err| MemoryError::io(&folder, err))? {
            let item = item.map_err(|err| MemoryError::io(&folder, err))?;
            let path = item.path();
            let file = item.file_name();
            let Some(file) = file.to_str() else {
                return Err(MemoryError::tree(path, "the file name is not UTF-8"));
            };
            // Escaped names never start with '.', so these are editor files.
            if file.starts_with('.') || !file.ends_with(".md") {
                continue;
            }
            if !item
                .file_type()
                .map_err(|err| MemoryError::io(&path, err))?
                .is_file()
            {
                return Err(MemoryError::tree(path, "expected a file"));
            }
            paths.push((path, file.trim_end_matches(".md").to_owned()));
        }
        paths.sort();
        for (path, stem) in paths {
            let entry = read_entry(&path, &stem, kind, now)?;
            for name in std::iter::once(&entry.name).chain(&entry.aliases) {
                if let Some(other) = claimed.insert(name.clone(), path.clone()) {
                    return Err(MemoryError::tree(
                        &path,
                        format!("the name {name:?} is also used by {}", other.display()),
                    ));
                }
            }
            entries.push(entry);
        }
    }
    entries.sort_by(|a, b| (a.created_at, a.kind, &a.name).cmp(&(b.created_at, b.kind, &b.name)));
    Ok(entries)
}

fn read_entry(path: &Path, stem: &str, kind: EntryKind, now: u64) -> Result<Entry, MemoryError> {
    let name = file_name::decode(stem).ok_or_else(|| {
        MemoryError::tree(
            path,
            "the file name is not a valid escaped entry name (a '%' must be followed by two hex digits forming UTF-8)",
        )
    })?;
    check_name(&name).map_err(|reason| {
        MemoryError::tree(path, format!("invalid entry name {name:?}: {reason}"))
    })?;
    let size = fs::metadata(path)
        .map_err(|err| MemoryError::io(path, err))?
        .len();
    // The metadata block adds a little to the content limit.
    if size > (MAX_CONTENT_BYTES + 64 * 1024) as u64 {
        return Err(MemoryError::tree(
            path,
            format!("the file is {size} bytes; an entry holds at most {MAX_CONTENT_BYTES} bytes"),
        ));
    }
    let bytes = fs::read(path).map_err(|err| MemoryError::io(path, err))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| MemoryError::tree(path, "the file is not valid UTF-8"))?;
    let (created_at, aliases, content) = match text.strip_prefix(META_OPEN) {
        None => (now, Vec::new(), text.clone()),
        Some(rest) => {
            let end = rest.find(META_CLOSE).ok_or_else(|| {
                MemoryError::tree(path, "the <div id=\"meta\"> block is not closed by </div>")
            })?;
            let meta = &rest[..end];
            let body = &rest[end + META_CLOSE.len()..];
            let created_at = match between(meta, "<time datetime=\"", "\"") {
                Some(value) => parse_time(value).ok_or_else(|| {
                    MemoryError::tree(
                        path,
                        format!("the created time {value:?} is not an RFC 3339 time like 2026-04-14T10:23:45Z"),
                    )
                })?,
                None => now,
            };
            let aliases = parse_aliases(meta);
            (created_at, aliases, strip_blank_line(body).to_owned())
        }
    };
    if content.len() > MAX_CONTENT_BYTES {
        return Err(MemoryError::tree(
            path,
            format!(
                "the content is {} bytes; an entry holds at most {MAX_CONTENT_BYTES} bytes",
                content.len()
            ),
        ));
    }
    let mut clean: Vec<String> = Vec::with_capacity(aliases.len());
    for alias in aliases {
        check_name(&alias).map_err(|reason| {
            MemoryError::tree(path, format!("invalid alias {alias:?}: {reason}"))
        })?;
        if alias != name && !clean.contains(&alias) {
            clean.push(alias);
        }
    }
    Ok(Entry {
        id: 0,
        name,
        content,
        aliases: clean,
        created_at,
        kind,
    })
}

/// The text between the first `open` and the next `close` in `text`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

/// The `<li>` items after `<dt>Aliases</dt>`, HTML-unescaped.
fn parse_aliases(meta: &str) -> Vec<String> {
    let Some(at) = meta.find("<dt>Aliases</dt>") else {
        return Vec::new();
    };
    let mut rest = &meta[at..];
    // Stop at the next <dt>, if any, so other fields are not read as aliases.
    if let Some(next) = rest[1..].find("<dt>") {
        rest = &rest[..next + 1];
    }
    let mut aliases = Vec::new();
    while let Some(item) = between(rest, "<li>", "</li>") {
        aliases.push(unescape_html(item.trim()));
        let consumed = rest.find("<li>").unwrap() + "<li>".len() + item.len() + "</li>".len();
        rest = &rest[consumed..];
    }
    aliases
}

/// Drops the line end after `</div>` and the blank line after it (LF or CRLF).
fn strip_blank_line(body: &str) -> &str {
    let mut body = body;
    for _ in 0..2 {
        if let Some(rest) = body.strip_prefix("\r\n") {
            body = rest;
        } else if let Some(rest) = body.strip_prefix('\n') {
            body = rest;
        } else {
            break;
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_entry_matches_the_rfc_block() {
        let entry = Entry {
            id: 3,
            name: "deploy".into(),
            content: "prod rollout steps ...\n".into(),
            aliases: vec!["ship".into(), "release".into()],
            created_at: 1_776_162_225,
            kind: EntryKind::Note,
        };
        let expected = "<div id=\"meta\">\n<dl>\n  <dt>Created</dt>\n  <dd><time datetime=\"2026-04-14T10:23:45Z\">2026-04-14T10:23:45Z</time></dd>\n  <dt>Aliases</dt>\n  <dd><ul><li>ship</li><li>release</li></ul></dd>\n</dl>\n</div>\n\nprod rollout steps ...\n";
        assert_eq!(render_entry(&entry), expected);
    }

    #[test]
    fn html_escapes_round_trip() {
        let text = "a <b> & \"c\" 'd' &amp; &bogus;";
        assert_eq!(unescape_html(&escape_html(text)), text);
    }

    #[test]
    fn times_round_trip_including_out_of_range_ones() {
        for secs in [0, 1_776_162_225, u64::MAX] {
            assert_eq!(parse_time(&format_time(secs)), Some(secs));
        }
        assert_eq!(parse_time("2026-04-14T12:23:45+02:00"), Some(1_776_162_225));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn summary_links_are_url_escaped() {
        let entry = Entry {
            id: 1,
            name: "a/b c".into(),
            content: String::new(),
            aliases: vec![],
            created_at: 0,
            kind: EntryKind::Note,
        };
        let stem = file_name::encode(&entry.name);
        let summary = render_summary(&[(EntryKind::Note, stem, &entry)]);
        assert_eq!(
            summary,
            "# Summary\n\n# Notes\n\n- [a/b c](notes/a%252Fb%20c.md)\n"
        );
    }
}
