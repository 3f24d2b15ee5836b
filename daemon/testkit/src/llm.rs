//! A scripted LLM API server.
//!
//! Push [`Reply`]s; each request to `/v1/chat/completions` or
//! `/v1/messages` takes the next one (or the default reply when the script
//! is empty). Every request body is recorded for assertions.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures::stream::{self, StreamExt};
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
    recording: std::sync::atomic::AtomicBool,
    gate: Notify,
    arrived: Notify,
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
pub const USAGE: (u32, u32) = (21, 7);

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
            recording: std::sync::atomic::AtomicBool::new(true),
            gate: Notify::new(),
            arrived: Notify::new(),
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
        self.script
            .recording
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Lets one [`Reply::Gated`] answer.
    pub fn release(&self) {
        self.script.gate.notify_one();
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().unwrap().clone()
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

fn next_reply(script: &Script, body: &Value) -> Reply {
    if script.recording.load(std::sync::atomic::Ordering::Relaxed) {
        script.requests.lock().unwrap().push(body.clone());
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

fn sse(events: Vec<String>, stall: bool) -> Response {
    let frames = stream::iter(
        events
            .into_iter()
            .map(|event| Ok::<_, Infallible>(Bytes::from(event))),
    );
    let body = if stall {
        Body::from_stream(frames.chain(stream::pending()))
    } else {
        Body::from_stream(frames)
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .expect("a valid response")
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
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let reply = next_reply(&script, &body);
    let reply = wait_gate(&script, reply).await;
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    if body["stream"].as_bool() != Some(true) {
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
    sse(events, stall)
}

fn openai_whole(reply: Reply, model: &str) -> Response {
    let (content, calls) = match reply {
        Reply::Status(status, body) => return error(status, body),
        Reply::Text(text) | Reply::Stall(text) | Reply::Gated(text) => (text, Vec::new()),
        Reply::Thinking { text, .. } => (text, Vec::new()),
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
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let reply = next_reply(&script, &body);
    let reply = wait_gate(&script, reply).await;
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
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
        Reply::Text(text) => {
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
    sse(events, stall)
}
