//! Whether an HTTP endpoint answers: a TCP connection to the host and port
//! of its URL, bounded by a timeout. What `crabup doctor` asks of each
//! provider's `base_url`.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long one connection attempt may take.
pub(crate) const REACH_TIMEOUT: Duration = Duration::from_secs(3);

/// The `host:port` of an `http://` or `https://` URL (default ports 80 and
/// 443), or why it has none.
pub(crate) fn authority(url: &str) -> Result<(String, u16), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} is not a URL (no scheme such as http://)"))?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        other => return Err(format!("{url:?} uses {other}://, not http:// or https://")),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{url:?} has an unclosed [ in its host"))?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    let port = match port {
        Some(port) => port
            .parse()
            .map_err(|_| format!("{url:?} has a bad port {port:?}"))?,
        None => default_port,
    };
    Ok((host.to_owned(), port))
}

/// Connects to `url`'s host and port; `Err` says why it does not answer.
pub(crate) fn answers(url: &str) -> Result<(), String> {
    let (host, port) = authority(url)?;
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|err| format!("cannot resolve {host}: {err}"))?
        .collect();
    let mut last = format!("{host} has no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, REACH_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(err) => last = format!("{addr}: {err}"),
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
        assert!(authority("localhost:11434").is_err());
        assert!(authority("ftp://x/").is_err());
        assert!(authority("http://:80/").is_err());
    }

    #[test]
    fn a_listening_port_answers_and_a_closed_one_does_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(answers(&format!("http://127.0.0.1:{port}/v1")).is_ok());
        drop(listener);
        let err = answers(&format!("http://127.0.0.1:{port}/v1")).unwrap_err();
        assert!(err.contains(&port.to_string()), "{err}");
    }
}
