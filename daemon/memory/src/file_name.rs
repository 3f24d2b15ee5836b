//! Entry names as file names for the dump, reversibly and safely.
//!
//! A name may hold anything but control characters, including `/`, `..` and
//! characters some file systems refuse. The file stem is the name with the
//! risky bytes written as `%XX` (upper-case hex):
//!
//! - `%` itself, so decoding is unambiguous;
//! - `/` and `\`, so a name never leaves its folder;
//! - `< > : " | ? *` and control characters, which Windows refuses;
//! - a leading `.` (no hidden files, no `.` or `..`), a trailing `.` or space
//!   (Windows strips them).
//!
//! Everything else, including non-ASCII text, stays as it is, so
//! `notes/deploy steps.md` and `notes/会议.md` read naturally.

/// The longest escaped stem, in bytes: with `.md` it stays under the common
/// 255-byte file-name limit.
pub const MAX_STEM_BYTES: usize = 250;

/// The file stem (without `.md`) for `name`.
pub fn encode(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    for (i, ch) in name.char_indices() {
        let at_start = i == 0;
        let at_end = i + ch.len_utf8() == bytes.len();
        let risky = match ch {
            '%' | '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*' => true,
            '.' => at_start || at_end,
            ' ' => at_end,
            c => c.is_control(),
        };
        if risky {
            let mut buf = [0u8; 4];
            for byte in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// The name a file stem stands for, or `None` when the stem is not a valid
/// escape (a `%` not followed by two hex digits, or bytes that are not UTF-8).
pub fn decode(stem: &str) -> Option<String> {
    // percent-encoding leaves a malformed escape as it is; a stem with one
    // was not written by `encode`, so it is refused first.
    let bytes = stem.as_bytes();
    let whole = bytes.iter().enumerate().all(|(at, &byte)| {
        byte != b'%'
            || bytes
                .get(at + 1..at + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !whole {
        return None;
    }
    percent_encoding::percent_decode_str(stem)
        .decode_utf8()
        .ok()
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_stay_single_components() {
        for name in [
            "../x",
            "a/b",
            "..",
            ".",
            "a\\b",
            "x/../../etc/passwd",
            ".hidden",
        ] {
            let stem = encode(name);
            assert!(!stem.contains('/') && !stem.contains('\\'), "{stem}");
            assert!(!stem.starts_with('.'), "{stem}");
            assert_eq!(decode(&stem).as_deref(), Some(name));
        }
        assert_eq!(encode("../x"), "%2E.%2Fx");
    }

    #[test]
    fn distinct_names_get_distinct_stems() {
        let names = ["a b", "a-b", "a/b", "a%2Fb", "a%b", "a.", "a", "会议"];
        let stems: std::collections::BTreeSet<_> = names.iter().map(|n| encode(n)).collect();
        assert_eq!(stems.len(), names.len());
        for name in names {
            assert_eq!(decode(&encode(name)).as_deref(), Some(name));
        }
        assert_eq!(encode("会议 notes"), "会议 notes");
    }

    #[test]
    fn bad_escapes_are_refused() {
        assert_eq!(decode("%"), None);
        assert_eq!(decode("%4"), None);
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%FF"), None); // not UTF-8
        assert_eq!(decode("%41b").as_deref(), Some("Ab"));
    }
}
