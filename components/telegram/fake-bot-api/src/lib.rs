//! [`FakeBotApi`]: a Telegram Bot API server on `127.0.0.1:0` for tests,
//! written from the Bot API's documentation.
//!
//! It answers `POST|GET /bot<token>/<method>` (JSON, form or query
//! parameters) for `getMe`, `getUpdates` (long poll with `offset`,
//! `timeout` and `allowed_updates`; updates stay until an offset confirms
//! them), `sendMessage`,
//! `editMessageText`, `editMessageReplyMarkup`, `deleteMessage`,
//! `sendChatAction`, `answerCallbackQuery`, `setMyCommands`,
//! `deleteWebhook`, `getFile`, and `GET /file/bot<token>/<path>`
//! downloads. Messages sent with `parse_mode = HTML` are read as Telegram
//! reads them ([`html`]): HTML outside the subset is answered with 400
//! "can't parse entities", text over 4096 UTF-16 units with 400 "message
//! is too long". A wrong token gets 401.
//!
//! Method names are matched without regard to case, as the real Bot API
//! does (`sendmessage` is `sendMessage`).
//!
//! Tests script trouble in the shapes the real API (and what stands in
//! front of it) answers with: [`FakeBotApi::fail_next`] answers the next
//! matching call with 429 `{"ok":false,"error_code":429,"description":…,
//! "parameters":{"retry_after":N}}`, a 400 "can't parse entities", a 5xx
//! with the Bot API's JSON, nginx's HTML `502 Bad Gateway` page, an
//! answer cut short that is not JSON, or anything else
//! ([`Fault`]); [`FakeBotApi::fail_times`] does it several times;
//! [`FakeBotApi::set_webhook`] makes `getUpdates` answer 409 until
//! `deleteWebhook`; [`FakeBotApi::conflict_polls`] answers the next polls
//! 409 as if another program polled; [`FakeBotApi::stall_polls`] leaves
//! polls unanswered; [`FakeBotApi::hold_downloads`] keeps file downloads
//! waiting until [`FakeBotApi::release_downloads`]. Every call is recorded
//! with the time it arrived ([`Call`]), so tests can check the pace a
//! client keeps.

pub mod html;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The bot the fake answers as.
pub const BOT_ID: i64 = 700_000_001;
/// Its username.
pub const BOT_USERNAME: &str = "crab_test_bot";
/// The token the fake accepts.
pub const TOKEN: &str = "700000001:TEST-token_abcdefghijklmnopqrstuvw";

/// A Telegram user, for building updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TgUser {
    pub id: i64,
    pub first_name: String,
    pub username: Option<String>,
}

impl TgUser {
    pub fn new(id: i64, first_name: &str) -> Self {
        Self {
            id,
            first_name: first_name.into(),
            username: Some(first_name.to_lowercase()),
        }
    }

    fn json(&self) -> Value {
        let mut user = json!({"id": self.id, "is_bot": false, "first_name": self.first_name});
        if let Some(username) = &self.username {
            user["username"] = json!(username);
        }
        user
    }
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub params: Value,
    /// When it arrived.
    pub at: Instant,
}

impl Call {
    /// The `chat_id` parameter, if numeric.
    pub fn chat(&self) -> Option<i64> {
        match &self.params["chat_id"] {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }
}

/// A message the bot sent, as it stands now.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub chat: i64,
    pub id: i64,
    pub topic: Option<i64>,
    /// The visible text (HTML parsed).
    pub text: String,
    /// The HTML as sent, when `parse_mode` was HTML.
    pub html: Option<String>,
    pub keyboard: Option<Value>,
    pub edits: usize,
    pub deleted: bool,
}

/// A scripted answer to the next matching call.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `retry_after` seconds.
    RetryAfter(u64),
    /// 400 "Bad Request: can't parse entities: …".
    CantParseEntities,
    /// Any status and description, in the Bot API's JSON.
    Error(u16, String),
    /// A server error in the Bot API's JSON: `{"ok":false,"error_code":
    /// 500,"description":"Internal Server Error"}` (with its status).
    ServerError(u16),
    /// What nginx in front of the Bot API answers when the API behind it
    /// does not: 502 with an HTML page.
    BadGateway,
    /// 200 with a body cut short: not JSON.
    NotJson,
}

struct Scripted {
    method: String,
    chat: Option<i64>,
    fault: Fault,
}

#[derive(Default)]
struct Inner {
    /// Updates not yet confirmed by an offset.
    updates: VecDeque<(i64, Value)>,
    next_update: i64,
    calls: Vec<Call>,
    messages: Vec<Sent>,
    next_message: HashMap<i64, i64>,
    faults: Vec<Scripted>,
    webhook: bool,
    conflicts: usize,
    stalls: usize,
    commands: Vec<Value>,
    files: HashMap<String, (String, Vec<u8>)>,
    callbacks: usize,
    /// Downloads wait while this is set.
    hold_downloads: bool,
    /// Downloads begun (including those held).
    downloads: usize,
}

struct Shared {
    inner: Mutex<Inner>,
    changed: Notify,
}

/// The fake server; dropping it stops it.
pub struct FakeBotApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeBotApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeBotApi {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                next_update: 1,
                ..Inner::default()
            }),
            changed: Notify::new(),
        });
        let app = Router::new()
            .route("/file/{bot}/{*path}", get(download))
            .route("/{bot}/{method}", any(method))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake Bot API");
        let addr = listener.local_addr().expect("its address");
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:<port>`: what `api_base_url` should say.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let result = f(&mut self.shared.inner.lock().unwrap());
        self.shared.changed.notify_waiters();
        result
    }

    // ─── updates ────────────────────────────────────────────────────────

    /// Queues an update (`update_id` is filled in); its id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        self.with(|inner| {
            let id = inner.next_update;
            inner.next_update += 1;
            update["update_id"] = json!(id);
            inner.updates.push_back((id, update));
            id
        })
    }

    /// Queues raw JSON as an update, as it is (malformed ones too); the id
    /// it would have had.
    pub fn push_raw(&self, update: Value) -> i64 {
        self.with(|inner| {
            let id = inner.next_update;
            inner.next_update += 1;
            inner.updates.push_back((id, update));
            id
        })
    }

    /// Queues the same update id again (Telegram may repeat one).
    pub fn repeat_update(&self, id: i64, update: Value) {
        let mut update = update;
        update["update_id"] = json!(id);
        self.with(|inner| inner.updates.push_back((id, update)));
    }

    fn message_json(chat: Value, from: &TgUser, text: &str, extra: Value) -> Value {
        let mut message = json!({
            "message_id": 1_000_000 + rand_id(),
            "date": now_secs(),
            "chat": chat,
            "from": from.json(),
        });
        if !text.is_empty() {
            message["text"] = json!(text);
            let entities = entities_of(text);
            if !entities.is_empty() {
                message["entities"] = json!(entities);
            }
        }
        if let (Some(into), Value::Object(extra)) = (message.as_object_mut(), extra) {
            into.extend(extra);
        }
        message
    }

    /// A private message from `user`; the update id.
    pub fn text(&self, user: &TgUser, text: &str) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        self.push_update(json!({"message": Self::message_json(chat, user, text, json!({}))}))
    }

    /// A group message from `user` in `chat` (mentions and commands get
    /// their entities); `reply_to_bot` makes it a reply to the bot.
    pub fn group_text(&self, chat: i64, user: &TgUser, text: &str, reply_to_bot: bool) -> i64 {
        self.group_message(chat, None, user, text, reply_to_bot)
    }

    /// A message in forum topic `topic` of `chat`.
    pub fn topic_text(&self, chat: i64, topic: i64, user: &TgUser, text: &str) -> i64 {
        self.group_message(chat, Some(topic), user, text, false)
    }

    fn group_message(
        &self,
        chat: i64,
        topic: Option<i64>,
        user: &TgUser,
        text: &str,
        reply_to_bot: bool,
    ) -> i64 {
        let chat_json = json!({"id": chat, "type": "supergroup", "title": "Test group", "is_forum": topic.is_some()});
        let mut extra = json!({});
        if let Some(topic) = topic {
            extra["message_thread_id"] = json!(topic);
            extra["is_topic_message"] = json!(true);
        }
        if reply_to_bot {
            extra["reply_to_message"] = json!({
                "message_id": 5,
                "date": now_secs(),
                "chat": chat_json.clone(),
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "Crab", "username": BOT_USERNAME},
                "text": "earlier",
            });
        }
        self.push_update(json!({"message": Self::message_json(chat_json, user, text, extra)}))
    }

    /// A press of a button with `data` under message `message_id` in
    /// `chat`; the update id.
    pub fn callback(&self, user: &TgUser, chat: i64, message_id: i64, data: &str) -> i64 {
        let id = self.with(|inner| {
            inner.callbacks += 1;
            inner.callbacks
        });
        let chat_json = if chat > 0 {
            json!({"id": chat, "type": "private", "first_name": user.first_name})
        } else {
            json!({"id": chat, "type": "supergroup", "title": "Test group"})
        };
        self.push_update(json!({"callback_query": {
            "id": format!("cb{id}"),
            "from": user.json(),
            "chat_instance": "1",
            "data": data,
            "message": {
                "message_id": message_id,
                "date": now_secs(),
                "chat": chat_json,
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "Crab", "username": BOT_USERNAME},
                "text": "question",
            }
        }}))
    }

    /// Stores a file the client may `getFile` and download.
    pub fn add_file(&self, file_id: &str, bytes: &[u8]) {
        let path = format!("files/{file_id}.bin");
        self.with(|inner| {
            inner.files.insert(file_id.into(), (path, bytes.to_vec()));
        });
    }

    /// A private photo from `user` (the file must be added).
    pub fn photo(&self, user: &TgUser, file_id: &str, size: u64, caption: &str) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        let mut extra = json!({"photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 60, "file_size": 100},
            {"file_id": file_id, "file_unique_id": "u", "width": 1280, "height": 960, "file_size": size},
        ]});
        if !caption.is_empty() {
            extra["caption"] = json!(caption);
        }
        self.push_update(json!({"message": Self::message_json(chat, user, "", extra)}))
    }

    /// A private document from `user`.
    pub fn document(&self, user: &TgUser, file_id: &str, name: &str, size: u64) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        let extra = json!({"document": {"file_id": file_id, "file_unique_id": "d", "file_name": name, "mime_type": "application/octet-stream", "file_size": size}});
        self.push_update(json!({"message": Self::message_json(chat, user, "", extra)}))
    }

    /// A private voice note from `user`.
    pub fn voice(&self, user: &TgUser, file_id: &str, size: u64) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        let extra = json!({"voice": {"file_id": file_id, "file_unique_id": "v", "duration": 3, "mime_type": "audio/ogg", "file_size": size}});
        self.push_update(json!({"message": Self::message_json(chat, user, "", extra)}))
    }

    /// A private message from `user` with `text` (may be empty) and
    /// `extra` fields (a sticker, a location, a video…); the update id.
    pub fn message_with(&self, user: &TgUser, text: &str, extra: Value) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        self.push_update(json!({"message": Self::message_json(chat, user, text, extra)}))
    }

    /// A private video from `user`; without `mime_type` when `mime` is
    /// `None` (the field is optional in the Bot API).
    pub fn video(
        &self,
        user: &TgUser,
        file_id: &str,
        size: u64,
        caption: &str,
        mime: Option<&str>,
    ) -> i64 {
        let mut video = json!({"file_id": file_id, "file_unique_id": "vid", "width": 640, "height": 360, "duration": 4, "file_size": size});
        if let Some(mime) = mime {
            video["mime_type"] = json!(mime);
        }
        let mut extra = json!({ "video": video });
        if !caption.is_empty() {
            extra["caption"] = json!(caption);
        }
        self.message_with(user, "", extra)
    }

    /// `user` edits private message `message_id` to `text`: an
    /// `edited_message` update; its id.
    pub fn edited_text(&self, user: &TgUser, message_id: i64, text: &str) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        let mut message = Self::message_json(chat, user, text, json!({"edit_date": now_secs()}));
        message["message_id"] = json!(message_id);
        self.push_update(json!({ "edited_message": message }))
    }

    /// The service message of group `old` becoming supergroup `new`.
    pub fn migrate(&self, old: i64, new: i64, user: &TgUser) -> i64 {
        let chat = json!({"id": old, "type": "group", "title": "Test group"});
        self.push_update(json!({"message": Self::message_json(chat, user, "", json!({"migrate_to_chat_id": new}))}))
    }

    /// How many updates wait unconfirmed.
    pub fn pending_updates(&self) -> usize {
        self.shared.inner.lock().unwrap().updates.len()
    }

    // ─── trouble ────────────────────────────────────────────────────────

    /// Answers the next call of `method` (to `chat`, if given) with `fault`.
    pub fn fail_next(&self, method: &str, chat: Option<i64>, fault: Fault) {
        self.with(|inner| {
            inner.faults.push(Scripted {
                method: method.into(),
                chat,
                fault,
            })
        });
    }

    /// Answers the next `n` calls of `method` (to `chat`, if given) with
    /// `fault`.
    pub fn fail_times(&self, method: &str, chat: Option<i64>, fault: Fault, n: usize) {
        for _ in 0..n {
            self.fail_next(method, chat, fault.clone());
        }
    }

    /// Whether scripted faults are still waiting for their calls.
    pub fn faults_left(&self) -> usize {
        self.shared.inner.lock().unwrap().faults.len()
    }

    /// Downloads begun from now on wait until [`FakeBotApi::release_downloads`].
    pub fn hold_downloads(&self) {
        self.with(|inner| inner.hold_downloads = true);
    }

    /// Lets held downloads (and later ones) go on.
    pub fn release_downloads(&self) {
        self.with(|inner| inner.hold_downloads = false);
    }

    /// Downloads begun so far (held ones included).
    pub fn downloads(&self) -> usize {
        self.shared.inner.lock().unwrap().downloads
    }

    /// A webhook is set: `getUpdates` answers 409 until `deleteWebhook`.
    pub fn set_webhook(&self) {
        self.with(|inner| inner.webhook = true);
    }

    /// Whether a webhook is set.
    pub fn webhook(&self) -> bool {
        self.shared.inner.lock().unwrap().webhook
    }

    /// The next `n` polls answer 409 (another program polls).
    pub fn conflict_polls(&self, n: usize) {
        self.with(|inner| inner.conflicts = n);
    }

    /// The next `n` polls are never answered.
    pub fn stall_polls(&self, n: usize) {
        self.with(|inner| inner.stalls = n);
    }

    // ─── what happened ──────────────────────────────────────────────────

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.inner.lock().unwrap().calls.clone()
    }

    /// The calls of `method`.
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method))
            .collect()
    }

    /// Messages in `chat` (deleted ones left out), oldest first.
    pub fn messages(&self, chat: i64) -> Vec<Sent> {
        self.shared
            .inner
            .lock()
            .unwrap()
            .messages
            .iter()
            .filter(|m| m.chat == chat && !m.deleted)
            .cloned()
            .collect()
    }

    /// The commands of the last `setMyCommands`.
    pub fn commands(&self) -> Vec<Value> {
        self.shared.inner.lock().unwrap().commands.clone()
    }

    /// Waits until `condition` holds on the fake's state.
    pub async fn wait_until(&self, what: &str, mut condition: impl FnMut(&FakeBotApi) -> bool) {
        let waited = tokio::time::timeout(crabtalk_testkit::PATIENCE, async {
            loop {
                let changed = self.shared.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if condition(self) {
                    return;
                }
                let _ = tokio::time::timeout(Duration::from_millis(200), changed).await;
            }
        })
        .await;
        if waited.is_err() {
            let calls: Vec<String> = self
                .calls()
                .iter()
                .map(|c| format!("{} {}", c.method, c.params))
                .collect();
            panic!("timed out waiting for {what}; calls:\n{}", calls.join("\n"));
        }
    }

    /// Waits for a message in `chat` whose text contains `needle`.
    pub async fn wait_for_text(&self, chat: i64, needle: &str) -> Sent {
        let mut found = None;
        self.wait_until(
            &format!("a message containing {needle:?} in chat {chat}"),
            |api| {
                found = api
                    .messages(chat)
                    .into_iter()
                    .find(|m| m.text.contains(needle));
                found.is_some()
            },
        )
        .await;
        found.expect("found above")
    }

    /// The visible text of every message in `chat`, in order.
    pub fn chat_text(&self, chat: i64) -> String {
        self.messages(chat)
            .iter()
            .map(|m| m.text.as_str())
            .collect()
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn rand_id() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static NEXT: AtomicI64 = AtomicI64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `mention` and `bot_command` entities of a text, in UTF-16 units.
fn entities_of(text: &str) -> Vec<Value> {
    let mut entities = Vec::new();
    let mut offset = 0usize;
    for (i, word) in text.split(' ').enumerate() {
        let length: usize = word.chars().map(char::len_utf16).sum();
        if word.len() > 1 && word.starts_with('@') {
            entities.push(json!({"type": "mention", "offset": offset, "length": length}));
        } else if i == 0 && word.len() > 1 && word.starts_with('/') {
            entities.push(json!({"type": "bot_command", "offset": offset, "length": length}));
        }
        offset += length + 1;
    }
    entities
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

fn error(status: u16, description: &str, parameters: Option<Value>) -> Response {
    let mut body = json!({"ok": false, "error_code": status, "description": description});
    if let Some(parameters) = parameters {
        body["parameters"] = parameters;
    }
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(body)).into_response()
}

fn fault_response(fault: &Fault) -> Response {
    match fault {
        Fault::RetryAfter(secs) => error(
            429,
            &format!("Too Many Requests: retry after {secs}"),
            Some(json!({"retry_after": secs})),
        ),
        Fault::CantParseEntities => error(
            400,
            "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0",
            None,
        ),
        Fault::Error(status, text) => error(*status, text, None),
        Fault::ServerError(status) => {
            let reason = StatusCode::from_u16(*status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("Server Error");
            error(*status, reason, None)
        }
        Fault::BadGateway => (
            StatusCode::BAD_GATEWAY,
            [(header::CONTENT_TYPE, "text/html")],
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
        )
            .into_response(),
        Fault::NotJson => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            "{\"ok\":true,\"result\":{\"message_id\":",
        )
            .into_response(),
    }
}

/// The parameters of a request: JSON body, form body or query.
fn params(headers: &HeaderMap, query: Option<String>, body: &Bytes) -> Value {
    let mut out = serde_json::Map::new();
    let form = |text: &str, out: &mut serde_json::Map<String, Value>| {
        for (key, value) in url::form_urlencoded::parse(text.as_bytes()) {
            let value =
                serde_json::from_str::<Value>(&value).unwrap_or(Value::String(value.into_owned()));
            out.insert(key.into_owned(), value);
        }
    };
    if let Some(query) = query {
        form(&query, &mut out);
    }
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if kind.starts_with("application/json") {
        if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
            out.extend(map);
        }
    } else if kind.starts_with("application/x-www-form-urlencoded") {
        form(&String::from_utf8_lossy(body), &mut out);
    }
    Value::Object(out)
}

async fn method(
    State(shared): State<Arc<Shared>>,
    Path((bot, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = params(&headers, query, &body);
    let method = name.to_ascii_lowercase();
    {
        let mut inner = shared.inner.lock().unwrap();
        inner.calls.push(Call {
            method: name.clone(),
            params: params.clone(),
            at: Instant::now(),
        });
    }
    shared.changed.notify_waiters();
    if bot.strip_prefix("bot") != Some(TOKEN) {
        return error(401, "Unauthorized", None);
    }
    let chat = match &params["chat_id"] {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    // A scripted fault for this call?
    let fault = {
        let mut inner = shared.inner.lock().unwrap();
        let at = inner.faults.iter().position(|f| {
            f.method.eq_ignore_ascii_case(&method) && (f.chat.is_none() || f.chat == chat)
        });
        at.map(|at| inner.faults.remove(at).fault)
    };
    if let Some(fault) = fault {
        return fault_response(&fault);
    }
    match method.as_str() {
        "getme" => ok(json!({
            "id": BOT_ID, "is_bot": true, "first_name": "Crab", "username": BOT_USERNAME,
            "can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false
        })),
        "getupdates" => get_updates(&shared, &params).await,
        "deletewebhook" => {
            shared.inner.lock().unwrap().webhook = false;
            ok(json!(true))
        }
        "setmycommands" => {
            shared.inner.lock().unwrap().commands =
                params["commands"].as_array().cloned().unwrap_or_default();
            ok(json!(true))
        }
        "sendchataction" | "answercallbackquery" => ok(json!(true)),
        "sendmessage" => send_message(&shared, &params, chat),
        "editmessagetext" => edit_message(&shared, &params, chat, true),
        "editmessagereplymarkup" => edit_message(&shared, &params, chat, false),
        "deletemessage" => {
            let id = params["message_id"].as_i64();
            let mut inner = shared.inner.lock().unwrap();
            match inner
                .messages
                .iter_mut()
                .find(|m| Some(m.chat) == chat && Some(m.id) == id)
            {
                Some(message) => {
                    message.deleted = true;
                    drop(inner);
                    shared.changed.notify_waiters();
                    ok(json!(true))
                }
                None => error(400, "Bad Request: message to delete not found", None),
            }
        }
        "getfile" => {
            let id = params["file_id"].as_str().unwrap_or_default();
            match shared.inner.lock().unwrap().files.get(id) {
                Some((path, bytes)) => ok(json!({
                    "file_id": id, "file_unique_id": format!("u{id}"),
                    "file_size": bytes.len(), "file_path": path
                })),
                None => error(400, "Bad Request: invalid file_id", None),
            }
        }
        _ => error(404, "Not Found: method not found", None),
    }
}

/// The kinds of update the Bot API has.
const UPDATE_KINDS: [&str; 23] = [
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "business_connection",
    "business_message",
    "edited_business_message",
    "deleted_business_messages",
    "message_reaction",
    "message_reaction_count",
    "inline_query",
    "chosen_inline_result",
    "callback_query",
    "shipping_query",
    "pre_checkout_query",
    "purchased_paid_media",
    "poll",
    "poll_answer",
    "my_chat_member",
    "chat_member",
    "chat_join_request",
    "chat_boost",
    "removed_chat_boost",
];

/// What an update is about: its field other than `update_id`.
fn update_kind(update: &Value) -> &str {
    update
        .as_object()
        .and_then(|map| map.keys().find(|k| *k != "update_id"))
        .map_or("", String::as_str)
}

async fn get_updates(shared: &Arc<Shared>, params: &Value) -> Response {
    let offset = params["offset"].as_i64().unwrap_or(0);
    // As Telegram: only the kinds asked for (all when the list is empty).
    let allowed: Vec<String> = params["allowed_updates"]
        .as_array()
        .map(|kinds| {
            kinds
                .iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    // Junk a test pushed on purpose (no real kind) is handed over as is.
    let wanted = |update: &Value| {
        let kind = update_kind(update);
        allowed.is_empty() || allowed.iter().any(|k| k == kind) || !UPDATE_KINDS.contains(&kind)
    };
    let timeout = params["timeout"].as_u64().unwrap_or(0).min(60);
    let limit = params["limit"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
    let stall = {
        let mut inner = shared.inner.lock().unwrap();
        if inner.webhook {
            return error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
                None,
            );
        }
        if inner.conflicts > 0 {
            inner.conflicts -= 1;
            return error(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                None,
            );
        }
        let stall = inner.stalls > 0;
        inner.stalls = inner.stalls.saturating_sub(1);
        stall
    };
    if stall {
        std::future::pending::<()>().await;
    }
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let ready: Vec<Value> = {
            let mut inner = shared.inner.lock().unwrap();
            if offset > 0 {
                inner.updates.retain(|(id, _)| *id >= offset);
            }
            inner
                .updates
                .iter()
                .filter(|(id, update)| *id >= offset && wanted(update))
                .take(limit)
                .map(|(_, update)| update.clone())
                .collect()
        };
        if !ready.is_empty() || Instant::now() >= deadline {
            return ok(Value::Array(ready));
        }
        let _ = tokio::time::timeout_at(deadline, changed).await;
    }
}

/// The text of a send or edit, read as Telegram would.
fn read_text(params: &Value) -> Result<(String, Option<String>), Box<Response>> {
    let text = params["text"].as_str().unwrap_or_default();
    let html = params["parse_mode"]
        .as_str()
        .is_some_and(|m| m.eq_ignore_ascii_case("html"));
    let visible = if html {
        match html::parse(text) {
            Ok(parsed) => parsed.text,
            Err(why) => {
                return Err(Box::new(error(
                    400,
                    &format!("Bad Request: can't parse entities: {why}"),
                    None,
                )));
            }
        }
    } else {
        text.to_owned()
    };
    if visible.trim().is_empty() {
        return Err(Box::new(error(
            400,
            "Bad Request: message text is empty",
            None,
        )));
    }
    if visible.chars().map(char::len_utf16).sum::<usize>() > 4096 {
        return Err(Box::new(error(
            400,
            "Bad Request: message is too long",
            None,
        )));
    }
    Ok((visible, html.then(|| text.to_owned())))
}

fn message_result(message: &Sent) -> Value {
    let mut result = json!({
        "message_id": message.id,
        "date": now_secs(),
        "chat": if message.chat > 0 {
            json!({"id": message.chat, "type": "private", "first_name": "User"})
        } else {
            json!({"id": message.chat, "type": "supergroup", "title": "Test group"})
        },
        "from": {"id": BOT_ID, "is_bot": true, "first_name": "Crab", "username": BOT_USERNAME},
        "text": message.text,
    });
    if let Some(topic) = message.topic {
        result["message_thread_id"] = json!(topic);
        result["is_topic_message"] = json!(true);
    }
    if let Some(keyboard) = &message.keyboard {
        result["reply_markup"] = keyboard.clone();
    }
    result
}

fn send_message(shared: &Arc<Shared>, params: &Value, chat: Option<i64>) -> Response {
    let Some(chat) = chat else {
        return error(400, "Bad Request: chat not found", None);
    };
    let (text, html) = match read_text(params) {
        Ok(read) => read,
        Err(response) => return *response,
    };
    let mut inner = shared.inner.lock().unwrap();
    let next = inner.next_message.entry(chat).or_insert(0);
    *next += 1;
    let message = Sent {
        chat,
        id: *next,
        topic: params["message_thread_id"].as_i64(),
        text,
        html,
        keyboard: params.get("reply_markup").cloned().filter(|k| !k.is_null()),
        edits: 0,
        deleted: false,
    };
    let result = message_result(&message);
    inner.messages.push(message);
    drop(inner);
    shared.changed.notify_waiters();
    ok(result)
}

fn edit_message(shared: &Arc<Shared>, params: &Value, chat: Option<i64>, text: bool) -> Response {
    let id = params["message_id"].as_i64();
    let read = if text {
        match read_text(params) {
            Ok(read) => Some(read),
            Err(response) => return *response,
        }
    } else {
        None
    };
    let keyboard = params.get("reply_markup").cloned().filter(|k| {
        !k.is_null()
            && k["inline_keyboard"]
                .as_array()
                .is_none_or(|rows| !rows.is_empty())
    });
    let mut inner = shared.inner.lock().unwrap();
    let Some(message) = inner
        .messages
        .iter_mut()
        .find(|m| Some(m.chat) == chat && Some(m.id) == id && !m.deleted)
    else {
        return error(400, "Bad Request: message to edit not found", None);
    };
    let (new_text, new_html) = match read {
        Some((text, html)) => (text, html),
        None => (message.text.clone(), message.html.clone()),
    };
    if new_text == message.text && new_html == message.html && keyboard == message.keyboard {
        return error(
            400,
            "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
            None,
        );
    }
    message.text = new_text;
    message.html = new_html;
    message.keyboard = keyboard;
    message.edits += 1;
    let result = message_result(message);
    drop(inner);
    shared.changed.notify_waiters();
    ok(result)
}

async fn download(
    State(shared): State<Arc<Shared>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    if bot.strip_prefix("bot") != Some(TOKEN) {
        return error(401, "Unauthorized", None);
    }
    shared.inner.lock().unwrap().downloads += 1;
    shared.changed.notify_waiters();
    loop {
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if !shared.inner.lock().unwrap().hold_downloads {
            break;
        }
        changed.await;
    }
    let inner = shared.inner.lock().unwrap();
    match inner.files.values().find(|(p, _)| *p == path) {
        Some((_, bytes)) => (StatusCode::OK, bytes.clone()).into_response(),
        None => error(404, "Not Found", None),
    }
}

/// The largest number of calls that arrived within any window of
/// `window`, and the smallest gap between two calls of `methods` to the
/// same chat (for checking a client's pace).
pub fn pace(
    calls: &[Call],
    window: Duration,
    methods: &[&str],
) -> (usize, Option<(i64, Duration)>) {
    let mut most = 0;
    for (i, call) in calls.iter().enumerate() {
        let within = calls[i..]
            .iter()
            .filter(|c| c.at < call.at + window)
            .count();
        most = most.max(within);
    }
    let mut last: HashMap<i64, Instant> = HashMap::new();
    let mut smallest: Option<(i64, Duration)> = None;
    for call in calls
        .iter()
        .filter(|c| methods.iter().any(|m| c.method.eq_ignore_ascii_case(m)))
    {
        let Some(chat) = call.chat() else { continue };
        if let Some(previous) = last.insert(chat, call.at) {
            let gap = call.at - previous;
            if smallest.is_none_or(|(_, g)| gap < g) {
                smallest = Some((chat, gap));
            }
        }
    }
    (most, smallest)
}
