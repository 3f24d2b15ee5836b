//! `run/token`: the owner's credential.
//!
//! Loopback is no boundary: any local user can connect to `127.0.0.1`.
//! So every TCP port of the family — the daemon's listener and every
//! component's MCP endpoint — admits only callers that present the token
//! kept in `$CRABTALK_HOME/run/token`, a file only the owner can read
//! (0600 inside a 0700 home). Local programs of the owner read it from
//! there; nobody else can.
//!
//! The daemon decides the token (`[transport] token`, else a random one it
//! keeps) and writes it at every start; a component that starts first
//! creates a random one if none is there ([`ensure_token`]), which the
//! daemon then keeps. Whoever checks a presented token reads the file again
//! when it changed, so a token the daemon replaces stops working at once
//! everywhere. See RFC 0009.

use std::io;
use std::path::{Path, PathBuf};

use crate::Home;

/// Bytes of randomness in a token crabtalk makes (written as hex).
pub const TOKEN_BYTES: usize = 32;

/// The longest token accepted from the file (a configured one may be
/// longer than a made one, but not without bound).
const MAX_TOKEN_LEN: usize = 1024;

/// What is in a token file.
#[derive(Debug)]
pub enum TokenFile {
    /// A token only the owner can read.
    Usable(String),
    /// No file.
    Missing,
    /// The file can be read or written by other users.
    NotPrivate,
    /// Empty, too long, or with control characters: no token crabtalk would
    /// make or accept.
    Unusable,
    /// The file could not be read.
    Unreadable(io::Error),
}

impl TokenFile {
    /// Reads and judges the token file at `path`.
    pub fn inspect(path: &Path) -> Self {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Self::Missing,
            Err(err) if err.kind() == io::ErrorKind::InvalidData => return Self::Unusable,
            Err(err) => return Self::Unreadable(err),
        };
        if !private(path) {
            return Self::NotPrivate;
        }
        let token = text.trim();
        if usable(token) {
            Self::Usable(token.to_owned())
        } else {
            Self::Unusable
        }
    }
}

/// Why the owner's token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "there is no token in {path} yet: start the daemon (`crabup daemon start`) or a component once",
        path = path.display()
    )]
    Missing { path: PathBuf },
    #[error(
        "{path} can be read by other users, so it is no secret: run `chmod 600 {path}` and restart the daemon",
        path = path.display()
    )]
    NotPrivate { path: PathBuf },
    #[error("{path} holds no usable token: remove it and restart the daemon", path = path.display())]
    Unusable { path: PathBuf },
    #[error("cannot read {path}: {source}", path = path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}", path = path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot get random bytes for a token from the operating system: {0}")]
    Random(String),
}

/// The owner's token from `home`'s `run/token`, as a local client sends it.
pub fn read_token(home: &Home) -> Result<String, TokenError> {
    let path = home.token_file();
    match TokenFile::inspect(&path) {
        TokenFile::Usable(token) => Ok(token),
        TokenFile::Missing => Err(TokenError::Missing { path }),
        TokenFile::NotPrivate => Err(TokenError::NotPrivate { path }),
        TokenFile::Unusable => Err(TokenError::Unusable { path }),
        TokenFile::Unreadable(source) => Err(TokenError::Unreadable { path, source }),
    }
}

/// The owner's token, making a random one in `run/token` when there is
/// none yet (what a component does when it starts before the daemon ever
/// ran). Never replaces a file that is there: of two programs starting at
/// once, one creates it and both use that one.
pub fn ensure_token(home: &Home) -> Result<String, TokenError> {
    let path = home.token_file();
    if !matches!(TokenFile::inspect(&path), TokenFile::Missing) {
        return read_token(home);
    }
    let token = new_token()?;
    crate::create_private_dir(&home.run_dir()).map_err(|source| TokenError::Write {
        path: path.clone(),
        source,
    })?;
    crate::atomic::create_atomic_private(&path, format!("{token}\n").as_bytes())
        .map_err(|source| TokenError::Write { path, source })?;
    read_token(home)
}

/// A new random token: [`TOKEN_BYTES`] from the operating system, as hex.
pub fn new_token() -> Result<String, TokenError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|err| TokenError::Random(err.to_string()))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether `token` could be a token: not blank, bounded, no control
/// characters (it travels in a header and a `Hello`).
pub fn usable(token: &str) -> bool {
    !token.is_empty() && token.len() <= MAX_TOKEN_LEN && !token.chars().any(char::is_control)
}

/// Whether `presented` is `expected`, in time that does not depend on
/// where they first differ.
pub fn same_token(presented: &[u8], expected: &[u8]) -> bool {
    if presented.len() != expected.len() {
        return false;
    }
    presented
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

/// Whether only the owner may read or write `path` (a regular file).
fn private(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path)
            .is_ok_and(|meta| meta.file_type().is_file() && meta.mode() & 0o077 == 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_makes_the_token_once_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        assert!(matches!(read_token(&home), Err(TokenError::Missing { .. })));
        let first = ensure_token(&home).unwrap();
        assert_eq!(first.len(), 2 * TOKEN_BYTES);
        assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(ensure_token(&home).unwrap(), first);
        assert_eq!(read_token(&home).unwrap(), first);
        // One the daemon wrote is kept as it is.
        crate::write_atomic_private(&home.token_file(), b"chosen\n").unwrap();
        assert_eq!(ensure_token(&home).unwrap(), "chosen");
    }

    #[cfg(unix)]
    #[test]
    fn a_token_others_can_read_is_refused_not_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let token = ensure_token(&home).unwrap();
        std::fs::set_permissions(home.token_file(), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let err = ensure_token(&home).unwrap_err();
        assert!(matches!(err, TokenError::NotPrivate { .. }), "{err}");
        assert!(err.to_string().contains("chmod 600"), "{err}");
        assert_eq!(
            std::fs::read_to_string(home.token_file()).unwrap().trim(),
            token
        );
    }

    #[test]
    fn blank_and_control_characters_are_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        for text in [&b" \n"[..], b"a\x07b\n", &[b'x'; 2000]] {
            crate::write_atomic_private(&home.token_file(), text).unwrap();
            assert!(matches!(
                read_token(&home),
                Err(TokenError::Unusable { .. })
            ));
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abc", b"abd"));
        assert!(!same_token(b"ab", b"abc"));
        assert!(!same_token(b"", b"abc"));
    }
}
