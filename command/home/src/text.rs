//! Files people write by hand (configuration): read as UTF-8, and when
//! they are not, the place of the first byte that is not, so the refusal
//! points at it like any other problem in the file.

/// Bytes that are not UTF-8 text, and where that starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {byte:#04x} is not UTF-8 text; save the file as UTF-8")]
pub struct NotUtf8 {
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// The first bad byte.
    pub byte: u8,
}

/// `bytes` as text, or where they stop being UTF-8.
pub fn utf8_text(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    String::from_utf8(bytes).map_err(|err| {
        let bytes = err.as_bytes();
        let valid = err.utf8_error().valid_up_to();
        let before = std::str::from_utf8(&bytes[..valid]).expect("valid up to here");
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        NotUtf8 {
            line,
            column,
            byte: bytes[valid],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bad_byte_is_placed_by_line_and_character() {
        assert_eq!(utf8_text(b"a = 1\n".to_vec()), Ok("a = 1\n".to_owned()));
        let err = utf8_text(b"a = 1\nb = \"\xc3\xa9\xff\"\n".to_vec()).unwrap_err();
        assert_eq!((err.line, err.column, err.byte), (2, 7, 0xff));
        assert_eq!(
            err.to_string(),
            "byte 0xff is not UTF-8 text; save the file as UTF-8"
        );
        // A sequence cut short at the end of the file.
        let err = utf8_text(b"x\xe2\x82".to_vec()).unwrap_err();
        assert_eq!((err.line, err.column, err.byte), (1, 2, 0xe2));
    }
}
