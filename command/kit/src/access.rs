//! Who may call a component: the owner's processes, and no web page.
//!
//! A component listens on `127.0.0.1`, which every local user can reach,
//! and acts with the owner's rights (cron starts the owner's turns, the
//! gateway sends as the owner's bot, search spends the owner's keys). So
//! every request but a bare `GET /health` must carry
//! `Authorization: Bearer <token>` with the token in `run/token`, a file
//! only the owner can read ([`crabtalk_home::token`]); anything else gets
//! `401` before it reaches MCP, so a stranger never opens a session.
//!
//! A browser page can make a local request too (DNS rebinding, or a page
//! served on another port): a request whose `Origin` is not a loopback
//! origin gets `403`, as the MCP transport specification asks. Requests
//! without `Origin` (every non-browser client) pass that check.
//!
//! The token is read again whenever the file changes (checked with one
//! `stat` per request), so when the daemon replaces it the old one stops
//! working at once and the new one works without a restart.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use crabtalk_home::token::{TokenFile, same_token};
use crabtalk_home::{HEALTH_PATH, Home};

/// Marks a request that presented the owner's token (the health route
/// answers it in full).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Authenticated;

/// The owner's token as a component checks it.
#[derive(Debug)]
pub(crate) struct Credential {
    path: PathBuf,
    cached: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    stamp: Stamp,
    token: Option<String>,
}

/// What tells that the token file changed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

impl Stamp {
    fn of(path: &std::path::Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(&meta),
        })
    }
}

impl Credential {
    /// The credential of `home`: the token in its `run/token`.
    pub(crate) fn of(home: &Home) -> Self {
        Self {
            path: home.token_file(),
            cached: Mutex::new(None),
        }
    }

    /// Whether `presented` is the owner's token as `run/token` holds it now.
    /// A missing, unreadable or non-private file admits nobody.
    pub(crate) fn admits(&self, presented: &str) -> bool {
        let Some(stamp) = Stamp::of(&self.path) else {
            return false;
        };
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if cached.as_ref().is_none_or(|cached| cached.stamp != stamp) {
            let token = match TokenFile::inspect(&self.path) {
                TokenFile::Usable(token) => Some(token),
                TokenFile::NotPrivate => {
                    tracing::warn!(
                        "{} can be read by other users: refusing every caller until it is private again (chmod 600, then restart the daemon)",
                        self.path.display()
                    );
                    None
                }
                _ => None,
            };
            *cached = Some(Cached { stamp, token });
        }
        cached
            .as_ref()
            .and_then(|cached| cached.token.as_deref())
            .is_some_and(|token| same_token(presented.as_bytes(), token.as_bytes()))
    }
}

/// The token in an `Authorization: Bearer …` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether a browser `Origin` is one of this machine's loopback origins
/// (`http://localhost:…`, `http://127.0.0.1:…`, `http://[::1]:…`): a page
/// on another site, `null` and anything unparsable are foreign.
pub(crate) fn loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, port)) if port.is_empty() || valid_port(port) => host,
            _ => return false,
        }
    } else {
        match rest.split_once(':') {
            Some((host, port)) if valid_port(&format!(":{port}")) => host,
            Some(_) => return false,
            None => rest,
        }
    };
    matches!(
        host.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
}

fn valid_port(port: &str) -> bool {
    port.strip_prefix(':')
        .is_some_and(|digits| !digits.is_empty() && digits.parse::<u16>().is_ok())
}

/// The middleware in front of every route: foreign origins get 403, and
/// everything but `GET /health` needs the owner's token (401 without it).
pub(crate) async fn guard(
    State(credential): State<Arc<Credential>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(loopback_origin);
        if !allowed {
            return (
                StatusCode::FORBIDDEN,
                "requests from web pages of other origins are refused\n",
            )
                .into_response();
        }
    }
    let authenticated = bearer(request.headers()).is_some_and(|token| credential.admits(token));
    if authenticated {
        request.extensions_mut().insert(Authenticated);
        return next.run(request).await;
    }
    if request.uri().path() == HEALTH_PATH {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "this crabtalk component serves only its owner: send `Authorization: Bearer <token>` \
         with the token in $CRABTALK_HOME/run/token\n",
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"crabtalk\""),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_are_ours() {
        for ours in [
            "http://localhost",
            "http://localhost:6274",
            "http://127.0.0.1:8080",
            "https://LOCALHOST:1",
            "http://[::1]:3000",
            "http://[::1]",
        ] {
            assert!(loopback_origin(ours), "{ours}");
        }
        for foreign in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "http://evil.example:80@127.0.0.1",
            "null",
            "file://",
            "http://127.0.0.2",
            "http://localhost:99999",
            "http://localhost:",
            "http://[::1]x",
            "ftp://localhost",
        ] {
            assert!(!loopback_origin(foreign), "{foreign}");
        }
    }

    #[test]
    fn the_token_is_read_again_when_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let credential = Credential::of(&home);
        assert!(!credential.admits("anything"), "no file admits nobody");
        let first = crabtalk_home::token::ensure_token(&home).unwrap();
        assert!(credential.admits(&first));
        assert!(!credential.admits("wrong"));
        crabtalk_home::write_atomic_private(&home.token_file(), b"second-token\n").unwrap();
        assert!(credential.admits("second-token"));
        assert!(!credential.admits(&first), "a replaced token stops working");
        std::fs::remove_file(home.token_file()).unwrap();
        assert!(!credential.admits("second-token"));
    }

    #[test]
    fn bearer_is_read_case_insensitively() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer abc"),
        );
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
    }
}
