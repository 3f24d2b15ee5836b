//! Replies too large to take, over stdio.
//!
//! A stdio server sends one JSON-RPC message per line. A line longer than
//! [`MAX_REPLY`] is not buffered: rmcp would drop it, and the call it
//! answers would wait for its whole timeout and then be reported as "did
//! not answer". Instead, [`guard_replies`] sits between the server's stdout
//! and rmcp, copying lines through; an oversized one is read to its end
//! without being kept, while a small scanner picks out the top-level `id`
//! (wherever it is in the line: servers put it before or after `result`).
//! In its place rmcp gets a JSON-RPC error answering that id — "reply too
//! large (N bytes …)" — so the call fails at once with the reason. An
//! oversized request or notification from the server (it has a `method`)
//! is only logged.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message taken from a stdio server. Tool output is cut to
/// 256 KiB before a model sees it anyway; this leaves room for big tool
/// lists, and stays under rmcp's own 16 MiB line limit.
pub(super) const MAX_REPLY: usize = 8 * 1024 * 1024;

/// The JSON-RPC error code of the answer put in place of an oversized reply
/// (the "internal error" of JSON-RPC 2.0).
const TOO_LARGE_CODE: i64 = -32603;

/// Copies messages from `from` (a server's stdout) to `to` (what rmcp
/// reads) until either ends, replacing lines over `limit` bytes as the
/// module says.
pub(crate) async fn guard_replies(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    limit: usize,
    server: &str,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut oversized: Option<Oversized> = None;
    loop {
        let read = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let mut rest = &chunk[..read];
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n');
            let piece = &rest[..end.map_or(rest.len(), |i| i + 1)];
            rest = &rest[piece.len()..];
            let complete = end.is_some();
            if oversized.is_none() && line.len() + piece.len() > limit {
                let mut over = Oversized::default();
                over.feed(&line);
                line = Vec::new();
                oversized = Some(over);
            }
            if let Some(over) = &mut oversized {
                over.feed(piece);
                if complete {
                    let replacement = over.replacement(limit, server);
                    oversized = None;
                    if let Some(replacement) = replacement
                        && to.write_all(&replacement).await.is_err()
                    {
                        return;
                    }
                }
                continue;
            }
            line.extend_from_slice(piece);
            if complete {
                if to.write_all(&line).await.is_err() {
                    return;
                }
                line.clear();
            }
        }
        if to.flush().await.is_err() {
            return;
        }
    }
    // An unfinished last line is passed on as it is; rmcp drops it.
    let _ = to.write_all(&line).await;
    let _ = to.shutdown().await;
}

/// A line being skipped: its length and what the scanner saw.
#[derive(Default)]
struct Oversized {
    len: usize,
    scan: TopLevelScan,
}

impl Oversized {
    fn feed(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        for &byte in bytes {
            self.scan.byte(byte);
        }
    }

    /// The error line that answers the skipped reply, if it was one. Its
    /// `id` is the reply's own text, byte for byte: read into a number and
    /// written again, an id too long for an integer could come back with
    /// another last digit, and then it answers no call.
    fn replacement(&self, limit: usize, server: &str) -> Option<Vec<u8>> {
        let len = self.len.saturating_sub(1);
        let id = self.scan.id.as_deref().filter(|raw| {
            serde_json::from_slice::<serde_json::Value>(raw)
                .is_ok_and(|id| id.is_string() || id.is_number())
        });
        // Valid JSON is UTF-8, so this only fails where `id` is `None`.
        let id = id.and_then(|raw| std::str::from_utf8(raw).ok());
        let Some(id) = id.filter(|_| !self.scan.has_method) else {
            tracing::warn!(
                "MCP server {server} sent a message of {len} bytes (the limit is {limit}); \
                 it was not an answer to a call, and was dropped"
            );
            return None;
        };
        tracing::warn!(
            "MCP server {server} answered request {id} with {len} bytes (the limit is {limit}); \
             the call fails"
        );
        let message = serde_json::Value::from(format!(
            "reply too large ({len} bytes; the daemon takes at most {limit} bytes from a stdio \
             MCP server)"
        ));
        let mut line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{TOO_LARGE_CODE},"message":{message}}}}}"#
        )
        .into_bytes();
        line.push(b'\n');
        Some(line)
    }
}

/// A streaming look at the top level of one JSON object, a byte at a time
/// in constant memory: the raw value of its `id` key and whether it has a
/// `method` key. Nested objects and arrays are skipped, so an `id` inside a
/// `result` is not mistaken for the message's own.
#[derive(Default)]
struct TopLevelScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The string being read at depth 1 (bounded; `None` when too long).
    string: Option<Vec<u8>>,
    /// The last finished string at depth 1: a key if a `:` follows.
    last_string: Option<Vec<u8>>,
    /// The key whose value is next.
    key: Option<Vec<u8>>,
    /// The raw `id` value while it is being read.
    capture: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    has_method: bool,
}

/// Longest key or `id` value looked at.
const MAX_TOKEN: usize = 256;

impl TopLevelScan {
    fn byte(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if let Some(capture) = &mut self.capture {
            // A number (or `null`) ends at the first byte that cannot be in it.
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.') {
                if capture.len() < MAX_TOKEN {
                    capture.push(byte);
                }
                return;
            }
            self.id = self.capture.take();
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 {
                    self.string = Some(Vec::new());
                    if self.value_of_id() {
                        self.capture = Some(vec![b'"']);
                    }
                }
            }
            b'{' | b'[' => {
                if self.depth == 1 {
                    self.key = None;
                }
                self.depth += 1;
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => {
                self.key = self.last_string.take();
                if self.key.as_deref() == Some(b"method") {
                    self.has_method = true;
                }
            }
            b',' if self.depth == 1 => {
                self.key = None;
                self.last_string = None;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                if self.value_of_id() {
                    self.capture = Some(vec![byte]);
                }
                if self.depth == 1 {
                    self.key = None;
                }
            }
        }
    }

    fn string_byte(&mut self, byte: u8) {
        if let Some(capture) = &mut self.capture
            && capture.len() < MAX_TOKEN
        {
            capture.push(byte);
        }
        let closing = !self.escaped && byte == b'"';
        self.escaped = !self.escaped && byte == b'\\';
        if !closing {
            if let Some(string) = &mut self.string {
                if string.len() < MAX_TOKEN {
                    string.push(byte);
                } else {
                    self.string = None;
                }
            }
            return;
        }
        self.in_string = false;
        if self.depth != 1 {
            return;
        }
        if self.capture.is_some() {
            self.id = self.capture.take();
            self.key = None;
            self.string = None;
        } else {
            // A key, or a value; a `:` next would make it a key.
            self.last_string = self.string.take();
            if self.key.is_some() {
                self.key = None;
            }
        }
    }

    /// Whether the next value is that of the top-level `id`.
    fn value_of_id(&self) -> bool {
        self.depth == 1 && self.capture.is_none() && self.key.as_deref() == Some(b"id")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn scan(text: &str) -> TopLevelScan {
        let mut scan = TopLevelScan::default();
        for byte in text.bytes() {
            scan.byte(byte);
        }
        scan
    }

    #[test]
    fn finds_the_top_level_id_wherever_it_is() {
        for (text, id) in [
            (r#"{"jsonrpc":"2.0","id":7,"result":{"id":99}}"#, "7"),
            (
                r#"{"result":{"id":99,"x":[1,{"id":5}]},"jsonrpc":"2.0","id":42}"#,
                "42",
            ),
            (
                r#"{ "id" : "req-\"1\"" , "result" : "}{" }"#,
                r#""req-\"1\"""#,
            ),
            (r#"{"result":"id","id":-3}"#, "-3"),
        ] {
            let found = scan(text);
            assert_eq!(found.id.as_deref(), Some(id.as_bytes()), "{text}");
            assert!(!found.has_method, "{text}");
        }
    }

    #[test]
    fn a_message_with_a_method_is_not_an_answer() {
        let found =
            scan(r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}"#);
        assert!(found.has_method);
        let found = scan(r#"{"jsonrpc":"2.0","result":{"method":"x"},"id":3}"#);
        assert!(
            !found.has_method,
            "a nested method key is not the message's"
        );
    }

    async fn run_guard(input: Vec<u8>, limit: usize) -> Vec<u8> {
        let (writer, mut reader) = tokio::io::duplex(1024);
        let guard = tokio::spawn(async move {
            guard_replies(&input[..], writer, limit, "test").await;
        });
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        guard.await.unwrap();
        out
    }

    #[tokio::test]
    async fn small_lines_pass_and_an_oversized_answer_becomes_an_error() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"text","text":"{}"}}]}},"id":5}}"#,
            "x".repeat(5000)
        );
        let input = format!(
            "{}\n{big}\n{}\n",
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#, r#"{"jsonrpc":"2.0","id":6,"result":{}}"#
        );
        let out = String::from_utf8(run_guard(input.into_bytes(), 1000).await).unwrap();
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["id"], 4);
        assert_eq!(lines[1]["id"], 5);
        let message = lines[1]["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("reply too large ({} bytes", big.len())),
            "{message}"
        );
        assert_eq!(lines[2]["id"], 6);
    }

    #[tokio::test]
    async fn an_id_too_long_for_an_integer_is_answered_with_its_own_digits() {
        // Found by the fuzzer (corpus/mcp_stdio_reply/id-of-32-digits): read
        // as a float and written again, this id came back as
        // 3.333333333333334e+31, and serde_json reads the reply's own id as
        // 3.3333333333333334e+31, so the error answered no call.
        let id = "3".repeat(32);
        let line = format!(
            r#"{{"jsonrpc":"2.0","result":{{"text":"{}"}},"id":{id}}}"#,
            "x".repeat(200)
        );
        let out = run_guard(format!("{line}\n").into_bytes(), 100).await;
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains(&format!(r#""id":{id},"#)), "{out}");
        let answer: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
        let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], reply["id"]);
        assert_eq!(answer["error"]["code"], TOO_LARGE_CODE);
    }

    proptest! {
        #[test]
        fn the_id_is_found_in_any_key_order_and_any_chunking(
            id in prop_oneof![any::<i32>().prop_map(|n| serde_json::json!(n)), "[a-z0-9\"\\\\]{1,12}".prop_map(|s| serde_json::json!(s))],
            id_first in any::<bool>(),
            filler in "[ -~]{0,300}",
            split in 1usize..64,
        ) {
            let result = serde_json::json!({"content": [{"type": "text", "text": filler, "id": 1}]});
            let text = if id_first {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
            } else {
                format!(r#"{{"result":{result},"jsonrpc":"2.0","id":{id}}}"#)
            };
            let mut over = Oversized::default();
            for piece in text.as_bytes().chunks(split) {
                over.feed(piece);
            }
            let raw = over.scan.id.clone().expect("an id");
            let found: serde_json::Value = serde_json::from_slice(&raw).unwrap();
            prop_assert_eq!(found, id);
        }
    }
}
