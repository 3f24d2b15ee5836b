//! The door of every component: the owner's token on every request but a
//! bare `GET /health`, foreign origins refused, sessions capped — over real
//! HTTP to the kit's `run_mcp` in a temp home, as a client written from the
//! MCP specification would speak.

use std::sync::Arc;

use crabtalk_home::{Home, PortFile, Service};
use crabtalk_kit::mcp::{CappedSessions, mcp_router_with_sessions, run_mcp};
use crabtalk_testkit::{HttpAnswer, HttpRequest};

#[derive(Clone)]
struct Empty;
impl rmcp::ServerHandler for Empty {}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"by-hand","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// A component serving in this process until the test ends.
struct Served {
    home: Home,
    port: u16,
    sessions: Arc<CappedSessions>,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn serve(cap: usize) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let service = Service::new("probe", "crabtalk-probe", "test").unwrap();
    let sessions = Arc::new(CappedSessions::with_cap(cap));
    let router = mcp_router_with_sessions(|| Empty, sessions.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    {
        let home = home.clone();
        let service = service.clone();
        tokio::spawn(async move {
            run_mcp(&home, &service, router, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    }
    let path = service.port_file(&home);
    let port = crabtalk_testkit::poll_until("the port file", async || {
        PortFile::read(&path).ok().map(|file| file.port)
    })
    .await;
    Served {
        home,
        port,
        sessions,
        _dir: dir,
        _stop: stop,
    }
}

/// The session an answer opened.
fn session(answer: &HttpAnswer) -> Option<String> {
    answer.header("mcp-session-id").map(str::to_owned)
}

#[tokio::test]
async fn strangers_are_refused_before_mcp_and_never_open_a_session() {
    let served = serve(8).await;
    let token = crabtalk_home::token::read_token(&served.home).unwrap();
    let port = served.port;
    for _ in 0..200 {
        let answer = HttpRequest::post(port, "/mcp", INITIALIZE)
            .send_async()
            .await;
        assert_eq!(answer.status, 401, "{}", answer.head);
        assert!(
            answer
                .header("www-authenticate")
                .is_some_and(|value| value.to_ascii_lowercase().starts_with("bearer")),
            "{}",
            answer.head
        );
        assert!(session(&answer).is_none());
    }
    let short = format!("Bearer {}", &token[..10]);
    for wrong in ["Bearer nope", "Basic abc", &short, "Bearer "] {
        let answer = HttpRequest::post(port, "/mcp", INITIALIZE)
            .header("Authorization", wrong)
            .send_async()
            .await;
        assert_eq!(answer.status, 401, "{wrong}: {}", answer.head);
    }
    // A direct call without a session, and a GET stream: refused the same.
    let call = HttpRequest::post(port, "/mcp", LIST).send_async().await;
    assert_eq!(call.status, 401);
    let stream = HttpRequest::get(port, "/mcp").send_async().await;
    assert_eq!(stream.status, 401);
    assert_eq!(served.sessions.len(), 0, "a stranger opened a session");

    // The health answer says nothing to a stranger, everything to the owner.
    let outside = HttpRequest::get(port, "/health").send_async().await;
    assert_eq!(outside.status, 200);
    assert_eq!(outside.json(), serde_json::json!({"ok": true}));
    let owner = HttpRequest::get(port, "/health")
        .bearer(&token)
        .send_async()
        .await;
    let health: crabtalk_home::Health = serde_json::from_str(&owner.body).unwrap();
    assert_eq!(health.service, "probe");

    // The owner's token opens a session.
    let answer = HttpRequest::post(port, "/mcp", INITIALIZE)
        .bearer(&token)
        .send_async()
        .await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    assert!(session(&answer).is_some());
    assert_eq!(served.sessions.len(), 1);
}

#[tokio::test]
async fn foreign_origins_are_refused_even_with_the_token() {
    let served = serve(8).await;
    let token = crabtalk_home::token::read_token(&served.home).unwrap();
    let port = served.port;
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
    ] {
        for request in [
            HttpRequest::post(port, "/mcp", INITIALIZE),
            HttpRequest::get(port, "/health"),
        ] {
            let answer = request
                .bearer(&token)
                .header("Origin", origin)
                .send_async()
                .await;
            assert_eq!(answer.status, 403, "{origin}: {}", answer.head);
        }
    }
    assert_eq!(served.sessions.len(), 0);
    let local = HttpRequest::post(port, "/mcp", INITIALIZE)
        .bearer(&token)
        .header("Origin", "http://localhost:6274")
        .send_async()
        .await;
    assert_eq!(local.status, 200, "{}", local.head);
}

#[tokio::test]
async fn sessions_are_capped_and_the_longest_idle_is_closed_first() {
    let served = serve(4).await;
    let token = crabtalk_home::token::read_token(&served.home).unwrap();
    let port = served.port;
    let mut ids = Vec::new();
    for _ in 0..6 {
        let answer = HttpRequest::post(port, "/mcp", INITIALIZE)
            .bearer(&token)
            .send_async()
            .await;
        assert_eq!(answer.status, 200, "{}", answer.head);
        ids.push(session(&answer).unwrap());
        assert!(served.sessions.len() <= 4);
    }
    assert_eq!(served.sessions.len(), 4);
    let use_session = async |id: &str| {
        HttpRequest::post(port, "/mcp", LIST)
            .bearer(&token)
            .mcp_session(id)
            .send_async()
            .await
            .status
    };
    // The two opened first were closed to make room; the newest works.
    assert_eq!(use_session(&ids[0]).await, 404);
    assert_eq!(use_session(&ids[1]).await, 404);
    assert_eq!(use_session(&ids[5]).await, 200);
}

#[tokio::test]
async fn a_replaced_token_works_at_once_and_the_old_one_stops() {
    let served = serve(8).await;
    let old = crabtalk_home::token::read_token(&served.home).unwrap();
    let port = served.port;
    let status = async |token: &str| {
        HttpRequest::post(port, "/mcp", INITIALIZE)
            .bearer(token)
            .send_async()
            .await
            .status
    };
    assert_eq!(status(&old).await, 200);
    crabtalk_home::write_atomic_private(&served.home.token_file(), b"rotated-by-the-daemon\n")
        .unwrap();
    assert_eq!(status("rotated-by-the-daemon").await, 200);
    assert_eq!(status(&old).await, 401);
}
