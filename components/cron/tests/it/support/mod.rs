//! The real `crabtalk-cron` binary next to a real daemon in a temp home.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crabtalk_cron::{RunLog, RunRecord};
use crabtalk_home::{Home, PortFile};
use crabtalk_testkit::{ScriptedLlm, TestDaemon, daemon_binary, eventually};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_crabtalk-cron");

/// A daemon with a scripted model, and the cron service of its home.
pub(crate) struct Setup {
    pub llm: ScriptedLlm,
    pub daemon: TestDaemon,
    pub cron: Option<Child>,
}

impl Setup {
    pub(crate) async fn start(crons: &str) -> Self {
        let llm = ScriptedLlm::start().await;
        let daemon =
            TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
        write_crons(daemon.path(), crons);
        Self {
            llm,
            daemon,
            cron: None,
        }
    }

    pub(crate) fn home(&self) -> Home {
        self.daemon.home()
    }

    /// Starts the service and waits for its port file.
    pub(crate) async fn start_cron(&mut self, env: &[(&str, &str)]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.daemon.path().join("test-cron.log"))
            .unwrap();
        let child = Command::new(BIN)
            .args(["-v", "run"])
            .env("CRABTALK_HOME", self.daemon.path())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let pid = child.id();
        self.cron = Some(child);
        let port_file = self.home().port_file("cron").unwrap();
        eventually("cron's port file", || {
            PortFile::read(&port_file).is_ok_and(|f| f.pid == Some(pid))
        })
        .await;
    }

    pub(crate) fn cron_port(&self) -> u16 {
        PortFile::read(&self.home().port_file("cron").unwrap())
            .unwrap()
            .port
    }

    /// What the running service answers the owner at `GET /health` (a
    /// stranger is told only that it is alive).
    pub(crate) fn health(&self) -> serde_json::Value {
        let token = crabtalk_home::token::read_token(&self.home()).unwrap();
        crabtalk_testkit::HttpRequest::get(self.cron_port(), "/health")
            .bearer(&token)
            .send()
            .json()
    }

    pub(crate) fn kill9_cron(&mut self) {
        if let Some(mut child) = self.cron.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn cron_log(&self) -> String {
        std::fs::read_to_string(self.daemon.path().join("test-cron.log")).unwrap_or_default()
    }

    pub(crate) fn runs(&self) -> Vec<RunRecord> {
        RunLog::of(&self.home()).read(None, usize::MAX).unwrap()
    }

    /// Waits until `count` records satisfy `pred` (failing with the
    /// service's log).
    pub(crate) async fn runs_where(
        &self,
        what: &str,
        count: usize,
        pred: impl Fn(&RunRecord) -> bool,
    ) -> Vec<RunRecord> {
        let found = || {
            self.runs()
                .into_iter()
                .filter(|r| pred(r))
                .collect::<Vec<_>>()
        };
        let enough = async || (found().len() >= count).then_some(());
        let waited = crabtalk_testkit::poll_within(crabtalk_testkit::PATIENCE, enough).await;
        if waited.is_none() {
            panic!(
                "timed out waiting for {what}; runs: {:?}\ncron log:\n{}",
                self.runs(),
                self.cron_log()
            );
        }
        found()
    }

    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        cli(self.daemon.path(), args)
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.kill9_cron();
    }
}

pub(crate) fn write_crons(home: &Path, text: &str) {
    let dir = home.join("config");
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("crons.toml");
    // Whole file at once, like an editor's save.
    crabtalk_home::write_atomic(&path, text.as_bytes()).unwrap();
}

pub(crate) fn cli(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CRABTALK_HOME", home)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub(crate) fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
