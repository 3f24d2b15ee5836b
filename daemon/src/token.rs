//! The TCP token: what every TCP client must send in `Hello`.
//!
//! Every TCP listener needs one, loopback included: any local user can
//! reach `127.0.0.1`, and the daemon runs commands as its own user. The
//! token is `[transport] token` when `config.toml` sets it; else a random
//! one (32 bytes from the operating system, hex) that the daemon makes on
//! its first start and keeps. Either way the daemon writes the token it
//! accepts to `run/token` (mode 0600, atomically), where local clients of
//! the same user read it; remote clients are given it by hand.
//!
//! A kept token is used again only if it is still private: a `run/token`
//! that other users can read, that is empty or that is not a token the
//! daemon would make is replaced by a new random one (with a warning).

use std::path::Path;

use crabtalk_home::Home;
use crabtalk_home::token::TokenFile;

pub(crate) use crabtalk_home::token::TokenError;

/// The token TCP clients must send: `configured` if set (the config check
/// has refused a blank one), else the one kept in `run/token`, made on the
/// first start. Written to `run/token` either way.
pub(crate) fn establish(home: &Home, configured: Option<&str>) -> Result<String, TokenError> {
    let path = home.token_file();
    let inspected = TokenFile::inspect(&path);
    let token = match configured {
        Some(token) => token.to_owned(),
        None => match kept(&path, &inspected) {
            Some(token) => token,
            None => crabtalk_home::token::new_token()?,
        },
    };
    let up_to_date = matches!(&inspected, TokenFile::Usable(current) if *current == token);
    if !up_to_date {
        crabtalk_home::write_atomic_private(&path, format!("{token}\n").as_bytes()).map_err(
            |source| TokenError::Write {
                path: path.clone(),
                source,
            },
        )?;
    }
    Ok(token)
}

/// The token kept in `path`, if it can be used again.
fn kept(path: &Path, inspected: &TokenFile) -> Option<String> {
    match inspected {
        TokenFile::Usable(token) => Some(token.clone()),
        TokenFile::Missing => None,
        TokenFile::NotPrivate => {
            tracing::warn!(
                "{} could be read by other users; making a new TCP token (clients of this user read the new one by themselves)",
                path.display()
            );
            None
        }
        TokenFile::Unusable => {
            tracing::warn!("{} holds no usable token; making a new one", path.display());
            None
        }
        TokenFile::Unreadable(err) => {
            tracing::warn!(
                "cannot read {}: {err}; making a new TCP token",
                path.display()
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(path).unwrap().permissions().mode() & 0o777
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            0o600
        }
    }

    #[test]
    fn a_random_token_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let first = establish(&home, None).unwrap();
        assert_eq!(first.len(), 2 * crabtalk_home::token::TOKEN_BYTES);
        assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            std::fs::read_to_string(home.token_file()).unwrap(),
            format!("{first}\n")
        );
        assert_eq!(mode(&home.token_file()), 0o600);
        assert_eq!(establish(&home, None).unwrap(), first);
        let other_home = tempfile::tempdir().unwrap();
        assert_ne!(
            establish(&Home::new(other_home.path()), None).unwrap(),
            first
        );
    }

    #[test]
    fn a_configured_token_wins_and_is_written_for_local_clients() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        establish(&home, None).unwrap();
        assert_eq!(establish(&home, Some("chosen")).unwrap(), "chosen");
        assert_eq!(
            std::fs::read_to_string(home.token_file()).unwrap(),
            "chosen\n"
        );
        assert_eq!(mode(&home.token_file()), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_token_others_could_read_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let first = establish(&home, None).unwrap();
        std::fs::set_permissions(home.token_file(), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let second = establish(&home, None).unwrap();
        assert_ne!(first, second);
        assert_eq!(mode(&home.token_file()), 0o600);
        // Blank is no token either.
        crabtalk_home::write_atomic_private(&home.token_file(), b" \n").unwrap();
        let third = establish(&home, None).unwrap();
        assert!(!third.is_empty() && third != second);
    }
}
