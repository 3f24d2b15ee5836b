//! Project RFCs cited in code: `RFC 0NNN` must be a file
//! `docs/src/rfcs/0NNN-*.md`. The design seeds this project grew from
//! number their own RFCs in the same style; code cites this project's RFCs
//! only, which say where a seed's idea came from.

use std::path::{Path, PathBuf};

/// A citation of an RFC that is not in the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncitedRfc {
    pub file: PathBuf,
    pub line: usize,
    pub number: String,
}

/// The project RFC numbers cited in `text` with their 1-based lines:
/// `RFC ` followed by exactly four digits, the first a zero.
pub fn cited_rfcs(text: &str) -> Vec<(usize, String)> {
    let mut cited = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("RFC ") {
            let after = &rest[at + 4..];
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() == 4 && digits.starts_with('0') {
                cited.push((index + 1, digits));
            }
            rest = after;
        }
    }
    cited
}

/// Every citation in `files` of an RFC that `rfc_folder` does not hold.
pub fn uncited_rfcs(files: &[PathBuf], rfc_folder: &Path) -> Vec<UncitedRfc> {
    let written: Vec<String> = std::fs::read_dir(rfc_folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let exists = |number: &str| {
        written
            .iter()
            .any(|name| name.starts_with(&format!("{number}-")) && name.ends_with(".md"))
    };
    let mut missing = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (line, number) in cited_rfcs(&text) {
            if !exists(&number) {
                missing.push(UncitedRfc {
                    file: file.clone(),
                    line,
                    number,
                });
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_rfcs_are_told_from_ietf_ones() {
        let text = "// See RFC 0005 and RFC 0185.\n// Times are RFC 3339; RFC 012 is no number.\n";
        assert_eq!(
            cited_rfcs(text),
            [(1, "0005".to_owned()), (1, "0185".to_owned())]
        );
    }

    #[test]
    fn a_citation_without_its_file_is_reported() {
        let dir = std::env::temp_dir().join(format!("crabtalk-docs-rfcs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("rfcs")).unwrap();
        std::fs::write(dir.join("rfcs/0005-mcp-client.md"), "# 0005\n").unwrap();
        let source = dir.join("lib.rs");
        std::fs::write(&source, "//! RFC 0005\n\n//! RFC 0150\n").unwrap();
        let missing = uncited_rfcs(std::slice::from_ref(&source), &dir.join("rfcs"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            missing,
            [UncitedRfc {
                file: source,
                line: 3,
                number: "0150".into()
            }]
        );
    }
}
