//! The kit's loopback MCP client against a real component (the echo
//! example) and against HTTP servers that answer badly on purpose.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use crabtalk_home::{Home, PortFile};
use crabtalk_kit::loopback::{LoopbackHttp, MAX_JSON_BODY, owner_transport};
use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, PingRequest};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use serde_json::json;

use crate::support::{TIMEOUT, echo_service, signal, spawn_echo, wait_for};

#[test]
fn calls_a_component_tool_with_the_owner_token_and_closes_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let mut child = spawn_echo(&home);
    let path = echo_service().port_file(&home);
    let file = wait_for("the port file", TIMEOUT, || PortFile::read(&path).ok());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // No TLS provider is installed: none is needed.
        let client =
            ().serve(owner_transport(&home, file.port).unwrap())
                .await
                .expect("MCP handshake");
        let tools = client.list_all_tools().await.expect("tools/list");
        assert_eq!(tools[0].name, "echo");
        let params = CallToolRequestParams::new("echo")
            .with_arguments(json!({"text": "crab ✓"}).as_object().cloned().unwrap());
        let result = client.call_tool(params).await.expect("tools/call");
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, "crab ✓");
        client.cancel().await.expect("the session closes");

        // A wrong token is refused, and the refusal says why.
        let config = StreamableHttpClientTransportConfig::with_uri(
            crabtalk_kit::mcp::component_url(file.port),
        )
        .auth_header("not-the-token");
        let refused = ()
            .serve(StreamableHttpClientTransport::with_client(
                LoopbackHttp,
                config,
            ))
            .await
            .expect_err("a wrong token is refused");
        assert!(refused.to_string().contains("401"), "{refused}");
    });

    signal(&child, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
}

fn ping() -> ClientJsonRpcMessage {
    ClientJsonRpcMessage::request(
        ClientRequest::PingRequest(PingRequest::default()),
        rmcp::model::NumberOrString::Number(1),
    )
}

/// Serves `answer` to every POST on a loopback port; the URL of `/mcp`.
async fn serve(answer: fn() -> Response) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route(
        "/mcp",
        post(move |_headers: HeaderMap| async move { answer() }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}/mcp")
}

async fn post_ping(uri: String, max_event: usize) -> Result<StreamableHttpPostResponse, String> {
    LoopbackHttp
        .post_message_with_max_sse_event_size(
            Arc::from(uri),
            ping(),
            None,
            None,
            HashMap::new(),
            max_event,
        )
        .await
        .map_err(|err| err.to_string())
}

#[tokio::test]
async fn an_event_over_the_limit_ends_the_stream_with_an_error() {
    let uri = serve(|| {
        let event = format!("data: {}\n\n", "x".repeat(4096));
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from(format!("data: {{}}\n\n{event}")))
            .unwrap()
    })
    .await;
    let Ok(StreamableHttpPostResponse::Sse(mut events, _)) = post_ping(uri, 1024).await else {
        panic!("an event stream");
    };
    // The small event may come first, if its bytes came in a chunk of their own.
    let err = loop {
        match events.next().await.expect("an error before the end") {
            Ok(event) => assert_eq!(event.data.as_deref(), Some("{}")),
            Err(err) => break err,
        }
    };
    assert!(err.to_string().contains("larger than 1024 bytes"), "{err}");
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn a_json_answer_over_the_limit_is_refused_not_cut() {
    let uri = serve(|| {
        Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(vec![b' '; MAX_JSON_BODY + 1]))
            .unwrap()
    })
    .await;
    let err = post_ping(uri, 1024).await.expect_err("too large");
    assert!(err.contains("exceeded the maximum size"), "{err}");
}

#[tokio::test]
async fn a_json_rpc_error_with_a_failure_status_reaches_the_caller() {
    let uri = serve(|| {
        Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header("content-type", "application/json")
            .body(Body::from(
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}"#,
            ))
            .unwrap()
    })
    .await;
    match post_ping(uri, 1024).await {
        Ok(StreamableHttpPostResponse::Json(message, _)) => {
            assert!(serde_json::to_string(&message).unwrap().contains("-32600"));
        }
        other => panic!("expected the JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_overloaded_server_keeps_its_status_for_retries() {
    let uri = serve(|| {
        Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header("retry-after", "3")
            .body(Body::from("busy"))
            .unwrap()
    })
    .await;
    let err = LoopbackHttp
        .post_message(Arc::from(uri), ping(), None, None, HashMap::new())
        .await
        .expect_err("503");
    match err {
        StreamableHttpError::HttpStatus(status) => assert!(format!("{status:?}").contains("503")),
        other => panic!("expected the status, got {other}"),
    }
}

#[tokio::test]
async fn a_remote_address_is_never_sent_the_token() {
    let err = LoopbackHttp
        .post_message(
            Arc::from("http://192.0.2.1:80/mcp"),
            ping(),
            None,
            Some("secret".into()),
            HashMap::new(),
        )
        .await
        .expect_err("not loopback");
    assert!(
        err.to_string()
            .contains("not an http:// URL on a loopback address"),
        "{err}"
    );
}
