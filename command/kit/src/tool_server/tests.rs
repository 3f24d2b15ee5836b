//! The tool server through a real rmcp client, over an in-memory pipe.

use std::sync::Mutex;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock, RequestMetaObject};
use rmcp::service::RunningService;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::*;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountArgs {
    /// How many.
    #[serde(default)]
    n: Option<u32>,
    /// Whether to shout.
    #[serde(default)]
    loud: bool,
}

/// What the test's handlers share: where a slow call tells that it
/// started, finished or was dropped, and what lets it finish.
#[derive(Default)]
struct Probe {
    told: Mutex<Option<mpsc::UnboundedSender<(String, &'static str)>>>,
    release: Arc<tokio::sync::Notify>,
}

/// Tells that a slow call was dropped, unless it finished.
struct DropTold(Option<(mpsc::UnboundedSender<(String, &'static str)>, String)>);

impl Drop for DropTold {
    fn drop(&mut self) {
        if let Some((tx, name)) = self.0.take() {
            let _ = tx.send((name, "dropped"));
        }
    }
}

impl Probe {
    async fn count(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let args: CountArgs = call.read()?;
        if args.n == Some(13) {
            return Err(ToolError::failed("13 is not counted"));
        }
        Ok(json!({"n": args.n, "loud": args.loud, "agent": call.meta_text("ai.crabtalk/agent")}))
    }

    async fn slow(self: Arc<Self>, call: ToolCall) -> CallToolResult {
        let tx = self
            .told
            .lock()
            .unwrap()
            .clone()
            .expect("a channel to tell");
        let name = call.name().to_owned();
        let _ = tx.send((name.clone(), "started"));
        let mut guard = DropTold(Some((tx, name.clone())));
        self.release.notified().await;
        if let Some((tx, name)) = guard.0.take() {
            let _ = tx.send((name, "finished"));
        }
        CallToolResult::success(vec![ContentBlock::text("done")])
    }
}

const HINTS: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};

fn server(probe: Probe) -> ToolServer {
    ToolServer::builder(
        Program {
            name: "crabtalk-probe",
            version: "9.8.7",
        },
        probe,
    )
    .instructions("A probe.")
    .tool(
        ToolSpec {
            name: "count",
            title: "Count things",
            description: "Counts.",
            input: Input::of::<CountArgs>(),
            hints: Hints {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            on_cancel: OnCancel::Finish,
        },
        Probe::count,
    )
    .tool(
        ToolSpec {
            name: "slow_stop",
            title: "Wait, stopped when cancelled",
            description: "Waits.",
            input: Input::schema(json!({"type": "object", "properties": {}})),
            hints: HINTS,
            on_cancel: OnCancel::Stop,
        },
        Probe::slow,
    )
    .tool(
        ToolSpec {
            name: "slow_finish",
            title: "Wait, finished when cancelled",
            description: "Waits.",
            input: Input::schema(json!({"type": "object", "properties": {}})),
            hints: HINTS,
            on_cancel: OnCancel::Finish,
        },
        Probe::slow,
    )
    .build()
}

async fn connect(server: ToolServer) -> RunningService<rmcp::RoleClient, ()> {
    let (theirs, ours) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(theirs).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(ours).await.expect("the MCP handshake")
}

fn params(name: &'static str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(arguments.as_object().cloned().unwrap())
}

#[tokio::test]
async fn initialize_names_the_program_and_every_tool_carries_its_hints() {
    let client = connect(server(Probe::default())).await;
    let info = client
        .peer_info()
        .expect("the server's answer to initialize");
    let program = info.server_info.clone().expect("serverInfo");
    assert_eq!(
        (program.name.as_str(), program.version.as_str()),
        ("crabtalk-probe", "9.8.7")
    );
    assert_eq!(info.instructions.as_deref(), Some("A probe."));
    assert!(info.capabilities.tools.is_some());

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["count", "slow_stop", "slow_finish"]);
    let listed = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(listed["title"], "Count things");
    assert_eq!(listed["description"], "Counts.");
    assert_eq!(
        listed["annotations"],
        json!({"title": "Count things", "readOnlyHint": true, "destructiveHint": false,
               "idempotentHint": true, "openWorldHint": false})
    );
    // The optional integer is an integer, for forms made from the schema.
    let n = &listed["inputSchema"]["properties"]["n"];
    assert_eq!(n["type"], "integer", "{n}");
    assert_eq!(
        listed["inputSchema"]["properties"]["loud"]["type"],
        "boolean"
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_call_gets_its_arguments_coerced_and_its_meta() {
    let client = connect(server(Probe::default())).await;
    let mut call = params("count", json!({"n": "1", "loud": "true"}));
    call.meta = Some(RequestMetaObject(
        json!({"ai.crabtalk/agent": "crab"})
            .as_object()
            .cloned()
            .unwrap()
            .into(),
    ));
    let result = client.call_tool(call).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(
        result.structured_content,
        Some(json!({"n": 1, "loud": true, "agent": "crab"}))
    );
    // No arguments read as `{}`.
    let bare = client
        .call_tool(CallToolRequestParams::new("count"))
        .await
        .unwrap();
    assert_eq!(
        bare.structured_content,
        Some(json!({"n": null, "loud": false, "agent": null}))
    );
    let _ = client.cancel().await;
}

fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test]
async fn bad_arguments_and_failures_are_errors_the_model_reads() {
    let client = connect(server(Probe::default())).await;
    let bad = client
        .call_tool(params("count", json!({"n": "many"})))
        .await
        .unwrap();
    assert!(error_text(&bad).starts_with("invalid arguments"), "{bad:?}");
    let unknown = client
        .call_tool(params("count", json!({"m": 1})))
        .await
        .unwrap();
    assert!(
        error_text(&unknown).contains("unknown field `m`"),
        "{unknown:?}"
    );
    let failed = client
        .call_tool(params("count", json!({"n": 13})))
        .await
        .unwrap();
    assert_eq!(error_text(&failed), "13 is not counted");
    let _ = client.cancel().await;
}

/// A tool that does not exist is a protocol error (MCP's "unknown tool":
/// invalid params), not a result; its message still names the tools.
#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_error_naming_the_tools() {
    let client = connect(server(Probe::default())).await;
    let missing = client
        .call_tool(params("counter", json!({})))
        .await
        .expect_err("no result for a tool that does not exist");
    let rmcp::ServiceError::McpError(error) = missing else {
        panic!("a JSON-RPC error, not {missing:?}");
    };
    assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert_eq!(
        error.message,
        "no tool `counter`; the tools are count, slow_stop and slow_finish"
    );
    let _ = client.cancel().await;
}

async fn told(
    rx: &mut mpsc::UnboundedReceiver<(String, &'static str)>,
    what: &'static str,
) -> (String, &'static str) {
    crabtalk_testkit::within(what, rx.recv())
        .await
        .expect("the handlers' channel is open")
}

/// A call of `slow_finish` runs to its end after its client cancels it; one
/// of `slow_stop` is dropped at once. Both are cancelled as rmcp's client
/// does when the caller drops the call: `notifications/cancelled`, the
/// session staying open.
#[tokio::test]
async fn a_cancelled_call_finishes_or_stops_as_its_tool_says() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let probe = Probe::default();
    *probe.told.lock().unwrap() = Some(tx);
    let release = probe.release.clone();
    let client = connect(server(probe)).await;
    let start = |name: &'static str| {
        let peer = client.peer().clone();
        tokio::spawn(async move { peer.call_tool_once(params(name, json!({}))).await })
    };
    let finishing = start("slow_finish");
    assert_eq!(
        told(&mut rx, "slow_finish to start").await,
        ("slow_finish".into(), "started")
    );
    let stopping = start("slow_stop");
    assert_eq!(
        told(&mut rx, "slow_stop to start").await,
        ("slow_stop".into(), "started")
    );
    // Cancelled in this order; the server reads the notices in order, so
    // once slow_stop is dropped, slow_finish's cancel has been read too.
    finishing.abort();
    stopping.abort();
    assert_eq!(
        told(&mut rx, "slow_stop to be dropped").await,
        ("slow_stop".into(), "dropped")
    );
    release.notify_one();
    assert_eq!(
        told(&mut rx, "slow_finish to finish").await,
        ("slow_finish".into(), "finished")
    );
    let _ = client.cancel().await;
}
