//! HTTP/1.1 written by hand: one request on a fresh connection to a port
//! on 127.0.0.1, and the answer as it came.
//!
//! For the tests of a service's door, which must send exactly what a client
//! written from the specification would (no token, a wrong one, a foreign
//! `Origin`, a session id) and read the status and the headers unchanged,
//! where an HTTP or MCP client library would add, fix up or hide them.
//! Every request carries `Host`, `Content-Type: application/json`,
//! `Accept: application/json, text/event-stream` (what MCP's streamable
//! HTTP asks of a client), `Content-Length` and `Connection: close`, then
//! the headers given.
//!
//! ```no_run
//! use crabtalk_testkit::HttpRequest;
//!
//! # fn probe(port: u16, token: &str) {
//! let answer = HttpRequest::get(port, "/health").bearer(token).send();
//! assert_eq!(answer.status, 200, "{}", answer.head);
//! assert_eq!(answer.json()["ok"], true);
//! # }
//! ```

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use crate::PATIENCE;

/// A request to `127.0.0.1:<port>`: built, then sent with [`send`] (from
/// a plain thread) or [`send_async`] (from a runtime whose own tasks may be
/// the server).
///
/// [`send`]: HttpRequest::send
/// [`send_async`]: HttpRequest::send_async
#[derive(Debug, Clone)]
pub struct HttpRequest {
    port: u16,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpRequest {
    /// `method path` with an empty body.
    pub fn new(port: u16, method: &str, path: &str) -> Self {
        Self {
            port,
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// `GET path`.
    pub fn get(port: u16, path: &str) -> Self {
        Self::new(port, "GET", path)
    }

    /// `POST path` with the JSON `body` (a JSON-RPC message, for `/mcp`).
    pub fn post(port: u16, path: &str, body: &str) -> Self {
        Self::new(port, "POST", path).body(body)
    }

    /// The body sent.
    pub fn body(mut self, body: &str) -> Self {
        self.body = body.to_owned();
        self
    }

    /// One more header, sent as given.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// `Authorization: Bearer <token>`.
    pub fn bearer(self, token: &str) -> Self {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    /// The headers of a call in MCP session `id`: `Mcp-Session-Id` and
    /// `MCP-Protocol-Version` (the version the tests' `initialize` asks).
    pub fn mcp_session(self, id: &str) -> Self {
        self.header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-06-18")
    }

    /// The bytes that go on the wire.
    fn text(&self) -> String {
        let mut text = format!(
            "{} {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            self.method,
            self.path,
            self.port,
            self.body.len()
        );
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        text.push_str(&self.body);
        text
    }

    /// Sends the request and reads the answer to the end of the
    /// connection, blocking the thread; fails the test if the port refuses
    /// the connection or no whole answer comes within [`PATIENCE`].
    pub fn send(&self) -> HttpAnswer {
        let what = format!("{} {} on 127.0.0.1:{}", self.method, self.path, self.port);
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))
            .unwrap_or_else(|err| panic!("{what}: cannot connect: {err}"));
        stream
            .set_read_timeout(Some(PATIENCE))
            .and_then(|()| stream.set_write_timeout(Some(PATIENCE)))
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        stream
            .write_all(self.text().as_bytes())
            .unwrap_or_else(|err| panic!("{what}: cannot send: {err}"));
        let mut answer = Vec::new();
        let mut buffer = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!(
                        "timed out after {PATIENCE:?} waiting for the answer to {what}; so far:\n{}",
                        String::from_utf8_lossy(&answer)
                    )
                }
                // A server that answers before reading the whole request
                // (a refusal) may reset the connection after its answer.
                Err(_) if !answer.is_empty() => break,
                Err(err) => panic!("{what}: no answer: {err}"),
            }
        }
        HttpAnswer::parse(&answer)
    }

    /// [`send`](Self::send) on a blocking thread, so that a server running
    /// on this test's own runtime can answer.
    pub async fn send_async(self) -> HttpAnswer {
        match tokio::task::spawn_blocking(move || self.send()).await {
            Ok(answer) => answer,
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        }
    }
}

/// An answer: the status, the head (status line and headers) and the body,
/// with a chunked transfer encoding undone.
#[derive(Debug, Clone)]
pub struct HttpAnswer {
    /// The status code; 0 when the status line is not HTTP.
    pub status: u16,
    /// The status line and the headers, as sent.
    pub head: String,
    /// The body (the events of a `text/event-stream`, as text).
    pub body: String,
}

impl HttpAnswer {
    fn parse(bytes: &[u8]) -> Self {
        let split = bytes.windows(4).position(|w| w == b"\r\n\r\n");
        let (head, body) = match split {
            Some(at) => (&bytes[..at], &bytes[at + 4..]),
            None => (bytes, &[][..]),
        };
        let head = String::from_utf8_lossy(head).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let mut answer = Self {
            status,
            head,
            body: String::new(),
        };
        let chunked = answer
            .header("transfer-encoding")
            .is_some_and(|value| value.to_ascii_lowercase().contains("chunked"));
        let body = if chunked {
            dechunk(body).unwrap_or_else(|| body.to_vec())
        } else {
            body.to_vec()
        };
        answer.body = String::from_utf8_lossy(&body).into_owned();
        answer
    }

    /// The value of header `name` (any case), the first if sent twice.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }

    /// The body as JSON; fails the test with the whole answer if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|err| {
            panic!(
                "the body is not JSON ({err}):\n{}\n\n{}",
                self.head, self.body
            )
        })
    }
}

/// A chunked body's bytes; `None` if `body` is not chunked as RFC 9112
/// says (then the caller keeps it as it came).
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let line = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = line.split(';').next()?.trim();
        let size = usize::from_str_radix(size, 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size..)?.strip_prefix(b"\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_put_back_together() {
        let answer = HttpAnswer::parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nMcp-Session-Id: abc\r\n\r\n\
              5\r\ndata:\r\n7;ext=1\r\n {\"a\":1\r\n1\r\n}\r\n0\r\n\r\n",
        );
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, "data: {\"a\":1}");
        assert_eq!(answer.header("mcp-session-id"), Some("abc"));
        assert_eq!(answer.header("content-length"), None);
    }

    #[test]
    fn a_plain_body_and_a_broken_chunking_are_kept_as_they_came() {
        let plain = HttpAnswer::parse(b"HTTP/1.0 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno");
        assert_eq!((plain.status, plain.body.as_str()), (401, "no"));
        let broken =
            HttpAnswer::parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhi");
        assert_eq!(broken.body, "zz\r\nhi");
        let nothing = HttpAnswer::parse(b"");
        assert_eq!((nothing.status, nothing.body.as_str()), (0, ""));
    }

    #[tokio::test]
    async fn a_request_reaches_a_server_on_the_tests_own_runtime() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().route(
            "/echo",
            axum::routing::post(|headers: axum::http::HeaderMap, body: String| async move {
                let token = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                axum::Json(serde_json::json!({"token": token, "body": body}))
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let answer = HttpRequest::post(port, "/echo", "{}")
            .bearer("t0k")
            .send_async()
            .await;
        assert_eq!(answer.status, 200, "{}", answer.head);
        assert_eq!(
            answer.json(),
            serde_json::json!({"token": "Bearer t0k", "body": "{}"})
        );
        let missing = HttpRequest::get(port, "/nowhere").send_async().await;
        assert_eq!(missing.status, 404);
    }
}
