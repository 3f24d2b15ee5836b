//! An MCP client for the owner's components on loopback, over plain
//! HTTP/1.1 on `hyper`: no reqwest, no TLS stack (RFC 0018).
//!
//! A component serves MCP on `127.0.0.1:<port>` (see [`crate::mcp`]), so a
//! program that only ever talks to components, such as cron calling
//! `telegram_send` or `crabtalk-cron run` calling the service's `cron_run`,
//! needs neither a connection pool nor HTTPS. [`LoopbackHttp`] implements
//! `rmcp`'s [`StreamableHttpClient`] with one connection per request and
//! refuses any address that is not loopback: the owner's token goes in
//! clear text, so it must never leave the machine. [`owner_transport`]
//! is the whole set-up.
//!
//! Bodies are bounded as `rmcp`'s own clients bound them: a JSON answer to
//! 16 MiB, an error's body to 64 KiB (only read for its message), one event
//! of an event stream to the transport's `max_sse_event_size`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyDataStream, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, ServerJsonRpcMessage,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use crabtalk_home::Home;

/// The most a successful JSON answer may take.
pub const MAX_JSON_BODY: usize = 16 * 1024 * 1024;
/// The most of a refusal's body that is read, for its message.
pub const MAX_ERROR_BODY: usize = 64 * 1024;
/// One event of a stream, when the caller gives no limit of its own.
pub const MAX_EVENT: usize = 16 * 1024 * 1024;

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// Why a request to a component on loopback failed.
#[derive(Debug, thiserror::Error)]
pub enum LoopbackError {
    #[error(
        "{uri} is not an http:// URL on a loopback address; the owner's token stays on this machine"
    )]
    NotLoopback { uri: String },
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("HTTP to {addr} failed: {source}")]
    Http {
        addr: SocketAddr,
        source: hyper::Error,
    },
    #[error("cannot build the request: {0}")]
    Request(#[from] http::Error),
    #[error("the header {0} is set by the client itself")]
    ReservedHeader(HeaderName),
    #[error("an event of the stream is larger than {max} bytes")]
    EventTooLarge { max: usize },
}

impl From<LoopbackError> for StreamableHttpError<LoopbackError> {
    fn from(err: LoopbackError) -> Self {
        StreamableHttpError::Client(err)
    }
}

type Failure = StreamableHttpError<LoopbackError>;

/// `rmcp`'s HTTP side for components on loopback (see the module).
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopbackHttp;

/// An `rmcp` client transport to the component that announced `port` in
/// `home`, with the owner's token from `run/token`: `().serve(transport)`.
pub fn owner_transport(
    home: &Home,
    port: u16,
) -> Result<StreamableHttpClientTransport<LoopbackHttp>, crabtalk_home::token::TokenError> {
    let config = crate::mcp::owner_client_config(home, port)?;
    Ok(StreamableHttpClientTransport::with_client(
        LoopbackHttp,
        config,
    ))
}

/// The address and request target of `uri`, if it is plain HTTP on a
/// loopback address.
fn loopback_target(uri: &str) -> Result<(SocketAddr, Uri), LoopbackError> {
    let refused = || LoopbackError::NotLoopback {
        uri: uri.to_owned(),
    };
    let parsed: Uri = uri.parse().map_err(|_| refused())?;
    if parsed.scheme_str() != Some("http") {
        return Err(refused());
    }
    let authority = parsed.authority().ok_or_else(refused)?;
    let host = authority.host();
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .map_err(|_| refused())?
    };
    if !ip.is_loopback() || authority.as_str().contains('@') {
        return Err(refused());
    }
    let addr = SocketAddr::new(ip, authority.port_u16().unwrap_or(80));
    let target = parsed
        .path_and_query()
        .map_or("/", |path| path.as_str())
        .parse()
        .map_err(|_| refused())?;
    Ok((addr, target))
}

/// What every request carries besides its body.
struct Head<'a> {
    method: Method,
    uri: &'a str,
    session_id: Option<&'a str>,
    last_event_id: Option<&'a str>,
    token: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
}

/// Headers the client sets itself; a custom header may not replace them.
const OWN_HEADERS: [&str; 7] = [
    "accept",
    "authorization",
    "content-type",
    "content-length",
    "host",
    SESSION_ID,
    LAST_EVENT_ID,
];

async fn send(head: Head<'_>, body: Option<Vec<u8>>) -> Result<Response<Incoming>, Failure> {
    let (addr, target) = loopback_target(head.uri)?;
    let mut request = Request::builder()
        .method(head.method)
        .uri(target)
        .header(HOST, addr.to_string())
        .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
    if let Some(token) = head.token {
        request = request.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(session_id) = head.session_id {
        request = request.header(SESSION_ID, session_id);
    }
    if let Some(last_event_id) = head.last_event_id {
        request = request.header(LAST_EVENT_ID, last_event_id);
    }
    for (name, value) in head.custom {
        if OWN_HEADERS.contains(&name.as_str()) {
            return Err(LoopbackError::ReservedHeader(name).into());
        }
        request = request.header(name, value);
    }
    let body = match body {
        Some(body) => {
            request = request.header(CONTENT_TYPE, JSON);
            Full::new(Bytes::from(body))
        }
        None => Full::new(Bytes::new()),
    };
    let request = request.body(body).map_err(LoopbackError::Request)?;

    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|source| LoopbackError::Connect { addr, source })?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|source| LoopbackError::Http { addr, source })?;
    // The connection lives until the answer's body has been read or dropped.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|source| LoopbackError::Http { addr, source })?;
    Ok(response)
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

fn is_type(content_type: Option<&str>, mime: &str) -> bool {
    content_type.is_some_and(|value| value.as_bytes().starts_with(mime.as_bytes()))
}

/// The body, read to at most `max` bytes; longer is an error, not a cut.
async fn read_body(response: Response<Incoming>, max: usize) -> Result<Vec<u8>, Failure> {
    let declared = header_text(response.headers(), CONTENT_LENGTH.as_str())
        .and_then(|length| length.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut body = response.into_body();
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|source| StreamableHttpError::Io(std::io::Error::other(source.to_string())))?;
        if let Ok(data) = frame.into_data() {
            if data.len() > max - out.len() {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// Counts the bytes of the event being received and refuses one larger
/// than the limit. An event ends at an empty line; a line ends at CR, LF
/// or CRLF.
#[derive(Debug)]
struct EventSize {
    max: usize,
    in_event: usize,
    line_empty: bool,
    after_cr: bool,
}

impl EventSize {
    fn new(max: usize) -> Self {
        Self {
            max,
            in_event: 0,
            line_empty: true,
            after_cr: false,
        }
    }

    fn observe(&mut self, chunk: &[u8]) -> Result<(), LoopbackError> {
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\r' | b'\n' => {
                    if self.line_empty {
                        self.in_event = 0;
                    }
                    self.line_empty = true;
                }
                _ => {
                    self.line_empty = false;
                    self.in_event += 1;
                    if self.in_event > self.max {
                        return Err(LoopbackError::EventTooLarge { max: self.max });
                    }
                }
            }
        }
        Ok(())
    }
}

/// The events of a streamed answer, none larger than `max` bytes; the
/// stream ends after the first error.
fn events(body: Incoming, max: usize) -> BoxStream<'static, Result<Sse, SseError>> {
    let chunks = futures::stream::try_unfold(
        (BodyDataStream::new(body), EventSize::new(max)),
        |(mut body, mut size)| async move {
            match body.next().await {
                None => Ok(None),
                Some(Err(err)) => Err(std::io::Error::other(err.to_string())),
                Some(Ok(chunk)) => {
                    size.observe(&chunk).map_err(std::io::Error::other)?;
                    Ok(Some((chunk, (body, size))))
                }
            }
        },
    );
    SseStream::from_bytes_stream(chunks).boxed()
}

fn expects_no_reply(message: &ClientJsonRpcMessage) -> bool {
    !matches!(message, JsonRpcMessage::Request(_))
}

fn unexpected(status: StatusCode, body: &[u8]) -> Failure {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
        "HTTP {status}: {}",
        String::from_utf8_lossy(body).trim()
    )))
}

/// Rate limits and server failures keep their status (and `Retry-After`)
/// for `rmcp`'s retry logic.
fn status_failure(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = header_text(headers, RETRY_AFTER.as_str()).map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

impl StreamableHttpClient for LoopbackHttp {
    type Error = LoopbackError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            MAX_EVENT,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let body = serde_json::to_vec(&message)?;
        let head = Head {
            method: Method::POST,
            uri: &uri,
            session_id: session_id.as_deref(),
            last_event_id: None,
            token: auth_header,
            custom: custom_headers,
        };
        let response = send(head, Some(body)).await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let kind = content_type(response.headers());
        let new_session = header_text(response.headers(), SESSION_ID).map(str::to_owned);
        if !status.is_success() {
            let failure = status_failure(status, response.headers());
            let is_json = is_type(kind.as_deref(), JSON);
            if failure.is_some() && (!is_json || status == StatusCode::TOO_MANY_REQUESTS) {
                return Err(failure.map_or_else(|| unexpected(status, &[]), Into::into));
            }
            let body = match read_body(response, MAX_ERROR_BODY).await {
                Ok(body) => body,
                Err(err) => return Err(failure.map_or(err, Into::into)),
            };
            if let Some(reply) = refused_discovery(&message, session_id.is_some(), status, &body) {
                return Ok(reply);
            }
            let auth = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
            if is_json
                && !auth
                && let Ok(reply @ JsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(reply, new_session));
            }
            return Err(failure.map_or_else(|| unexpected(status, &body), Into::into));
        }
        if is_type(kind.as_deref(), EVENT_STREAM) {
            let stream = events(response.into_body(), max_sse_event_size);
            return Ok(StreamableHttpPostResponse::Sse(stream, new_session));
        }
        let empty = header_text(response.headers(), CONTENT_LENGTH.as_str()) == Some("0");
        if empty && expects_no_reply(&message) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !is_type(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        let body = read_body(response, MAX_JSON_BODY).await?;
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(reply) => Ok(StreamableHttpPostResponse::Json(reply, new_session)),
            // Nothing waits for an answer to a notification or a reply.
            Err(_) if expects_no_reply(&message) => Ok(StreamableHttpPostResponse::Accepted),
            Err(err) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("the answer is not a JSON-RPC message: {err}"),
            ))),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let head = Head {
            method: Method::DELETE,
            uri: &uri,
            session_id: Some(&session_id),
            last_event_id: None,
            token: auth_header,
            custom: custom_headers,
        };
        let response = send(head, None).await?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        let body = read_body(response, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        Err(unexpected(status, &body))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_EVENT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        let head = Head {
            method: Method::GET,
            uri: &uri,
            session_id: session_id.as_deref(),
            last_event_id: last_event_id.as_deref(),
            token: auth_header,
            custom: custom_headers,
        };
        let response = send(head, None).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(failure) = status_failure(status, response.headers()) {
            return Err(failure.into());
        }
        if !status.is_success() {
            let body = read_body(response, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            return Err(unexpected(status, &body));
        }
        let kind = content_type(response.headers());
        if !is_type(kind.as_deref(), EVENT_STREAM) && !is_type(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        Ok(events(response.into_body(), max_sse_event_size))
    }
}

/// A server of an older protocol refuses `server/discover` with a plain
/// 4xx that cannot name the request; the refusal is turned into a JSON-RPC
/// error for that request, so the client falls back to `initialize`.
fn refused_discovery(
    message: &ClientJsonRpcMessage,
    in_session: bool,
    status: StatusCode,
    body: &[u8],
) -> Option<StreamableHttpPostResponse> {
    if in_session
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_slice::<ServerJsonRpcMessage>(body) {
        Ok(JsonRpcMessage::Error(error)) => error.error,
        _ => ErrorData::invalid_request(
            format!(
                "server/discover refused with HTTP {status}: {}",
                String::from_utf8_lossy(body).trim()
            ),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_on_loopback_is_reached() {
        for uri in [
            "http://127.0.0.1:4000/mcp",
            "http://localhost:4000/mcp",
            "http://[::1]:4000/mcp",
            "http://127.9.9.9/mcp?x=1",
        ] {
            assert!(loopback_target(uri).is_ok(), "{uri}");
        }
        for uri in [
            "https://127.0.0.1:4000/mcp",
            "http://10.0.0.1:4000/mcp",
            "http://example.com/mcp",
            "http://user@127.0.0.1:4000/mcp",
            "http://0.0.0.0:4000/mcp",
            "127.0.0.1:4000",
            "not a url",
        ] {
            assert!(
                matches!(loopback_target(uri), Err(LoopbackError::NotLoopback { .. })),
                "{uri}"
            );
        }
        let (addr, target) = loopback_target("http://127.9.9.9/mcp?x=1").unwrap();
        assert_eq!(addr.to_string(), "127.9.9.9:80");
        assert_eq!(target, "/mcp?x=1");
    }

    #[test]
    fn an_event_larger_than_the_limit_is_refused_whatever_the_line_endings() {
        let mut size = EventSize::new(8);
        size.observe(b"data: 12\n\ndata: 34\r\n\r\n").unwrap();
        size.observe(b"data:").unwrap();
        size.observe(b" 56\r").unwrap();
        size.observe(b"\r").unwrap();
        size.observe(b"data: 78\n\n").unwrap();
        assert!(matches!(
            size.observe(b"data: 9\ndata: 0\n\n"),
            Err(LoopbackError::EventTooLarge { max: 8 })
        ));
        // A CRLF split between chunks is one line ending, not two.
        let mut size = EventSize::new(11);
        size.observe(b"data: 1\r").unwrap();
        size.observe(b"\ndata").unwrap();
        assert!(size.observe(b"x").is_err());
    }
}
