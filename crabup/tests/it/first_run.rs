//! First-run setup without a terminal: a service that cannot run without
//! its config is refused before anything is installed or started — by
//! `start`, `restart` and `up --path` alike — with a message that says what
//! to do; one that can (the daemon without providers) is not held back.

use crate::support::{Sandbox, stderr};

#[test]
fn telegram_without_a_token_and_without_a_terminal_fails_clearly_and_starts_nothing() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary("crabtalk-telegram", "echo started >&2\nexec sleep 600\n");
    let out = sandbox.crabup(&["telegram", "start"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("no bot token") && err.contains("config/telegram.toml"),
        "{err}"
    );
    assert!(err.contains("crabup telegram start"), "{err}");
    assert!(
        sandbox.run_files().is_empty(),
        "something was started: {:?}",
        sandbox.run_files()
    );
    assert!(!sandbox.home.join("logs/telegram.log").exists());
    assert_eq!(sandbox.ps_row("telegram")["state"], "stopped");
}

#[test]
fn a_service_that_is_not_installed_says_how_to_install_it() {
    let sandbox = Sandbox::new();
    let out = sandbox.crabup(&["search", "start"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("crabup pull search"),
        "{}",
        stderr(&out)
    );
    let status = sandbox.crabup(&["search", "status"]);
    assert_eq!(status.status.code(), Some(3));
    let stop = sandbox.ok(&["search", "stop"]);
    assert!(stop.contains("search is not running"), "{stop}");
}

/// A service binary that runs until SIGTERM.
const RUNS_UNTIL_TERM: &str = "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n";

fn assert_refused_for_the_token(out: &std::process::Output) {
    assert!(!out.status.success());
    let err = stderr(out);
    assert!(
        err.contains("no bot token") && err.contains("config/telegram.toml"),
        "{err}"
    );
}

#[test]
fn restart_without_a_token_and_without_a_terminal_fails_clearly_and_starts_nothing() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary("crabtalk-telegram", RUNS_UNTIL_TERM);
    let out = sandbox.crabup(&["telegram", "restart"]);
    assert_refused_for_the_token(&out);
    assert!(
        sandbox.run_files().is_empty(),
        "something was started: {:?}",
        sandbox.run_files()
    );
    assert!(!sandbox.home.join("logs/telegram.log").exists());
    assert_eq!(sandbox.ps_row("telegram")["state"], "stopped");
}

#[test]
fn up_from_a_checkout_does_not_start_a_component_that_lacks_its_config() {
    let sandbox = Sandbox::new().with_cargo_shim();
    for binary in [
        "crabtalkd",
        "crabtalk-cron",
        "crabtalk-search",
        "crabtalk-telegram",
    ] {
        sandbox.fake_binary(binary, RUNS_UNTIL_TERM);
    }
    // A config file makes telegram one of `up`'s services; it has no token.
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    std::fs::write(sandbox.home.join("config/telegram.toml"), "token = \"\"\n").unwrap();
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let out = sandbox
        .command(&["up", "--path", &checkout.display().to_string()])
        .env("CRABUP_READY_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert_refused_for_the_token(&out);
    assert!(
        stderr(&out).contains("not up: telegram"),
        "{}",
        stderr(&out)
    );
    for name in ["daemon", "cron", "search"] {
        assert_eq!(sandbox.ps_row(name)["state"], "running", "{name}");
    }
    assert_eq!(sandbox.ps_row("telegram")["state"], "stopped");
    assert!(!sandbox.home.join("logs/telegram.log").exists());
    for name in ["daemon", "cron", "search"] {
        sandbox.ok(&[name, "stop"]);
    }
}

/// The note about providers looks where the daemon will: with the
/// process backend the daemon inherits this shell, so a key exported
/// here is found; an empty one, or none, is not.
#[test]
fn the_provider_note_finds_a_key_in_the_shell_the_daemon_inherits() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary("crabtalkd", RUNS_UNTIL_TERM);
    let start = |key: Option<&str>| {
        let mut command = sandbox.command(&["daemon", "start"]);
        command
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("OLLAMA_HOST", "127.0.0.1:9")
            .env("CRABUP_READY_TIMEOUT_SECS", "0");
        if let Some(key) = key {
            command.env("OPENAI_API_KEY", key);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        sandbox.ok(&["daemon", "stop"]);
        stderr(&out)
    };
    let said = start(Some("sk-from-the-shell"));
    assert!(!said.contains("no LLM provider"), "{said}");
    for key in [None, Some("")] {
        let said = start(key);
        assert!(
            said.contains("no LLM provider yet") && said.contains("OPENAI_API_KEY=sk-"),
            "{key:?}: {said}"
        );
    }
    let doctor = sandbox
        .command(&["doctor"])
        .env("OPENAI_API_KEY", "sk-from-the-shell")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .output()
        .unwrap();
    let text = crate::support::stdout(&doctor);
    assert!(
        text.contains("[ok  ] providers: no [[providers]] in config.toml; the daemon will use OPENAI_API_KEY from this shell's environment"),
        "{text}"
    );
}

/// Everything a program in a pseudo-terminal printed, as it arrives.
struct Terminal {
    output: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    writer: Box<dyn std::io::Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Terminal {
    fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        use portable_pty::{CommandBuilder, PtySize, native_pty_system};
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 200,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_crabup"));
        command.args(args);
        command.env("CRABTALK_HOME", &sandbox.home);
        command.env("CARGO_HOME", &sandbox.cargo_home);
        command.env("CRABTALK_SERVICE_MANAGER", "process");
        command.env("PATH", sandbox.path());
        command.env_remove("RUST_LOG");
        let child = pty.slave.spawn_command(command).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let output = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let feed = output.clone();
        std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                feed.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Self {
            output,
            writer,
            child,
            _master: pty.master,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    fn wait_for(&self, what: &str) -> String {
        let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
        loop {
            let text = self.text();
            if text.contains(what) {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no {what:?} on the terminal:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn type_line(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\r").unwrap();
        self.writer.flush().unwrap();
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

use std::io::Read as _;

#[test]
fn the_bot_token_is_not_shown_while_it_is_typed() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary("crabtalk-telegram", RUNS_UNTIL_TERM);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let api = runtime.block_on(crabtalk_fake_bot_api::FakeBotApi::start());
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    std::fs::write(
        sandbox.home.join("config/telegram.toml"),
        format!("api_base_url = \"{}\"\nallow = [111]\n", api.url()),
    )
    .unwrap();
    let mut terminal = Terminal::start(&sandbox, &["telegram", "start"]);
    terminal.wait_for("Telegram bot token");
    let token = crabtalk_fake_bot_api::TOKEN;
    terminal.type_line(token);
    terminal.wait_for("Telegram knows this token");
    let shown = terminal.wait_for("Saved the token");
    assert!(
        !shown.contains(token),
        "the token was echoed on the terminal:\n{shown}"
    );
    let saved = std::fs::read_to_string(sandbox.home.join("config/telegram.toml")).unwrap();
    assert!(saved.contains(token), "{saved}");
    drop(terminal);
    drop(api);
}
