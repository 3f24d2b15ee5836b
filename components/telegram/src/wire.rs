//! The Bot API on the wire: one method call over HTTP, its answer read as
//! Telegram's envelope (`{"ok": true, "result": …}` or `{"ok": false,
//! "error_code": …, "description": …, "parameters": {"retry_after": …,
//! "migrate_to_chat_id": …}}`), and every way that can fail kept apart
//! ([`CallError`]).
//!
//! The gateway reads the answers itself rather than through an HTTP
//! library's Bot API layer: such a layer may pause on its own (teloxide's
//! sleeps 10 s after any 5xx before it returns), which takes the timing
//! out of the gateway's hands and makes its log blame the wrong thing.
//! Here nothing waits but the request itself, bounded by its timeout; every
//! retry, pause and backoff is the caller's, and the error says what really
//! happened (the status, and the start of a body that is not JSON).
//!
//! Answers are read up to [`MAX_ANSWER`] bytes: a misbehaving server or
//! proxy cannot make the gateway hold more.

use std::time::Duration;

use serde_json::Value;

/// The most of an answer that is read (a full `getUpdates` is far less).
pub(crate) const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call did not return a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No answer: the connection failed, broke, or took too long.
    #[error("no answer ({0})")]
    Network(String),
    /// An answer that is not the Bot API's JSON: a proxy's error page, a
    /// body cut short, a server that is not the Bot API.
    #[error("{} with an answer that is not the Bot API's JSON: {body}", status_words(*.status))]
    NotJson { status: u16, body: String },
    /// Telegram answered `ok: false`.
    #[error("{code} {description}")]
    Refused {
        /// `error_code` (the HTTP status when it is missing).
        code: u16,
        description: String,
        /// `parameters.retry_after`: flood control, seconds to wait.
        retry_after: Option<u64>,
        /// `parameters.migrate_to_chat_id`: the group became this
        /// supergroup.
        migrate_to: Option<i64>,
    },
}

impl CallError {
    /// Whether the same call may well succeed later: no answer, a server
    /// error (5xx), or an answer that is not the Bot API's (a proxy in
    /// between, a body cut short). A refusal (4xx) is not; flood control
    /// has its own wait.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Network(_) | Self::NotJson { .. } => true,
            Self::Refused { code, .. } => *code >= 500,
        }
    }
}

/// `502 Bad Gateway`, or the bare number for a status without a name.
fn status_words(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(reason) => format!("{status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

/// A Bot API client for one token.
#[derive(Clone)]
pub struct BotClient {
    http: reqwest::Client,
    /// The base URL without a trailing `/`.
    base: String,
    token: String,
    /// How long a call may take unless it says otherwise.
    timeout: Duration,
}

impl BotClient {
    /// A client for `token` at `api_url`, whose calls take at most
    /// `timeout` unless [`BotClient::call_within`] says otherwise.
    pub fn new(api_url: &url::Url, token: &str, timeout: Duration) -> Self {
        // reqwest is built without a TLS provider of its own.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(4)
            .build()
            .expect("an HTTP client with the process's TLS provider");
        Self {
            http,
            base: api_url.as_str().trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            timeout,
        }
    }

    /// The Bot API's base URL.
    pub fn api_url(&self) -> &str {
        &self.base
    }

    /// Calls `method` with `params` (a JSON object); its `result`.
    pub async fn call(&self, method: &str, params: &Value) -> Result<Value, CallError> {
        self.call_within(method, params, self.timeout).await
    }

    /// [`BotClient::call`] that may take `timeout` (a long poll).
    pub async fn call_within(
        &self,
        method: &str,
        params: &Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let body = serde_json::to_vec(params).map_err(|err| CallError::Refused {
            code: 0,
            description: format!("the request could not be written: {err}"),
            retry_after: None,
            migrate_to: None,
        })?;
        let request = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(timeout)
            .send();
        let answer = async {
            let response = request.await.map_err(network)?;
            let status = response.status().as_u16();
            let bytes = read_bounded(response).await?;
            Ok::<_, CallError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(timeout, answer)
            .await
            .map_err(|_| CallError::Network(format!("nothing within {timeout:?}")))??;
        envelope(status, &bytes)
    }

    /// Starts downloading the file at `path` (from `getFile`); the
    /// response, its body not read yet.
    pub async fn download(&self, path: &str) -> Result<reqwest::Response, CallError> {
        let url = format!("{}/file/bot{}/{path}", self.base, self.token);
        let response = self.http.get(url).send().await.map_err(network)?;
        let status = response.status().as_u16();
        if status == 200 {
            return Ok(response);
        }
        let bytes = read_bounded(response).await?;
        Err(match envelope(status, &bytes) {
            Err(err) => err,
            Ok(_) => CallError::Refused {
                code: status,
                description: "the file could not be downloaded".into(),
                retry_after: None,
                migrate_to: None,
            },
        })
    }
}

/// A failure without an answer, in words; without the URL, which holds
/// the token.
fn network(err: reqwest::Error) -> CallError {
    CallError::Network(describe_network(&err.without_url()))
}

/// A network error in words, with its causes.
pub(crate) fn describe_network(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

/// The body, at most [`MAX_ANSWER`] bytes of it.
async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, CallError> {
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(network)? {
        if bytes.len() + chunk.len() > MAX_ANSWER {
            return Err(CallError::NotJson {
                status,
                body: format!("an answer larger than {} MiB", MAX_ANSWER / 1024 / 1024),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The Bot API's envelope read from an answer with `status` and `body`.
fn envelope(status: u16, body: &[u8]) -> Result<Value, CallError> {
    let not_json = || CallError::NotJson {
        status,
        body: snippet(body),
    };
    let Ok(Value::Object(mut answer)) = serde_json::from_slice::<Value>(body) else {
        return Err(not_json());
    };
    match answer.get("ok") {
        Some(Value::Bool(true)) => Ok(answer.remove("result").unwrap_or(Value::Bool(true))),
        Some(Value::Bool(false)) => {
            let parameters = answer.get("parameters");
            let number = |key: &str| parameters.and_then(|p| p.get(key));
            Err(CallError::Refused {
                code: answer
                    .get("error_code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .unwrap_or(status),
                description: answer
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("(no description)")
                    .to_owned(),
                retry_after: number("retry_after").and_then(Value::as_u64),
                migrate_to: number("migrate_to_chat_id").and_then(Value::as_i64),
            })
        }
        _ => Err(not_json()),
    }
}

/// The start of a body, on one line, for a log.
fn snippet(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty)".into();
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(400)]);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = line.chars().take(160).collect();
    if line.chars().count() > 160 || body.len() > 400 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_sorted_by_what_they_are() {
        assert_eq!(
            envelope(200, br#"{"ok":true,"result":{"message_id":5}}"#).unwrap()["message_id"],
            5
        );
        let flood = envelope(
            429,
            br#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#,
        )
        .unwrap_err();
        assert!(matches!(
            flood,
            CallError::Refused {
                code: 429,
                retry_after: Some(7),
                ..
            }
        ));
        assert!(!flood.is_transient());
        let gateway = envelope(
            502,
            b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body></html>",
        )
        .unwrap_err();
        assert!(gateway.is_transient());
        assert_eq!(
            gateway.to_string(),
            "502 Bad Gateway with an answer that is not the Bot API's JSON: <html> <head><title>502 Bad Gateway</title></head> <body>nginx</body></html>"
        );
        let server = envelope(
            500,
            br#"{"ok":false,"error_code":500,"description":"Internal Server Error"}"#,
        )
        .unwrap_err();
        assert!(server.is_transient());
        assert_eq!(server.to_string(), "500 Internal Server Error");
        for junk in [&b""[..], b"{\"ok\":tr", b"[1,2]", b"{\"result\":1}"] {
            let err = envelope(200, junk).unwrap_err();
            assert!(
                matches!(err, CallError::NotJson { status: 200, .. }),
                "{err}"
            );
            assert!(err.is_transient());
        }
        let moved = envelope(
            400,
            br#"{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1001}}"#,
        )
        .unwrap_err();
        assert!(matches!(
            moved,
            CallError::Refused {
                migrate_to: Some(-1001),
                ..
            }
        ));
        assert!(!moved.is_transient());
    }

    #[test]
    fn a_long_body_is_cut_for_the_log() {
        let long = "x".repeat(10_000);
        let err = envelope(503, long.as_bytes()).unwrap_err().to_string();
        assert!(
            err.starts_with("503 Service Unavailable with an answer"),
            "{err}"
        );
        assert!(err.ends_with('…') && err.len() < 300, "{err}");
    }
}
