//! A small MCP server for the daemon's tests — a real one, built with rmcp.
//!
//! ```text
//! mcp_test_server                      serve over stdio
//! mcp_test_server http PORT_FILE       serve streamable HTTP on 127.0.0.1 at
//!                                      /mcp and announce the port in
//!                                      PORT_FILE, as a component does
//! ```
//!
//! Tools: `add {a, b}`, `slow {secs}` (sleeps), `whoami` (its pid and
//! `$MCP_TEST_NAME`), `fail` (an error result), `huge {bytes}` (a text of
//! that many bytes), `caller` (the `_meta` of the call, as JSON), and `grow`,
//! which makes the hidden tool `extra` appear and sends
//! `notifications/tools/list_changed`.
//!
//! Behaviour, from the environment:
//!
//! - `MCP_TEST_PID_DIR`: write an empty file named after its pid there at
//!   start, so tests can count processes; with `MCP_TEST_CHILD=1` it also
//!   starts a `sleep` in its process group and writes `child-<pid>` there.
//! - `MCP_TEST_STDERR`: a line written to stderr at start.
//! - `MCP_TEST_CRASH_AFTER_MS`: print "fatal: crashing on purpose" to stderr
//!   and exit 3 that long after start.
//! - `MCP_TEST_IGNORE_EOF=1`: keep running after stdin closes (stdio), as
//!   a badly behaved server does.
//! - `MCP_TEST_PORT`: the port to bind in http mode (default: any).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crabtalk_home::PortFile;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams, RequestMetaObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler,
    tool_router,
};

#[derive(Clone, Default)]
struct TestTools {
    /// Whether `grow` was called: `extra` is listed from then on.
    grown: Arc<AtomicBool>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How long to take, in seconds.
    secs: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct HugeArgs {
    /// How many bytes of text to answer with.
    bytes: usize,
}

#[tool_router]
impl TestTools {
    #[tool(description = "Add two numbers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Take a while to answer")]
    async fn slow(&self, Parameters(SlowArgs { secs }): Parameters<SlowArgs>) -> String {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        "done".into()
    }

    #[tool(description = "Say which process answers")]
    fn whoami(&self) -> String {
        format!(
            "pid={} name={}",
            std::process::id(),
            std::env::var("MCP_TEST_NAME").unwrap_or_default()
        )
    }

    #[tool(description = "Always fail")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("it failed on purpose")])
    }

    #[tool(description = "Answer with a text of the given size")]
    fn huge(&self, Parameters(HugeArgs { bytes }): Parameters<HugeArgs>) -> String {
        "x".repeat(bytes)
    }

    #[tool(description = "Say who called, from the call's _meta")]
    fn caller(&self, meta: RequestMetaObject) -> String {
        serde_json::to_string(&meta.0).unwrap_or_default()
    }

    #[tool(description = "Add the tool extra, and tell the client")]
    async fn grow(&self, peer: Peer<RoleServer>) -> String {
        self.grown.store(true, Ordering::SeqCst);
        match peer.notify_tool_list_changed().await {
            Ok(()) => "grown".into(),
            Err(err) => format!("grown, but the notification failed: {err}"),
        }
    }

    #[tool(description = "A tool that appears after grow")]
    fn extra(&self) -> String {
        "extra is here".into()
    }
}

#[tool_handler]
impl ServerHandler for TestTools {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let grown = self.grown.load(Ordering::SeqCst);
        let tools = Self::tool_router()
            .list_all()
            .into_iter()
            .filter(|tool| grown || tool.name != "extra")
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

#[tokio::main]
async fn main() {
    if let Some(dir) = env("MCP_TEST_PID_DIR") {
        let dir = std::path::PathBuf::from(dir);
        let _ = std::fs::write(dir.join(std::process::id().to_string()), "");
        if env("MCP_TEST_CHILD").is_some() {
            let mut child = std::process::Command::new("sleep")
                .arg("1000")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start sleep");
            let _ = std::fs::write(dir.join(format!("child-{}", child.id())), "");
            // Reaped here if it ends; it is meant to die with the group.
            std::thread::spawn(move || child.wait());
        }
    }
    if let Some(line) = env("MCP_TEST_STDERR") {
        eprintln!("{line}");
    }
    if let Some(after) = env("MCP_TEST_CRASH_AFTER_MS").and_then(|ms| ms.parse().ok()) {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(after)).await;
            eprintln!("fatal: crashing on purpose");
            std::process::exit(3);
        });
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("stdio") => {
            let running = TestTools::default()
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve over stdio");
            let _ = running.waiting().await;
            if env("MCP_TEST_IGNORE_EOF").is_some() {
                std::future::pending::<()>().await;
            }
        }
        Some("http") => {
            let port_file = args.get(1).expect("http needs a port file path");
            let service = StreamableHttpService::new(
                || Ok(TestTools::default()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let app = axum::Router::new().nest_service("/mcp", service);
            let port: u16 = env("MCP_TEST_PORT")
                .and_then(|port| port.parse().ok())
                .unwrap_or(0);
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .expect("bind");
            let port = listener.local_addr().expect("address").port();
            PortFile::for_this_process(port)
                .write(std::path::Path::new(port_file))
                .expect("write the port file");
            axum::serve(listener, app).await.expect("serve over HTTP");
        }
        Some(other) => panic!("unknown mode {other:?}: use stdio or http PORT_FILE"),
    }
}
