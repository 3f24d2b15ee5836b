//! A scripted LLM API server.
//!
//! Push [`Reply`]s; each request to `/v1/chat/completions` or
//! `/v1/messages` takes the next one (or the default reply when the script
//! is empty). Every request body is recorded for assertions, with the
//! credential it carried.
//!
//! Both APIs answer `"stream": true` with server-sent events and anything
//! else with one JSON body, as the real services do. Streams are written an
//! event at a time, or, after [`ScriptedLlm::chop_streams`], in pieces cut
//! anywhere in their bytes. A stream the client walks away from before its
//! end is counted ([`ScriptedLlm::aborted_streams`]).

use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A tool call the scripted model makes.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl ToolCall {
    pub fn new(id: &str, name: &str, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Text, streamed in small pieces.
    Text(String),
    /// Text streamed in pieces of the given number of characters (long
    /// replies for load and memory checks, without millions of events).
    Pieces { text: String, piece: usize },
    /// Thinking, then text.
    Thinking { thinking: String, text: String },
    /// Optional text, then tool calls.
    Tools { text: String, calls: Vec<ToolCall> },
    /// An HTTP error with this status and body.
    Status(u16, String),
    /// Streams `text`, then sends nothing more and never ends.
    Stall(String),
    /// Waits until [`ScriptedLlm::release`] before answering with `text`.
    Gated(String),
}

impl Reply {
    pub fn text(text: &str) -> Self {
        Self::Text(text.into())
    }

    pub fn tools(calls: Vec<ToolCall>) -> Self {
        Self::Tools {
            text: String::new(),
            calls,
        }
    }
}

struct Script {
    queue: Mutex<VecDeque<Reply>>,
    default: Mutex<Reply>,
    requests: Mutex<Vec<Value>>,
    /// The credential of each recorded request (`Authorization` or
    /// `x-api-key`), in the same order.
    credentials: Mutex<Vec<String>>,
    recording: AtomicBool,
    gate: Notify,
    arrived: Notify,
    /// Write streams in pieces cut anywhere (see [`chop`]).
    chop: AtomicBool,
    /// Microseconds between the events of a stream (0: none), as a model
    /// that produces its reply as it goes.
    pace_us: AtomicU64,
    /// Streams dropped before their end: the client went away.
    aborted: AtomicUsize,
    aborted_changed: Notify,
}

/// The server; dropping it stops it.
pub struct ScriptedLlm {
    addr: SocketAddr,
    script: Arc<Script>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Prompt and completion tokens reported for every reply.
pub(crate) const USAGE: (u32, u32) = (21, 7);

impl ScriptedLlm {
    pub async fn start() -> Self {
        Self::start_at("127.0.0.1:0")
            .await
            .expect("bind the scripted LLM")
    }

    /// Starts on a given address; `None` if it cannot be bound.
    pub async fn start_at(addr: &str) -> Option<Self> {
        let script = Arc::new(Script {
            queue: Mutex::new(VecDeque::new()),
            default: Mutex::new(Reply::text("(no scripted reply)")),
            requests: Mutex::new(Vec::new()),
            credentials: Mutex::new(Vec::new()),
            recording: AtomicBool::new(true),
            gate: Notify::new(),
            arrived: Notify::new(),
            chop: AtomicBool::new(false),
            pace_us: AtomicU64::new(0),
            aborted: AtomicUsize::new(0),
            aborted_changed: Notify::new(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/v1/models", get(models))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.ok()?;
        let addr = listener.local_addr().expect("scripted LLM address");
        // Without TCP_NODELAY each small SSE write waits for the client's
        // delayed ACK (40 ms), which no real provider does to its clients.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Some(Self {
            addr,
            script,
            server,
        })
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, writes every stream in small pieces cut at arbitrary
    /// bytes — inside `data:` lines, inside JSON strings, inside UTF-8
    /// characters — each flushed on its own after a short pause, so the
    /// client's SSE parser sees events and characters split across reads.
    pub fn chop_streams(&self) {
        self.script.chop.store(true, Ordering::Relaxed);
    }

    /// From now on, waits `every` before each event of a stream, as a real
    /// model does between the pieces of its reply (each event then reaches
    /// the client in a read of its own).
    pub fn pace_streams(&self, every: Duration) {
        let micros = u64::try_from(every.as_micros()).unwrap_or(u64::MAX);
        self.script.pace_us.store(micros, Ordering::Relaxed);
    }

    /// How many streamed replies were dropped before their end because the
    /// client went away (a stalled reply ends no other way).
    pub fn aborted_streams(&self) -> usize {
        self.script.aborted.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` streamed replies were abandoned by their
    /// client.
    pub async fn wait_for_aborted_streams(&self, n: usize) {
        crate::within(&format!("{n} streams dropped by the client"), async {
            loop {
                let changed = self.script.aborted_changed.notified();
                if self.aborted_streams() >= n {
                    return;
                }
                changed.await;
            }
        })
        .await
    }

    /// Queues a reply.
    pub fn push(&self, reply: Reply) {
        self.script.queue.lock().unwrap().push_back(reply);
    }

    /// The reply used when the queue is empty.
    pub fn set_default(&self, reply: Reply) {
        *self.script.default.lock().unwrap() = reply;
    }

    /// Stops keeping request bodies (for load tests).
    pub fn stop_recording(&self) {
        self.script.recording.store(false, Ordering::Relaxed);
    }

    /// Lets one [`Reply::Gated`] answer.
    pub fn release(&self) {
        self.script.gate.notify_one();
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().unwrap().clone()
    }

    /// The credential each recorded request carried: its `Authorization`
    /// header (`Bearer …`), else its `x-api-key`; empty when it had none.
    pub fn credentials(&self) -> Vec<String> {
        self.script.credentials.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        crate::within(&format!("{n} model requests"), async {
            loop {
                let arrived = self.script.arrived.notified();
                if self.script.requests.lock().unwrap().len() >= n {
                    return;
                }
                arrived.await;
            }
        })
        .await
    }
}

/// What a handler reads of a request: the model it names and whether it
/// asks for a stream.
struct Asked {
    model: String,
    stream: bool,
}

/// The fields [`Asked`] comes from; serde skips the rest without building
/// it.
#[derive(serde::Deserialize)]
struct AskedFields {
    model: Option<String>,
    stream: Option<bool>,
}

/// Reads a request's body. While the model records, the whole body is
/// kept as a JSON tree for the tests' assertions; once it stops
/// ([`ScriptedLlm::stop_recording`], what the load generators do), only
/// the model and `stream` are taken out, so that a request's cost to the
/// model does not grow with the conversation it carries. Malformed JSON
/// is a 400 either way, as from a real service.
fn read_request(script: &Script, bytes: &[u8]) -> serde_json::Result<(Asked, Option<Value>)> {
    if script.recording.load(Ordering::Relaxed) {
        let body: Value = serde_json::from_slice(bytes)?;
        let asked = Asked {
            model: body["model"].as_str().unwrap_or("scripted").to_owned(),
            stream: body["stream"].as_bool() == Some(true),
        };
        Ok((asked, Some(body)))
    } else {
        let fields: AskedFields = serde_json::from_slice(bytes)?;
        let asked = Asked {
            model: fields.model.unwrap_or_else(|| "scripted".into()),
            stream: fields.stream == Some(true),
        };
        Ok((asked, None))
    }
}

fn next_reply(script: &Script, headers: &axum::http::HeaderMap, body: Option<Value>) -> Reply {
    if let Some(body) = body {
        let credential = headers
            .get(header::AUTHORIZATION)
            .or_else(|| headers.get("x-api-key"))
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        script.credentials.lock().unwrap().push(credential);
        script.requests.lock().unwrap().push(body);
    }
    script.arrived.notify_waiters();
    script
        .queue
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| script.default.lock().unwrap().clone())
}

/// Splits text into pieces of at most three characters, so words arrive cut.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(3)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

/// The pause between the pieces of a chopped stream: long enough that each
/// piece reaches the client in a read of its own.
const PIECE_PAUSE: Duration = Duration::from_millis(1);

fn sse(script: &Arc<Script>, events: Vec<String>, stall: bool) -> Response {
    let frames: BoxStream<'static, Bytes> = if script.chop.load(Ordering::Relaxed) {
        let bytes = events.concat().into_bytes();
        stream::iter(chop(&bytes))
            .then(|piece| async move {
                tokio::time::sleep(PIECE_PAUSE).await;
                piece
            })
            .boxed()
    } else {
        match script.pace_us.load(Ordering::Relaxed) {
            0 => stream::iter(events.into_iter().map(Bytes::from)).boxed(),
            micros => stream::iter(events)
                .then(move |event| async move {
                    tokio::time::sleep(Duration::from_micros(micros)).await;
                    Bytes::from(event)
                })
                .boxed(),
        }
    };
    let frames = if stall {
        frames.chain(stream::pending()).boxed()
    } else {
        frames
    };
    let body = Body::from_stream(Watched {
        frames,
        ended: false,
        script: script.clone(),
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .expect("a valid response")
}

/// A response body that counts itself as aborted when it is dropped before
/// its end, which only happens when the client has gone away.
struct Watched {
    frames: BoxStream<'static, Bytes>,
    ended: bool,
    script: Arc<Script>,
}

impl Stream for Watched {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.frames.poll_next_unpin(cx);
        if let Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled.map(|frame| frame.map(Ok))
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.ended {
            self.script.aborted.fetch_add(1, Ordering::SeqCst);
            self.script.aborted_changed.notify_waiters();
        }
    }
}

/// Cuts `bytes` into pieces of 1 to 16 bytes at pseudo-random places, and
/// always inside the first `data:` line and after the first byte of every
/// multi-byte UTF-8 character, so both splits are certain to occur.
fn chop(bytes: &[u8]) -> Vec<Bytes> {
    let mut cuts = BTreeSet::new();
    // A fixed seed: a failure reproduces.
    let mut state: u32 = 0x2545_f491;
    let mut at = 0;
    while at < bytes.len() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        at += 1 + (state % 16) as usize;
        cuts.insert(at.min(bytes.len()));
    }
    if let Some(data) = bytes.windows(5).position(|window| window == b"data:") {
        cuts.insert(data + 3);
    }
    for (at, byte) in bytes.iter().enumerate() {
        // The lead byte of a multi-byte character: 11xxxxxx.
        if byte & 0xC0 == 0xC0 {
            cuts.insert(at + 1);
        }
    }
    let mut pieces = Vec::with_capacity(cuts.len());
    let mut start = 0;
    for cut in cuts {
        if cut > start {
            pieces.push(Bytes::copy_from_slice(&bytes[start..cut]));
            start = cut;
        }
    }
    if start < bytes.len() {
        pieces.push(Bytes::copy_from_slice(&bytes[start..]));
    }
    pieces
}

fn error(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"error": {"message": body, "type": "scripted_error"}}).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn models() -> impl IntoResponse {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "test"}]
    }))
}

async fn wait_gate(script: &Script, reply: Reply) -> Reply {
    match reply {
        Reply::Gated(text) => {
            script.gate.notified().await;
            Reply::Text(text)
        }
        other => other,
    }
}

// ─── OpenAI ─────────────────────────────────────────────────────────────────

async fn openai(
    State(script): State<Arc<Script>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let (asked, body) = match read_request(&script, &body) {
        Ok(read) => read,
        Err(err) => return error(400, format!("the body is not JSON: {err}")),
    };
    let reply = next_reply(&script, &headers, body);
    let reply = wait_gate(&script, reply).await;
    let model = asked.model;
    if !asked.stream {
        return openai_whole(reply, &model);
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({
                "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
            })
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut stall = false;
    let finish = match reply {
        Reply::Status(status, body) => return error(status, body),
        Reply::Gated(_) => unreachable!("gates are opened above"),
        Reply::Text(text) => {
            events.extend(
                pieces(&text)
                    .into_iter()
                    .map(|piece| chunk(json!({"content": piece}), Value::Null)),
            );
            "stop"
        }
        Reply::Pieces { text, piece } => {
            let chars: Vec<char> = text.chars().collect();
            events.extend(chars.chunks(piece.max(1)).map(|piece| {
                let piece: String = piece.iter().collect();
                chunk(json!({"content": piece}), Value::Null)
            }));
            "stop"
        }
        Reply::Thinking { thinking, text } => {
            events.extend(
                pieces(&thinking)
                    .into_iter()
                    .map(|piece| chunk(json!({"reasoning_content": piece}), Value::Null)),
            );
            events.extend(
                pieces(&text)
                    .into_iter()
                    .map(|piece| chunk(json!({"content": piece}), Value::Null)),
            );
            "stop"
        }
        Reply::Stall(text) => {
            events.extend(
                pieces(&text)
                    .into_iter()
                    .map(|piece| chunk(json!({"content": piece}), Value::Null)),
            );
            stall = true;
            "stop"
        }
        Reply::Tools { text, calls } => {
            events.extend(
                pieces(&text)
                    .into_iter()
                    .map(|piece| chunk(json!({"content": piece}), Value::Null)),
            );
            for (index, call) in calls.iter().enumerate() {
                events.push(chunk(
                    json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": ""}}]}),
                    Value::Null,
                ));
                let arguments = call.arguments.to_string();
                for piece in pieces(&arguments) {
                    events.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ));
                }
            }
            "tool_calls"
        }
    };
    if !stall {
        events.push(chunk(json!({}), json!(finish)));
        events.push(format!(
            "data: {}\n\n",
            json!({
                "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [],
                "usage": {"prompt_tokens": USAGE.0, "completion_tokens": USAGE.1, "total_tokens": USAGE.0 + USAGE.1}
            })
        ));
        events.push("data: [DONE]\n\n".into());
    }
    sse(&script, events, stall)
}

fn openai_whole(reply: Reply, model: &str) -> Response {
    let (content, calls) = match reply {
        Reply::Status(status, body) => return error(status, body),
        Reply::Text(text) | Reply::Stall(text) | Reply::Gated(text) => (text, Vec::new()),
        Reply::Thinking { text, .. } | Reply::Pieces { text, .. } => (text, Vec::new()),
        Reply::Tools { text, calls } => (text, calls),
    };
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|call| json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments.to_string()}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    axum::Json(json!({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {"prompt_tokens": USAGE.0, "completion_tokens": USAGE.1, "total_tokens": USAGE.0 + USAGE.1}
    }))
    .into_response()
}

// ─── Anthropic ──────────────────────────────────────────────────────────────

async fn anthropic(
    State(script): State<Arc<Script>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let (asked, body) = match read_request(&script, &body) {
        Ok(read) => read,
        Err(err) => return error(400, format!("the body is not JSON: {err}")),
    };
    let reply = next_reply(&script, &headers, body);
    let reply = wait_gate(&script, reply).await;
    let model = asked.model;
    if !asked.stream {
        return anthropic_whole(reply, &model);
    }
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant",
            "content": [], "model": model, "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": USAGE.0, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    let mut block = |events: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    let text_deltas = |text: &str| -> Vec<Value> {
        pieces(text)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect()
    };
    let mut stall = false;
    let stop_reason = match reply {
        Reply::Status(status, body) => return error(status, body),
        Reply::Gated(_) => unreachable!("gates are opened above"),
        Reply::Text(text) | Reply::Pieces { text, .. } => {
            block(
                &mut events,
                json!({"type": "text", "text": ""}),
                text_deltas(&text),
            );
            "end_turn"
        }
        Reply::Stall(text) => {
            events.push(event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
            for delta in text_deltas(&text) {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": delta}),
                ));
            }
            stall = true;
            "end_turn"
        }
        Reply::Thinking { thinking, text } => {
            let thinking_deltas = pieces(&thinking)
                .into_iter()
                .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                .collect();
            block(
                &mut events,
                json!({"type": "thinking", "thinking": ""}),
                thinking_deltas,
            );
            block(
                &mut events,
                json!({"type": "text", "text": ""}),
                text_deltas(&text),
            );
            "end_turn"
        }
        Reply::Tools { text, calls } => {
            if !text.is_empty() {
                block(
                    &mut events,
                    json!({"type": "text", "text": ""}),
                    text_deltas(&text),
                );
            }
            for call in calls {
                let deltas = pieces(&call.arguments.to_string())
                    .into_iter()
                    .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                    .collect();
                block(
                    &mut events,
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
                    deltas,
                );
            }
            "tool_use"
        }
    };
    if !stall {
        events.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": USAGE.1}}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
    }
    sse(&script, events, stall)
}

fn anthropic_whole(reply: Reply, model: &str) -> Response {
    let mut content = Vec::new();
    let mut stop_reason = "end_turn";
    match reply {
        Reply::Status(status, body) => return error(status, body),
        Reply::Text(text)
        | Reply::Stall(text)
        | Reply::Gated(text)
        | Reply::Pieces { text, .. } => {
            content.push(json!({"type": "text", "text": text}));
        }
        Reply::Thinking { thinking, text } => {
            content
                .push(json!({"type": "thinking", "thinking": thinking, "signature": "scripted"}));
            content.push(json!({"type": "text", "text": text}));
        }
        Reply::Tools { text, calls } => {
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            for call in calls {
                content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
            }
            stop_reason = "tool_use";
        }
    }
    axum::Json(json!({
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": USAGE.0, "output_tokens": USAGE.1}
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HttpRequest;

    #[tokio::test]
    async fn recording_or_not_a_request_s_model_and_stream_flag_are_read() {
        let llm = ScriptedLlm::start().await;
        llm.set_default(Reply::text("hi"));
        let port = llm.addr().port();
        let path = "/v1/chat/completions";
        let messages = r#""messages":[{"role":"user","content":"x"}]"#;
        for recording in [true, false] {
            if !recording {
                llm.stop_recording();
            }
            let whole = HttpRequest::post(port, path, &format!(r#"{{"model":"m-1",{messages}}}"#))
                .send_async()
                .await;
            assert_eq!(whole.status, 200, "{}", whole.head);
            assert_eq!(whole.json()["model"], "m-1");
            let body = format!(r#"{{"model":"m-2","stream":true,{messages}}}"#);
            let streamed = HttpRequest::post(port, path, &body).send_async().await;
            assert_eq!(streamed.status, 200, "{}", streamed.head);
            assert!(
                streamed.body.contains(r#""model":"m-2""#),
                "{}",
                streamed.body
            );
            assert!(streamed.body.contains("data: [DONE]"), "{}", streamed.body);
            let broken = HttpRequest::post(port, path, r#"{"model":"#)
                .send_async()
                .await;
            assert_eq!(broken.status, 400, "{}", broken.body);
        }
        // Only what came while recording was kept.
        assert_eq!(llm.requests().len(), 2);
    }

    #[test]
    fn chopping_keeps_every_byte_and_cuts_lines_and_characters() {
        let stream = "event: x\ndata: {\"text\":\"ça 🦀 va\"}\n\ndata: [DONE]\n\n";
        let pieces = chop(stream.as_bytes());
        assert_eq!(pieces.concat(), stream.as_bytes());
        assert!(pieces.iter().all(|piece| (1..=16).contains(&piece.len())));
        // Where each piece ends, as an offset into the stream.
        let ends: Vec<usize> = pieces
            .iter()
            .scan(0, |at, piece| {
                *at += piece.len();
                Some(*at)
            })
            .collect();
        let data = stream.find("data:").unwrap();
        assert!(
            ends.iter().any(|end| (data + 1..data + 5).contains(end)),
            "a cut inside `data:`: {pieces:?}"
        );
        assert!(
            ends.iter().any(|end| !stream.is_char_boundary(*end)),
            "a cut inside a character: {pieces:?}"
        );
    }
}
