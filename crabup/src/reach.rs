//! Whether an HTTP endpoint answers: a TCP connection to the host and port
//! of its URL, bounded by a timeout. What `crabup doctor` asks of each
//! provider's `base_url`.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long one connection attempt may take.
pub(crate) const REACH_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a URL names no host and port to connect to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    #[error("{url:?} is not a URL (no scheme such as http://)")]
    NoScheme { url: String },
    #[error("{url:?} uses {scheme}://, not http:// or https://")]
    Scheme { url: String, scheme: String },
    #[error("{url:?} has an unclosed [ in its host")]
    UnclosedBracket { url: String },
    #[error("{url:?} has no host")]
    NoHost { url: String },
    #[error("{url:?} has a bad port {port:?}")]
    BadPort { url: String, port: String },
}

/// Why an endpoint does not answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreachable {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("cannot resolve {host}: {source}")]
    Unresolved {
        host: String,
        source: std::io::Error,
    },
    #[error("{host} has no address")]
    NoAddress { host: String },
    /// The last address tried, and why it refused.
    #[error("{addr}: {source}")]
    Refused {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The `host:port` of an `http://` or `https://` URL (default ports 80 and
/// 443), or why it has none.
pub(crate) fn authority(url: &str) -> Result<(String, u16), UrlError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| UrlError::NoScheme {
        url: url.to_owned(),
    })?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        other => {
            return Err(UrlError::Scheme {
                url: url.to_owned(),
                scheme: other.to_owned(),
            });
        }
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| UrlError::UnclosedBracket {
                url: url.to_owned(),
            })?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost {
            url: url.to_owned(),
        });
    }
    let port = match port {
        Some(port) => port.parse().map_err(|_| UrlError::BadPort {
            url: url.to_owned(),
            port: port.to_owned(),
        })?,
        None => default_port,
    };
    Ok((host.to_owned(), port))
}

/// Connects to `url`'s host and port; `Err` says why it does not answer.
pub(crate) fn answers(url: &str) -> Result<(), Unreachable> {
    let (host, port) = authority(url)?;
    let addrs: Vec<_> = match (host.as_str(), port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(source) => return Err(Unreachable::Unresolved { host, source }),
    };
    let mut last = Unreachable::NoAddress { host };
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, REACH_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(source) => last = Unreachable::Refused { addr, source },
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_host_and_port() {
        assert_eq!(
            authority("http://127.0.0.1:8080/v1").unwrap(),
            ("127.0.0.1".into(), 8080)
        );
        assert_eq!(
            authority("https://api.example.com/v1?x=1").unwrap(),
            ("api.example.com".into(), 443)
        );
        assert_eq!(
            authority("http://user:pw@[::1]:9/").unwrap(),
            ("::1".into(), 9)
        );
        assert_eq!(
            authority("localhost:11434"),
            Err(UrlError::NoScheme {
                url: "localhost:11434".into()
            })
        );
        assert_eq!(
            authority("ftp://x/").unwrap_err().to_string(),
            "\"ftp://x/\" uses ftp://, not http:// or https://"
        );
        assert!(matches!(
            authority("http://:80/"),
            Err(UrlError::NoHost { .. })
        ));
        assert!(matches!(
            authority("http://[::1/"),
            Err(UrlError::UnclosedBracket { .. })
        ));
        assert!(matches!(
            authority("http://h:port/"),
            Err(UrlError::BadPort { .. })
        ));
    }

    #[test]
    fn a_listening_port_answers_and_a_closed_one_does_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(answers(&format!("http://127.0.0.1:{port}/v1")).is_ok());
        drop(listener);
        let err = answers(&format!("http://127.0.0.1:{port}/v1")).unwrap_err();
        assert!(
            matches!(&err, Unreachable::Refused { addr, .. } if addr.port() == port),
            "{err}"
        );
        assert!(err.to_string().contains(&port.to_string()), "{err}");
    }
}
