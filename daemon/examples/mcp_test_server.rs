//! A small MCP server for the daemon's tests — a real one, built with rmcp.
//!
//! ```text
//! mcp_test_server                      serve over stdio
//! mcp_test_server http PORT_FILE       serve streamable HTTP on 127.0.0.1:0
//!                                      at /mcp and announce the port in
//!                                      PORT_FILE, as a component does
//! ```
//!
//! Tools: `add {a, b}`, `slow {secs}` (sleeps), `whoami` (its pid and
//! `$MCP_TEST_NAME`), `fail` (an error result). With `$MCP_TEST_PID_DIR`
//! set, it writes an empty file named after its pid there when it starts,
//! so tests can count processes.

use std::sync::Arc;
use std::time::Duration;

use crabtalk_home::PortFile;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServiceExt, schemars, tool, tool_router};

#[derive(Clone, Default)]
struct TestTools;

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

#[tool_router(server_handler)]
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
}

#[tokio::main]
async fn main() {
    if let Some(dir) = std::env::var_os("MCP_TEST_PID_DIR") {
        let _ = std::fs::write(
            std::path::Path::new(&dir).join(std::process::id().to_string()),
            "",
        );
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("stdio") => {
            let running = TestTools
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve over stdio");
            let _ = running.waiting().await;
        }
        Some("http") => {
            let port_file = args.get(1).expect("http needs a port file path");
            let service = StreamableHttpService::new(
                || Ok(TestTools),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let app = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
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
