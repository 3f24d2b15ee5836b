//! Asking a component's `GET /health`.
//!
//! A port that accepts a TCP connection only proves that something holds
//! it. Every component built on the kit answers `GET /health` next to
//! `/mcp` with a small JSON report ([`Health`]).
//!
//! [`check`] asks for it: one plain HTTP/1.1 request over a local TCP
//! connection, bounded in time and in size, so `crabup ps` can tell a
//! working service from a hung one or from a stranger on a recycled port.
//! It needs no HTTP client library (and so no TLS setup).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub use crabtalk_home::{HEALTH_PATH, Health};

/// How long [`check`] waits by default for the whole answer.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// The most [`check`] reads; a health answer is a few dozen bytes.
const MAX_ANSWER: usize = 16 * 1024;

/// Why a health check failed.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("the connection failed: {0}")]
    Io(std::io::Error),
    #[error("not an HTTP answer")]
    NotHttp,
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("answered more than {MAX_ANSWER} bytes")]
    TooLarge,
    #[error("the answer is not a health report: {0}")]
    Body(serde_json::Error),
    #[error(
        "it answers, but tells more only to the owner's token (run/token is missing or unreadable)"
    )]
    OnlyAlive,
}

/// Asks `127.0.0.1:port` for `GET /health` with `token` (the owner's, from
/// `run/token`), giving it `timeout` in all.
pub fn check(port: u16, token: Option<&str>, timeout: Duration) -> Result<Health, HealthError> {
    let deadline = Instant::now() + timeout;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(HealthError::Connect)?;
    let remaining = || {
        let left = deadline.saturating_duration_since(Instant::now());
        // A zero timeout means "block forever" to the socket.
        (!left.is_zero())
            .then_some(left)
            .ok_or(HealthError::TimedOut(timeout))
    };
    stream
        .set_write_timeout(Some(remaining()?))
        .map_err(HealthError::Io)?;
    // A token is one line of visible characters (crabtalk_home::token).
    let authorization = token
        .filter(|token| crabtalk_home::token::usable(token))
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET {HEALTH_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{authorization}Connection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|err| io_or_timeout(err, timeout))?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        stream
            .set_read_timeout(Some(remaining()?))
            .map_err(HealthError::Io)?;
        let read = stream
            .read(&mut chunk)
            .map_err(|err| io_or_timeout(err, timeout))?;
        if read == 0 {
            break;
        }
        if answer.len() + read > MAX_ANSWER {
            return Err(HealthError::TooLarge);
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    parse_answer(&answer)
}

fn io_or_timeout(err: std::io::Error, timeout: Duration) -> HealthError {
    match err.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            HealthError::TimedOut(timeout)
        }
        _ => HealthError::Io(err),
    }
}

/// The health report in a whole HTTP/1.1 answer (headers and body, with a
/// `Content-Length` body as axum sends it).
fn parse_answer(answer: &[u8]) -> Result<Health, HealthError> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or(HealthError::NotHttp)?;
    let head = std::str::from_utf8(&answer[..split]).map_err(|_| HealthError::NotHttp)?;
    let status_line = head.lines().next().unwrap_or_default();
    let mut words = status_line.split_whitespace();
    if !words.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return Err(HealthError::NotHttp);
    }
    let status: u16 = words
        .next()
        .and_then(|code| code.parse().ok())
        .ok_or(HealthError::NotHttp)?;
    if status != 200 {
        return Err(HealthError::Status(status));
    }
    let body = &answer[split + 4..];
    serde_json::from_slice(body).map_err(|err| {
        let alive_only = serde_json::from_slice::<serde_json::Value>(body)
            .is_ok_and(|value| value == serde_json::json!({ "ok": true }));
        if alive_only {
            HealthError::OnlyAlive
        } else {
            HealthError::Body(err)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed_and_anything_else_refused() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 48\r\n\r\n{\"service\":\"search\",\"version\":\"0.1.0\",\"pid\":42}";
        assert_eq!(
            parse_answer(ok).unwrap(),
            Health {
                service: "search".into(),
                version: "0.1.0".into(),
                pid: 42,
                problems: Vec::new(),
            }
        );
        assert!(matches!(
            parse_answer(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"),
            Err(HealthError::Status(404))
        ));
        assert!(matches!(
            parse_answer(b"SSH-2.0-OpenSSH_9.6\r\n"),
            Err(HealthError::NotHttp)
        ));
        assert!(matches!(
            parse_answer(b"HTTP/1.1 200 OK\r\n\r\n<html>"),
            Err(HealthError::Body(_))
        ));
        assert!(matches!(parse_answer(b""), Err(HealthError::NotHttp)));
        assert!(matches!(
            parse_answer(b"HTTP/1.1 200 OK\r\n\r\n{\"ok\":true}"),
            Err(HealthError::OnlyAlive)
        ));
    }

    #[test]
    fn a_port_that_accepts_but_never_answers_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // The kernel accepts the connection into the backlog; nobody reads.
        let started = Instant::now();
        let err = check(port, None, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, HealthError::TimedOut(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(listener);
    }
}
