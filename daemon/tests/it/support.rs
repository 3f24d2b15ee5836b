//! What the daemon's tests set up again and again, written once: the rmcp
//! test server (`examples/mcp_test_server.rs`) as a command or as a
//! running component, a turn whose model calls tools, and whether a
//! process still runs. (A daemon on the scripted model is
//! `TestDaemon::on_scripted_llm`, and `crabtalkd mcp` with an rmcp client
//! is `BridgeProcess`, both in the testkit, for other crates' tests too.)

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crabtalk_proto::Client;
use crabtalk_proto::msg::{StreamMsg, ToolResultEvent};
use crabtalk_testkit::turn::Turn;
use crabtalk_testkit::{Reply, ScriptedLlm, ToolCall, example_binary};

/// The rmcp test server, for an MCP server's `command`.
pub(crate) fn test_server() -> String {
    test_server_path().display().to_string()
}

fn test_server_path() -> PathBuf {
    example_binary("mcp_test_server")
}

/// The test server serving streamable HTTP and announcing itself in
/// `port_file` (a component when that is `run/<name>.port`); killed and
/// reaped when dropped.
pub(crate) struct HttpServer(Child);

impl HttpServer {
    /// Starts it with `env` added to its environment.
    pub(crate) fn start(port_file: &Path, env: &[(&str, String)]) -> Self {
        let child = Command::new(test_server_path())
            .arg("http")
            .arg(port_file)
            .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the MCP test server");
        Self(child)
    }

    /// Kills it (if it still runs) and reaps it.
    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    /// Kills it and leaves it a zombie, as a parent slow to reap does.
    pub(crate) fn kill_unreaped(&mut self) {
        self.0.kill().expect("kill the MCP test server");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs one turn of `request` in which the model makes `calls`, then says
/// "done"; the turn must end without an error. The tool results, in the
/// order of `calls`.
pub(crate) async fn call_tools(
    llm: &ScriptedLlm,
    client: &Client,
    request: StreamMsg,
    calls: Vec<ToolCall>,
) -> Vec<ToolResultEvent> {
    let ids: Vec<String> = calls.iter().map(|call| call.id.clone()).collect();
    llm.push(Reply::tools(calls));
    llm.push(Reply::text("done"));
    let turn = Turn::run(client, request).await;
    assert!(turn.end().error.is_empty(), "{}", turn.end().error);
    let results = turn.tool_results();
    ids.iter()
        .map(|id| {
            results
                .iter()
                .find(|result| &result.call_id == id)
                .cloned()
                .expect("a result per call")
        })
        .collect()
}

/// Whether a process is still running (a zombie waiting to be reaped does
/// not count).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// The tool names a model request offered (each tool must have one).
pub(crate) fn offered_tools(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| {
                    let name = tool["function"]["name"].as_str();
                    name.unwrap_or_else(|| panic!("a tool without a name: {tool}"))
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}
