//! Agent and sender names as file names.
//!
//! Every byte outside `[a-z0-9_-]` is percent-encoded (uppercase letters
//! too, so `Alice` and `alice` stay distinct on case-insensitive
//! filesystems). The result never contains `/`, `.` or anything a shell or a
//! filesystem treats specially, so `"a b"`, `"a-b"` and `"a/../b"` map to
//! distinct names that cannot leave their folder. Names whose encoding would
//! be too long for a file name keep a readable prefix and end in a hash.

use std::fmt::Write;

/// Longest encoded name used as-is; longer ones are shortened.
const MAX_ENCODED: usize = 180;

fn kept(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'_'
}

/// The file-name form of `name`.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for &byte in name.as_bytes() {
        if kept(byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    if out.is_empty() {
        // The empty name still needs a file name; "%" alone is never produced
        // by the loop above.
        return "%".into();
    }
    if out.len() <= MAX_ENCODED {
        return out;
    }
    // The encoding is ASCII, so any byte index is a char boundary; only a
    // %XX escape must not be split.
    let mut cut = MAX_ENCODED - 20;
    if let Some(escape) = out[..cut].rfind('%')
        && cut - escape < 3
    {
        cut = escape;
    }
    format!("{}~{:016x}", &out[..cut], fnv1a(name.as_bytes()))
}

/// Whether `encoded` could have been produced by [`encode`]: only kept
/// bytes, well-formed `%XX` escapes, and at most one `~hash` suffix. Used to
/// validate handles before they become paths.
pub fn is_encoded(encoded: &str) -> bool {
    if encoded == "%" {
        return true;
    }
    let (body, hash) = match encoded.split_once('~') {
        Some((body, hash)) => (body, Some(hash)),
        None => (encoded, None),
    };
    if let Some(hash) = hash
        && (hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return false;
    }
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            if !hex.is_some_and(|hex| {
                hex.iter()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_lowercase())
            }) {
                return false;
            }
            i += 3;
        } else if kept(bytes[i]) {
            i += 1;
        } else {
            return false;
        }
    }
    !body.is_empty() && encoded.len() <= MAX_ENCODED + 17
}

/// The name `encoded` stands for, when the encoding kept all of it (names
/// shortened with a hash cannot be decoded; their metadata has the name).
pub fn decode(encoded: &str) -> Option<String> {
    if encoded == "%" {
        return Some(String::new());
    }
    if !is_encoded(encoded) || encoded.contains('~') {
        return None;
    }
    // `is_encoded` has checked every escape, so decoding leaves none as is.
    percent_encoding::percent_decode_str(encoded)
        .decode_utf8()
        .ok()
        .map(String::from)
}

/// FNV-1a, 64 bits: a stable hash for shortened names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn similar_names_stay_distinct_and_safe() {
        let names = [
            "a b", "a-b", "a/b", "a/../b", "../../x", "A", "a", "a.b", "", "tg:123", "é",
        ];
        let encoded: Vec<String> = names.iter().map(|name| encode(name)).collect();
        let mut unique = encoded.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{encoded:?}");
        for e in &encoded {
            assert!(!e.contains('/') && !e.contains('.') && !e.is_empty(), "{e}");
            assert!(is_encoded(e), "{e}");
        }
        assert_eq!(encode("tg:123"), "tg%3A123");
    }

    #[test]
    fn long_names_are_shortened_but_distinct() {
        let a = encode(&"x".repeat(500));
        let b = encode(&format!("{}y", "x".repeat(499)));
        assert!(
            a.len() <= MAX_ENCODED && b.len() <= MAX_ENCODED,
            "{} {}",
            a.len(),
            b.len()
        );
        assert_ne!(a, b);
        assert!(is_encoded(&a));
        let c = encode(&"é".repeat(200));
        assert!(is_encoded(&c), "{c}");
    }

    #[test]
    fn handles_that_encode_could_not_produce_are_refused() {
        for bad in [
            "",
            "..",
            ".",
            "a/b",
            "a%2",
            "a%zz",
            "a%2f",
            "A",
            "a.b",
            "a~123",
            "x~zzzzzzzzzzzzzzzz",
        ] {
            assert!(!is_encoded(bad), "{bad:?}");
        }
    }

    #[test]
    fn decoding_reverses_encoding_except_for_shortened_names() {
        for name in ["crab", "Crab", "tg:123", "a b", "../x", "", "é会"] {
            assert_eq!(decode(&encode(name)).as_deref(), Some(name), "{name:?}");
        }
        assert_eq!(decode(&encode(&"x".repeat(500))), None);
        assert_eq!(decode("a%2"), None);
        assert_eq!(decode("A"), None);
    }

    proptest! {
        #[test]
        fn every_encoding_is_valid_and_injective(a in "\\PC{0,80}", b in "\\PC{0,80}") {
            let (ea, eb) = (encode(&a), encode(&b));
            prop_assert!(is_encoded(&ea));
            prop_assert!(!ea.contains('/') && !ea.contains('.'));
            if a != b {
                prop_assert_ne!(ea, eb);
            }
        }
    }
}
