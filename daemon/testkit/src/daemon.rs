//! The real daemon in a temp home.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crabtalk_home::Home;
use crabtalk_proto::Client;
use tempfile::TempDir;

use crate::ScriptedLlm;

/// The `crabtalkd` binary built alongside the running test: `$CRABTALKD_BIN`
/// if set, else `target/<profile>/crabtalkd` next to the test executable.
pub fn daemon_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("CRABTALKD_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test> → target/<profile>/crabtalkd
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let binary = profile_dir.join(format!("crabtalkd{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is not built; run the tests through cargo test --workspace",
        binary.display()
    );
    binary
}

/// An example binary built alongside the running test
/// (`target/<profile>/examples/<name>`); `cargo test` builds examples.
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let binary = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is not built; run the tests through cargo test --workspace (or cargo build --examples)",
        binary.display()
    );
    binary
}

/// A running `crabtalkd` with its own temp `CRABTALK_HOME`.
pub struct TestDaemon {
    home: TempDir,
    binary: PathBuf,
    child: Option<Child>,
    env: Vec<(String, String)>,
}

impl TestDaemon {
    /// Writes `config` as `config.toml` in a new temp home and starts the
    /// daemon there, waiting until it answers.
    pub async fn start(binary: impl AsRef<Path>, config: &str) -> Self {
        Self::start_with_env(binary, config, &[]).await
    }

    /// Like [`TestDaemon::start`], with extra environment variables.
    pub async fn start_with_env(
        binary: impl AsRef<Path>,
        config: &str,
        env: &[(&str, &str)],
    ) -> Self {
        let mut daemon = Self::unstarted(binary, config);
        daemon.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        daemon.spawn().await;
        daemon
    }

    /// A [`ScriptedLlm`] and a daemon that uses it: the config of
    /// [`TestDaemon::config_for`] followed by `extra_config` (more TOML
    /// tables, each starting with a newline), started and answering. What
    /// most tests of the daemon and of its clients begin with.
    pub async fn on_scripted_llm(extra_config: &str) -> (ScriptedLlm, Self) {
        let llm = ScriptedLlm::start().await;
        let config = format!("{}{extra_config}", Self::config_for(&llm.base_url()));
        let daemon = Self::start(daemon_binary(), &config).await;
        (llm, daemon)
    }

    /// A temp home with `config` as its `config.toml` and no daemon running
    /// yet: for tests of what happens before the daemon comes up. Start it
    /// with [`TestDaemon::spawn`].
    pub fn unstarted(binary: impl AsRef<Path>, config: &str) -> Self {
        let home = tempfile::tempdir().expect("a temp home");
        std::fs::write(home.path().join("config.toml"), config).expect("write config.toml");
        Self {
            home,
            binary: binary.as_ref().to_owned(),
            child: None,
            env: Vec::new(),
        }
    }

    /// The config used by most tests: one OpenAI-compatible provider at
    /// `base_url` serving the model `scripted`, TCP on a free port.
    pub fn config_for(base_url: &str) -> String {
        format!(
            "default_model = \"scripted\"\n\n\
             [[providers]]\n\
             kind = \"openai-compatible\"\n\
             base_url = \"{base_url}\"\n\
             models = [\"scripted\"]\n\n\
             [transport]\n\
             tcp = \"127.0.0.1:0\"\n\n\
             [llm]\n\
             retry_backoff_ms = 20\n"
        )
    }

    pub fn home(&self) -> Home {
        Home::new(self.home.path())
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    /// The daemon's log (its stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.home.path().join("test-daemon.log")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the daemon is running").id()
    }

    /// Starts the daemon (again) in this home and waits until it answers.
    pub async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the daemon is already running");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the daemon log");
        let mut command = Command::new(&self.binary);
        command
            .arg("run")
            .arg("-v")
            .env("CRABTALK_HOME", self.home.path())
            .env_remove("OLLAMA_HOST")
            .env_remove("RUST_LOG");
        // Nothing of the machine's own providers: every key a preset reads.
        for preset in crabtalk_home::provider_env::PROVIDER_PRESETS {
            for var in preset.key_vars {
                command.env_remove(var);
            }
        }
        let child = command
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", self.binary.display()));
        self.child = Some(child);
        let home = self.home();
        let deadline = tokio::time::Instant::now() + crate::PATIENCE;
        loop {
            if let Ok(client) = Client::connect_uds(home.socket_path()).await
                && client.ping().await.is_ok()
            {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten())
            {
                panic!(
                    "crabtalkd exited with {status} during startup; log:\n{}",
                    self.log()
                );
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "crabtalkd did not answer in time; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A client connected over the socket.
    pub async fn client(&self) -> Client {
        Client::connect_uds(self.home().socket_path())
            .await
            .expect("connect to the test daemon")
    }

    /// Waits until the daemon lists the component `name` as connected for
    /// `agent`, with `tools` tools: found in `run/`, reached, its tools
    /// listed.
    pub async fn until_component_connected(&self, agent: &str, name: &str, tools: u32) {
        let client = self.client().await;
        crate::poll_until(
            &format!("the daemon to connect to {name} with {tools} tools"),
            async || {
                let list = client
                    .list_mcps(crabtalk_proto::msg::ListMcpsMsg {
                        agent: agent.into(),
                    })
                    .await
                    .unwrap();
                list.mcps
                    .iter()
                    .any(|info| {
                        info.name == name
                            && info.status == crabtalk_proto::msg::McpStatus::Connected as i32
                            && info.tool_count == tools
                    })
                    .then_some(())
            },
        )
        .await;
    }

    /// The TCP token the daemon keeps in `run/token`.
    pub fn token(&self) -> String {
        std::fs::read_to_string(self.home().token_file())
            .expect("the daemon's run/token")
            .trim()
            .to_owned()
    }

    /// The `127.0.0.1:port` of the daemon's TCP listener, once its port
    /// file is there (it is written a moment before the socket answers,
    /// so it is there after [`TestDaemon::spawn`]).
    pub async fn tcp_addr(&self) -> String {
        let path = self.home().daemon_port_file();
        let port = crate::within("the daemon's port file", async {
            loop {
                if let Ok(file) = crabtalk_home::PortFile::read(&path) {
                    return file.port;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        format!("127.0.0.1:{port}")
    }

    /// A client connected over TCP with the token from `run/token`.
    pub async fn tcp_client(&self) -> Client {
        Client::connect_tcp(&self.tcp_addr().await, Some(&self.token()))
            .await
            .expect("connect to the test daemon over TCP")
    }

    /// Sends SIGKILL and reaps the process.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub async fn stop(&mut self) -> ExitStatus {
        #[cfg(unix)]
        return self.signal(libc::SIGTERM).await;
        #[cfg(not(unix))]
        {
            let mut child = self.child.take().expect("the daemon is running");
            let _ = child.kill();
            child.wait().expect("wait for the daemon")
        }
    }

    /// Sends `signal` and waits for the process to exit.
    #[cfg(unix)]
    pub async fn signal(&mut self, signal: libc::c_int) -> ExitStatus {
        let mut child = self.child.take().expect("the daemon is running");
        // SAFETY: signalling a child we own.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        crate::within("the daemon to exit", async {
            loop {
                if let Some(status) = child.try_wait().expect("wait for the daemon") {
                    return status;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
    }

    /// Stops and starts the daemon in the same home.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.kill9();
    }
}
