//! The smallest crabtalk component: an MCP service with one tool, `echo`,
//! built on the kit's `main_mcp`.
//!
//! It is a complete component — `crabtalk-echo run` serves MCP on a port it
//! announces in `$CRABTALK_HOME/run/echo.port` and removes on SIGTERM — and
//! the tests use it as a real service to start, stop and talk to.
//!
//! ```sh
//! cargo run -p crabtalk-kit --example echo_component -- run -v
//! ```

use std::process::ExitCode;

use crabtalk_home::Service;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{schemars, tool, tool_router};

/// Echoes text back to the agent.
#[derive(Clone, Default)]
struct Echo;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to say back.
    text: String,
}

#[tool_router(server_handler)]
impl Echo {
    #[tool(description = "Return the text unchanged")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        // The log shows that a call reached the service.
        eprintln!("echo: {text}");
        text
    }
}

fn main() -> ExitCode {
    let service = Service::new("echo", "crabtalk-echo", "crabtalk echo test component")
        .expect("a valid service name");
    crabtalk_kit::main_mcp(
        service,
        "A crabtalk component that echoes text (a test and an example)",
        Echo::default,
    )
}
