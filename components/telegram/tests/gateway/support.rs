//! The real `crabtalk-telegram` binary between a fake Bot API and a real
//! daemon (with a scripted model) in a temp home.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crabtalk_fake_bot_api::{FakeBotApi, TOKEN, TgUser};
use crabtalk_home::{Home, PortFile};
use crabtalk_testkit::{ScriptedLlm, TestDaemon, daemon_binary, eventually};
use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_crabtalk-telegram");

/// Alice may talk to the agent; Mallory may not.
pub(crate) fn alice() -> TgUser {
    TgUser::new(111, "Alice")
}

pub(crate) fn mallory() -> TgUser {
    TgUser::new(666, "Mallory")
}

pub(crate) struct Setup {
    pub llm: ScriptedLlm,
    pub daemon: TestDaemon,
    pub api: FakeBotApi,
    pub gateway: Option<Child>,
}

impl Setup {
    /// A daemon, a fake Bot API, and `config/telegram.toml` with the fake's
    /// URL and token, `allow = [111]` unless `extra` sets `allow`, and
    /// `extra`.
    pub(crate) async fn start(extra: &str) -> Self {
        Self::start_with_daemon("", extra).await
    }

    /// [`Setup::start`], with `daemon_extra` appended to the daemon's
    /// `config.toml` (e.g. a `[conversations]` table).
    pub(crate) async fn start_with_daemon(daemon_extra: &str, extra: &str) -> Self {
        let llm = ScriptedLlm::start().await;
        let config = format!(
            "{}\n{daemon_extra}\n",
            TestDaemon::config_for(&llm.base_url())
        );
        let daemon = TestDaemon::start(daemon_binary(), &config).await;
        let api = FakeBotApi::start().await;
        let setup = Self {
            llm,
            daemon,
            api,
            gateway: None,
        };
        setup.write_config(extra);
        setup
    }

    pub(crate) fn write_config(&self, extra: &str) {
        let allow = if extra.contains("allow =") {
            ""
        } else {
            "allow = [111]\n"
        };
        let poll = if extra.contains("poll_timeout_secs") {
            ""
        } else {
            "poll_timeout_secs = 5\n"
        };
        let text = format!(
            "token = \"{TOKEN}\"\napi_base_url = \"{}\"\n{poll}{allow}{extra}\n",
            self.api.url()
        );
        let path = self.home().component_config("telegram").unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        crabtalk_home::write_atomic_private(&path, text.as_bytes()).unwrap();
    }

    pub(crate) fn home(&self) -> Home {
        self.daemon.home()
    }

    pub(crate) fn log_path(&self) -> PathBuf {
        self.daemon.path().join("test-telegram.log")
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Starts the gateway and waits until it polls.
    pub(crate) async fn start_gateway(&mut self) {
        self.spawn_gateway();
        let polls = self.api.calls_of("getUpdates").len();
        let log = self.log_path();
        self.api
            .wait_until("the gateway's first poll", |api| {
                api.calls_of("getUpdates").len() > polls
            })
            .await;
        let _ = log;
    }

    /// Starts the gateway without waiting for anything.
    pub(crate) fn spawn_gateway(&mut self) {
        assert!(self.gateway.is_none());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let child = Command::new(BIN)
            .args(["-v", "run"])
            .env("CRABTALK_HOME", self.daemon.path())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.gateway = Some(child);
    }

    pub(crate) fn kill9_gateway(&mut self) {
        if let Some(mut child) = self.gateway.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM; the exit status.
    pub(crate) async fn stop_gateway(&mut self) -> std::process::ExitStatus {
        let mut child = self.gateway.take().expect("the gateway runs");
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        crabtalk_testkit::poll_until("the gateway to exit", async || child.try_wait().unwrap())
            .await
    }

    /// Waits until the gateway's log contains `needle`.
    pub(crate) async fn log_says(&self, needle: &str) {
        let said = async || self.log().contains(needle).then_some(());
        let waited = crabtalk_testkit::poll_within(crabtalk_testkit::PATIENCE, said).await;
        assert!(
            waited.is_some(),
            "the log never said {needle:?}:\n{}",
            self.log()
        );
    }

    /// The port the gateway's MCP tools are on (waiting for its file).
    /// An MCP client of the gateway, as the owner's programs connect.
    pub(crate) async fn mcp_client(&self) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
        use rmcp::ServiceExt;
        let port = self.mcp_port().await;
        crabtalk_kit::install_ring();
        let config = crabtalk_kit::mcp::owner_client_config(&self.home(), port).unwrap();
        ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
            config,
        ))
        .await
        .unwrap()
    }

    pub(crate) async fn mcp_port(&self) -> u16 {
        let path = self.home().port_file("telegram").unwrap();
        eventually("the gateway's port file", || PortFile::read(&path).is_ok()).await;
        PortFile::read(&path).unwrap().port
    }

    /// The body of `GET /health` of the running gateway (waiting for its
    /// port file), as text.
    pub(crate) async fn health(&self) -> String {
        let port = self.mcp_port().await;
        let token = crabtalk_home::token::read_token(&self.home()).unwrap();
        let answer = crabtalk_testkit::HttpRequest::get(port, "/health")
            .bearer(&token)
            .send_async()
            .await;
        assert_eq!(answer.status, 200, "{}\n\n{}", answer.head, answer.body);
        answer.body
    }

    /// The user message of the `n`th model request (0-based).
    pub(crate) fn model_saw(&self, n: usize) -> String {
        let requests = self.llm.requests();
        let request = requests
            .get(n)
            .unwrap_or_else(|| panic!("no model request {n}: {requests:?}"));
        last_user_text(request)
    }

    /// The offset file of the fake bot.
    pub(crate) fn offset(&self) -> Option<i64> {
        let path = self
            .daemon
            .path()
            .join("telegram")
            .join(format!("offset-{}", crabtalk_fake_bot_api::BOT_ID));
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("── the gateway's log ──\n{}", self.log());
        }
        self.kill9_gateway();
    }
}

/// The text of the last user message of an OpenAI request body.
pub(crate) fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// Every message text of an OpenAI request body, joined.
pub(crate) fn all_text(request: &Value) -> String {
    request["messages"].to_string()
}

impl Setup {
    /// Waits until the gateway has begun two polls after `since`. With no
    /// update waiting, the fake holds each poll for `poll_timeout_secs`
    /// (5 s here), so the second begins at least that long after `since`:
    /// long enough to see that something repeating every 4 s has stopped.
    pub(crate) async fn two_polls_after(&self, since: tokio::time::Instant) {
        self.api
            .wait_until("two more polls", |api| {
                api.calls_of("getUpdates")
                    .iter()
                    .filter(|c| c.at > since)
                    .count()
                    >= 2
            })
            .await;
    }
}
