//! Test support shared by every crabtalk crate's tests.
//!
//! - [`ScriptedLlm`]: an HTTP server on `127.0.0.1:0` that answers the
//!   OpenAI chat-completions and Anthropic messages APIs from a script, with
//!   streams shaped like the real ones (deltas split mid-word, tool-call
//!   arguments split across chunks, usage at the end, `[DONE]`), whole JSON
//!   replies to requests that do not ask for a stream, optionally streams
//!   cut anywhere in their bytes, and a count of streams their client
//!   dropped.
//! - [`TestDaemon`]: the real `crabtalkd` binary running in a temp
//!   `CRABTALK_HOME`, reached with the real protocol client.
//! - [`eventually`], [`poll_until`] (asynchronous attempts) and [`wait_for`]
//!   (from a plain thread): wait for a condition with a timeout instead of
//!   sleeping; [`poll_within`] gives up after a chosen time without failing,
//!   for waits that report more when they fail or that try again.
//! - [`HttpRequest`]: one HTTP/1.1 request written by hand to a port on
//!   127.0.0.1, and its [`HttpAnswer`] as it came (a service's door as a
//!   client written from the specification meets it).
//! - [`fixture_engines`]: Wikipedia and DuckDuckGo answered from
//!   crabtalk-search's fixtures, for runs of the whole family.
//! - [`cpu`]: how much CPU a process uses over a window (idle checks), and
//!   some of its threads, by name.
//! - [`corpus`]: synthetic chat-like text with Zipf word frequencies, for
//!   the benches of the memory store, the session index and the daemon.
//! - [`usage`]: a process's CPU time and resident memory from `/proc`, for
//!   idle-cost checks.
//! - [`bridge`]: `crabtalkd mcp` as a child, with an rmcp client on its
//!   stdio and a host that records progress and list changes and answers
//!   elicitations.
//! - [`mcp_host`]: real MCP hosts for the tests of `crabtalkd mcp` — the
//!   official MCP Python SDK's client and the MCP inspector's CLI — each
//!   skipped, with the reason, where the machine lacks it.
//!
//! The fake Telegram Bot API is `crabtalk-fake-bot-api`, beside the
//! gateway it stands in front of (`components/telegram/fake-bot-api`).

pub mod bridge;
pub mod corpus;
pub mod cpu;
mod daemon;
mod engines;
mod http;
mod llm;
pub mod mcp_host;
pub mod turn;
pub mod usage;

use std::future::Future;
use std::time::Duration;

pub use daemon::{TestDaemon, daemon_binary, example_binary};
pub use engines::{fixture_engines, search_fixture};
pub use http::{HttpAnswer, HttpRequest};
pub use llm::{Reply, ScriptedLlm, ToolCall};

/// How long a test waits for anything before failing.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Awaits `future`, failing the test with `what` if it takes longer than
/// [`PATIENCE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {PATIENCE:?} waiting for {what}"),
    }
}

/// Polls `condition` until it holds, failing the test after [`PATIENCE`].
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    poll_until(what, async || condition().then_some(())).await
}

/// Polls the asynchronous `attempt` (a request to a daemon, a read of a
/// component's state) every 10 ms until it answers `Some`, and returns that
/// value; fails the test after [`PATIENCE`].
pub async fn poll_until<T>(what: &str, attempt: impl AsyncFnMut() -> Option<T>) -> T {
    match poll_within(PATIENCE, attempt).await {
        Some(value) => value,
        None => panic!("timed out after {PATIENCE:?} waiting for {what}"),
    }
}

/// Polls `attempt` like [`poll_until`], for at most `limit`: `None` if it
/// never answered `Some`. For a wait that says more than its name when it
/// fails (`let Some(..) = poll_within(PATIENCE, ..).await else { panic!(..) }`
/// with the log or the screen), or one that gives up and tries again.
pub async fn poll_within<T>(
    limit: Duration,
    mut attempt: impl AsyncFnMut() -> Option<T>,
) -> Option<T> {
    let polled = async {
        loop {
            if let Some(value) = attempt().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(limit, polled).await.ok()
}

/// Polls `condition` from a plain thread until it returns `Some`, failing
/// the test after `timeout`: for tests that drive processes without a
/// runtime.
pub fn wait_for<T>(what: &str, timeout: Duration, mut condition: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
