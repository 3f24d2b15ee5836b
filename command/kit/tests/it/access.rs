//! The door of every component: the owner's token on every request but a
//! bare `GET /health`, foreign origins refused, sessions capped — over real
//! HTTP to the kit's `run_mcp` in a temp home, as a client written from the
//! MCP specification would speak.

use std::sync::Arc;
use std::time::Duration;

use crabtalk_home::{Home, PortFile, Service};
use crabtalk_kit::mcp::{CappedSessions, mcp_router_with_sessions, run_mcp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    let port = crabtalk_testkit::within("the port file", async {
        loop {
            if let Ok(file) = PortFile::read(&path) {
                return file.port;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
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

/// One HTTP/1.1 exchange: the status, the head and the body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn session(&self) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
    }
}

async fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    stream.write_all(text.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    crabtalk_testkit::within("the answer", stream.read_to_end(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test]
async fn strangers_are_refused_before_mcp_and_never_open_a_session() {
    let served = serve(8).await;
    let token = crabtalk_home::token::read_token(&served.home).unwrap();
    for _ in 0..200 {
        let answer = request(served.port, "POST", "/mcp", &[], INITIALIZE).await;
        assert_eq!(answer.status, 401, "{}", answer.head);
        assert!(
            answer
                .head
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{}",
            answer.head
        );
        assert!(answer.session().is_none());
    }
    for wrong in ["Bearer nope", "Basic abc", &bearer(&token[..10]), "Bearer "] {
        let answer = request(
            served.port,
            "POST",
            "/mcp",
            &[("Authorization", wrong)],
            INITIALIZE,
        )
        .await;
        assert_eq!(answer.status, 401, "{wrong}: {}", answer.head);
    }
    // A direct call without a session, and a GET stream: refused the same.
    let call = request(served.port, "POST", "/mcp", &[], LIST).await;
    assert_eq!(call.status, 401);
    let stream = request(served.port, "GET", "/mcp", &[], "").await;
    assert_eq!(stream.status, 401);
    assert_eq!(served.sessions.len(), 0, "a stranger opened a session");

    // The health answer says nothing to a stranger, everything to the owner.
    let outside = request(served.port, "GET", "/health", &[], "").await;
    assert_eq!(outside.status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&outside.body).unwrap(),
        serde_json::json!({"ok": true})
    );
    let owner = request(
        served.port,
        "GET",
        "/health",
        &[("Authorization", &bearer(&token))],
        "",
    )
    .await;
    let health: crabtalk_home::Health = serde_json::from_str(&owner.body).unwrap();
    assert_eq!(health.service, "probe");

    // The owner's token opens a session.
    let answer = request(
        served.port,
        "POST",
        "/mcp",
        &[("Authorization", &bearer(&token))],
        INITIALIZE,
    )
    .await;
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    assert!(answer.session().is_some());
    assert_eq!(served.sessions.len(), 1);
}

#[tokio::test]
async fn foreign_origins_are_refused_even_with_the_token() {
    let served = serve(8).await;
    let token = crabtalk_home::token::read_token(&served.home).unwrap();
    let auth = bearer(&token);
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
    ] {
        for (method, path, body) in [("POST", "/mcp", INITIALIZE), ("GET", "/health", "")] {
            let answer = request(
                served.port,
                method,
                path,
                &[("Authorization", &auth), ("Origin", origin)],
                body,
            )
            .await;
            assert_eq!(answer.status, 403, "{origin} {path}: {}", answer.head);
        }
    }
    assert_eq!(served.sessions.len(), 0);
    let local = request(
        served.port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Origin", "http://localhost:6274"),
        ],
        INITIALIZE,
    )
    .await;
    assert_eq!(local.status, 200, "{}", local.head);
}

#[tokio::test]
async fn sessions_are_capped_and_the_longest_idle_is_closed_first() {
    let served = serve(4).await;
    let token = crabtalk_home::token::read_token(&served.home).unwrap();
    let auth = bearer(&token);
    let mut ids = Vec::new();
    for _ in 0..6 {
        let answer = request(
            served.port,
            "POST",
            "/mcp",
            &[("Authorization", &auth)],
            INITIALIZE,
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.head);
        ids.push(answer.session().unwrap());
        assert!(served.sessions.len() <= 4);
    }
    assert_eq!(served.sessions.len(), 4);
    let port = served.port;
    let use_session = |id: String| {
        let auth = auth.clone();
        async move {
            request(
                port,
                "POST",
                "/mcp",
                &[
                    ("Authorization", &auth),
                    ("Mcp-Session-Id", &id),
                    ("MCP-Protocol-Version", "2025-06-18"),
                ],
                LIST,
            )
            .await
            .status
        }
    };
    // The two opened first were closed to make room; the newest works.
    assert_eq!(use_session(ids[0].clone()).await, 404);
    assert_eq!(use_session(ids[1].clone()).await, 404);
    assert_eq!(use_session(ids[5].clone()).await, 200);
}

#[tokio::test]
async fn a_replaced_token_works_at_once_and_the_old_one_stops() {
    let served = serve(8).await;
    let old = crabtalk_home::token::read_token(&served.home).unwrap();
    let port = served.port;
    let status = |token: String| async move {
        request(
            port,
            "POST",
            "/mcp",
            &[("Authorization", &bearer(&token))],
            INITIALIZE,
        )
        .await
        .status
    };
    assert_eq!(status(old.clone()).await, 200);
    crabtalk_home::write_atomic_private(&served.home.token_file(), b"rotated-by-the-daemon\n")
        .unwrap();
    assert_eq!(status("rotated-by-the-daemon".into()).await, 200);
    assert_eq!(status(old).await, 401);
}
