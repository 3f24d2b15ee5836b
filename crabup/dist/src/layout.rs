//! The names in a release and the checksum file, as cargo-dist lays them
//! out (RFC 0016): `<program>-<target>.tar.xz` holding one folder of the
//! same name with the binary in it, `<archive>.sha256` beside it.

/// The folder inside the archive, and the archive's name without its
/// extension: `crabtalkd-x86_64-unknown-linux-gnu`.
pub fn root_folder(program: &str, target: &str) -> String {
    format!("{program}-{target}")
}

/// `crabtalkd-x86_64-unknown-linux-gnu.tar.xz`.
pub fn archive_name(program: &str, target: &str) -> String {
    format!("{}.tar.xz", root_folder(program, target))
}

/// The checksum file beside an archive: `<archive>.sha256`.
pub fn checksum_name(archive: &str) -> String {
    format!("{archive}.sha256")
}

/// The file name of `program`'s binary on `target` (`.exe` on Windows).
pub fn binary_name(program: &str, target: &str) -> String {
    if target.contains("windows") {
        format!("{program}.exe")
    } else {
        program.to_owned()
    }
}

/// The checksum file's text, as cargo-dist writes it: one `sha256sum`
/// line in binary mode (`<hex> *<file>`), then an empty line.
/// `sha256sum -c` and `shasum -a 256 -c` check it.
pub fn checksum_file(hex: &str, file: &str) -> String {
    format!("{hex} *{file}\n\n")
}

/// What a checksum file says was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumFileError {
    #[error("it is empty")]
    Empty,
    #[error("its first line does not start with 64 hex digits (a SHA-256): {0:?}")]
    NotSha256(String),
    #[error("it is for {named:?}, not for {expected:?}")]
    OtherFile { named: String, expected: String },
}

/// The SHA-256 (lowercase hex) a checksum file gives for `file`. Accepts
/// `sha256sum`'s text and binary lines (`<hex>  <file>`, `<hex> *<file>`)
/// and a bare digest; a line naming another file is refused.
pub fn parse_checksum_file(text: &str, file: &str) -> Result<String, ChecksumFileError> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .ok_or(ChecksumFileError::Empty)?;
    let (hex, rest) = line.split_at(line.find(char::is_whitespace).unwrap_or(line.len()));
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        let shown: String = line.chars().take(80).collect();
        return Err(ChecksumFileError::NotSha256(shown));
    }
    let named = rest.trim_start();
    let named = named.strip_prefix('*').unwrap_or(named);
    if !named.is_empty() && named != file {
        return Err(ChecksumFileError::OtherFile {
            named: named.chars().take(200).collect(),
            expected: file.to_owned(),
        });
    }
    Ok(hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn names_follow_the_program_and_target() {
        let target = "aarch64-apple-darwin";
        assert_eq!(
            root_folder("crabtalkd", target),
            "crabtalkd-aarch64-apple-darwin"
        );
        assert_eq!(
            archive_name("crabtalkd", target),
            "crabtalkd-aarch64-apple-darwin.tar.xz"
        );
        assert_eq!(
            checksum_name("crabup-x86_64-pc-windows-msvc.tar.xz"),
            "crabup-x86_64-pc-windows-msvc.tar.xz.sha256"
        );
        assert_eq!(
            binary_name("crabup", "x86_64-pc-windows-msvc"),
            "crabup.exe"
        );
        assert_eq!(binary_name("crabup", target), "crabup");
    }

    #[test]
    fn checksum_files_round_trip_in_every_sha256sum_form() {
        let file = "crabtalkd-x86_64-unknown-linux-gnu.tar.xz";
        let written = checksum_file(HEX, file);
        assert_eq!(written, format!("{HEX} *{file}\n\n"));
        assert_eq!(parse_checksum_file(&written, file).unwrap(), HEX);
        let text_mode = format!("{}  {file}\n", HEX.to_uppercase());
        assert_eq!(parse_checksum_file(&text_mode, file).unwrap(), HEX);
        assert_eq!(parse_checksum_file(HEX, file).unwrap(), HEX);
    }

    #[test]
    fn bad_checksum_files_say_what_is_wrong() {
        let file = "a.tar.xz";
        assert_eq!(
            parse_checksum_file("\n \n", file),
            Err(ChecksumFileError::Empty)
        );
        assert!(matches!(
            parse_checksum_file("<html>not found</html>", file),
            Err(ChecksumFileError::NotSha256(_))
        ));
        assert!(matches!(
            parse_checksum_file(&HEX[..60], file),
            Err(ChecksumFileError::NotSha256(_))
        ));
        assert_eq!(
            parse_checksum_file(&format!("{HEX} *b.tar.xz"), file),
            Err(ChecksumFileError::OtherFile {
                named: "b.tar.xz".into(),
                expected: file.into()
            })
        );
    }
}
