//! Test support: scripted HTTP servers on loopback addresses standing in
//! for the engines and for web pages, the fixtures, and the real
//! `crabtalk-search` binary in a temp home — run as a CLI, or as the
//! service with an rmcp client ([`client`] is the one place an MCP client
//! of the service is made).

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use crabtalk_home::{Home, PortFile};
use crabtalk_testkit::{eventually, within};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_crabtalk-search");

/// A fixture file's text.
pub(crate) fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// What a route answers.
#[derive(Clone)]
pub(crate) enum Reply {
    /// A whole body.
    Body {
        status: u16,
        content_type: Option<String>,
        body: Bytes,
    },
    /// A redirect to `location`.
    Redirect { status: u16, location: String },
    /// `total` bytes of `fill`, streamed in 64 KiB chunks, never held whole.
    Huge { content_type: String, total: u64 },
    /// Bytes forever.
    Endless { content_type: String },
    /// One byte a second, forever.
    Trickle { content_type: String },
    /// Waits, then answers.
    Delayed { delay: Duration, reply: Box<Reply> },
    /// A body with a `Content-Encoding` header (the bytes as given).
    Encoded {
        content_type: String,
        encoding: String,
        body: Bytes,
    },
}

impl Reply {
    pub(crate) fn html(body: impl Into<String>) -> Self {
        Self::with_status(200, "text/html; charset=utf-8", body)
    }

    pub(crate) fn json(body: impl Into<String>) -> Self {
        Self::with_status(200, "application/json", body)
    }

    pub(crate) fn with_status(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Reply::Body {
            status,
            content_type: Some(content_type.to_owned()),
            body: Bytes::from(body.into()),
        }
    }

    pub(crate) fn bytes(status: u16, content_type: Option<&str>, body: Vec<u8>) -> Self {
        Reply::Body {
            status,
            content_type: content_type.map(str::to_owned),
            body: Bytes::from(body),
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub path: String,
    pub query: HashMap<String, String>,
    pub headers: HashMap<String, String>,
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Reply>,
    fallback: Option<Reply>,
    seen: Vec<Seen>,
}

/// An HTTP server on a loopback address answering from a table of routes.
#[derive(Clone)]
pub(crate) struct Fixture {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Fixture {
    /// A server on `127.0.0.1:0`.
    pub(crate) async fn start() -> Self {
        Self::start_on("127.0.0.1").await
    }

    /// A server on `ip:0` (any of 127.0.0.0/8 on Linux).
    pub(crate) async fn start_on(ip: &str) -> Self {
        let listener = tokio::net::TcpListener::bind(format!("{ip}:0"))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let app = axum::Router::new().fallback(move |request: Request| {
            let state = shared.clone();
            async move { answer(state, request).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, state }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://<ip>:<port>`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers `path` with `reply` from now on.
    pub(crate) fn route(&self, path: &str, reply: Reply) -> &Self {
        self.state
            .lock()
            .unwrap()
            .routes
            .insert(path.to_owned(), reply);
        self
    }

    /// Answers every other path with `reply`.
    pub(crate) fn fallback(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().fallback = Some(reply);
        self
    }

    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    pub(crate) fn hits(&self) -> usize {
        self.state.lock().unwrap().seen.len()
    }
}

async fn answer(state: Arc<Mutex<State>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let query = request
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let reply = {
        let mut state = state.lock().unwrap();
        state.seen.push(Seen {
            path: path.clone(),
            query,
            headers,
        });
        state
            .routes
            .get(&path)
            .cloned()
            .or_else(|| state.fallback.clone())
    };
    match reply {
        Some(reply) => respond(reply).await,
        None => Response::builder()
            .status(404)
            .body(Body::from("no such fixture"))
            .unwrap(),
    }
}

async fn respond(reply: Reply) -> Response {
    let mut reply = reply;
    while let Reply::Delayed {
        delay,
        reply: inner,
    } = reply
    {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    let mut builder = Response::builder();
    let body = match reply {
        Reply::Body {
            status,
            content_type,
            body,
        } => {
            builder = builder.status(status);
            if let Some(content_type) = content_type {
                builder = builder.header(header::CONTENT_TYPE, content_type);
            }
            Body::from(body)
        }
        Reply::Redirect { status, location } => {
            builder = builder.status(status).header(header::LOCATION, location);
            Body::empty()
        }
        Reply::Huge {
            content_type,
            total,
        } => {
            builder = builder
                .header(header::CONTENT_TYPE, content_type)
                .header(header::CONTENT_LENGTH, HeaderValue::from(total));
            let chunk = Bytes::from(vec![b'a'; 64 * 1024]);
            let stream = futures::stream::unfold(0u64, move |sent| {
                let chunk = chunk.clone();
                async move {
                    if sent >= total {
                        return None;
                    }
                    let n = (total - sent).min(chunk.len() as u64) as usize;
                    Some((Ok::<_, std::io::Error>(chunk.slice(..n)), sent + n as u64))
                }
            });
            Body::from_stream(stream)
        }
        Reply::Endless { content_type } => {
            builder = builder.header(header::CONTENT_TYPE, content_type);
            let chunk = Bytes::from(b"<p>more</p>".repeat(6_000));
            let stream =
                futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
            Body::from_stream(stream)
        }
        Reply::Trickle { content_type } => {
            builder = builder.header(header::CONTENT_TYPE, content_type);
            let stream = futures::stream::unfold((), |()| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Some((Ok::<_, std::io::Error>(Bytes::from_static(b"x")), ()))
            });
            Body::from_stream(stream)
        }
        Reply::Encoded {
            content_type,
            encoding,
            body,
        } => {
            builder = builder
                .header(header::CONTENT_TYPE, content_type)
                .header(header::CONTENT_ENCODING, encoding);
            Body::from(body)
        }
        Reply::Delayed { .. } => unreachable!(),
    };
    builder.body(body).unwrap_or_else(|_| {
        Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::empty())
            .unwrap()
    })
}

/// One fixture server per engine, each answering its engine's path with
/// its fixture, and the `search.toml` that points the engines at them.
pub(crate) struct Engines {
    pub duckduckgo: Fixture,
    pub bing: Fixture,
    pub mojeek: Fixture,
    pub wikipedia: Fixture,
    pub brave: Fixture,
    pub searxng: Fixture,
}

impl Engines {
    pub(crate) async fn start() -> Self {
        let engines = Self {
            duckduckgo: Fixture::start().await,
            bing: Fixture::start().await,
            mojeek: Fixture::start().await,
            wikipedia: Fixture::start().await,
            brave: Fixture::start().await,
            searxng: Fixture::start().await,
        };
        engines
            .duckduckgo
            .route("/html/", Reply::html(fixture("duckduckgo.html")));
        engines
            .bing
            .route("/search", Reply::html(fixture("bing.html")));
        engines
            .mojeek
            .route("/search", Reply::html(fixture("mojeek.html")));
        engines
            .wikipedia
            .route("/w/api.php", Reply::json(fixture("wikipedia.json")));
        engines
            .brave
            .route("/res/v1/web/search", Reply::json(fixture("brave.json")));
        engines
            .searxng
            .route("/search", Reply::json(fixture("searxng.json")));
        engines
    }

    /// `search.toml` with every engine at its fixture (Brave's key in
    /// `BRAVE_TEST_KEY`), and `extra` appended.
    pub(crate) fn config(&self, extra: &str) -> String {
        format!(
            "[search]\ntimeout_ms = 3000\ndeadline_ms = 5000\n\n\
             [engines.duckduckgo]\nbase_url = \"{}\"\n\n\
             [engines.bing]\nbase_url = \"{}\"\n\n\
             [engines.mojeek]\nbase_url = \"{}\"\n\n\
             [engines.wikipedia]\nbase_url = \"{}\"\n\n\
             [engines.brave]\nbase_url = \"{}\"\napi_key_env = \"BRAVE_TEST_KEY\"\n\n\
             [engines.searxng]\nbase_url = \"{}\"\n\n{extra}",
            self.duckduckgo.base_url(),
            self.bing.base_url(),
            self.mojeek.base_url(),
            self.wikipedia.base_url(),
            self.brave.base_url(),
            self.searxng.base_url(),
        )
    }
}

/// A temp home with `config/search.toml`.
pub(crate) struct TestHome {
    pub dir: tempfile::TempDir,
}

impl TestHome {
    pub(crate) fn new(search_toml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(dir.path().join("config/search.toml"), search_toml).unwrap();
        Self { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn home(&self) -> crabtalk_home::Home {
        crabtalk_home::Home::new(self.dir.path())
    }

    pub(crate) fn write_config(&self, text: &str) {
        std::fs::write(self.dir.path().join("config/search.toml"), text).unwrap();
    }

    /// Runs the CLI in this home (the Brave key set for the fixtures).
    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        cli(self.dir.path(), args)
    }

    pub(crate) fn health_file(&self) -> PathBuf {
        self.dir.path().join("search/health.json")
    }
}

/// Runs the binary with `args` in `home`. The CLI blocks, so tests call
/// it from a blocking thread while their fixture servers keep running.
pub(crate) fn cli(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CRABTALK_HOME", home)
        .env("BRAVE_TEST_KEY", "test-key")
        .env_remove("BRAVE_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// [`cli`] off the async thread.
pub(crate) async fn cli_async(home: &Path, args: &[&str]) -> Output {
    let home = home.to_owned();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&home, &args)
    })
    .await
    .unwrap()
}

pub(crate) fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The service running in a home (`-v`: its log has the debug lines),
/// killed when dropped.
pub(crate) struct Service {
    pub child: Child,
    pub home: Home,
}

impl Service {
    pub(crate) async fn start(home: &Home) -> Self {
        let log = std::fs::File::create(home.root().join("search-test.log")).unwrap();
        let child = Command::new(BIN)
            .args(["-v", "run"])
            .env("CRABTALK_HOME", home.root())
            .env("BRAVE_TEST_KEY", "test-key")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let pid = child.id();
        let port_file = home.port_file("search").unwrap();
        eventually("search's port file", || {
            PortFile::read(&port_file).is_ok_and(|f| f.pid == Some(pid))
        })
        .await;
        Self {
            child,
            home: home.clone(),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn port(&self) -> u16 {
        PortFile::read(&self.home.port_file("search").unwrap())
            .unwrap()
            .port
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port())
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.home.root().join("search-test.log")).unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// An rmcp client of `service` over streamable HTTP: every MCP client a
/// test opens is made here (what `/mcp` asks of a caller is added once).
pub(crate) async fn client(service: &Service) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = crabtalk_kit::mcp::owner_client_config(&service.home, service.port()).unwrap();
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// Calls tool `name` with `args` (an object), failing after the patience.
pub(crate) async fn call(client: &Client, name: &'static str, args: Value) -> CallToolResult {
    within(name, client.call_tool(tool_call(name, args)))
        .await
        .unwrap()
}

/// The parameters of a call of `name` with `args` (an object).
pub(crate) fn tool_call(name: &'static str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap())
}

/// The text of an error result.
pub(crate) fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
