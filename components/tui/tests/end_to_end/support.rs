//! Driving the TUI: a daemon with a scripted LLM, the binary in a
//! pseudo-terminal whose output feeds a `vt100` screen, and waits on what
//! the screen shows (never fixed sleeps).

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crabtalk_testkit::{PATIENCE, ScriptedLlm, TestDaemon, daemon_binary};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub const ENTER: &str = "\r";
pub const ALT_ENTER: &str = "\x1b\r";
pub const CTRL_C: &str = "\x03";
pub const CTRL_D: &str = "\x04";
pub const ESC: &str = "\x1b";
pub const UP: &str = "\x1b[A";
pub const DOWN: &str = "\x1b[B";

/// The user name the TUI runs as (its default sender).
pub const USER: &str = "tester";

pub fn tui_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crabtalk-tui"))
}

/// A scripted LLM and a daemon answering from it.
pub async fn daemon() -> (ScriptedLlm, TestDaemon) {
    let llm = ScriptedLlm::start().await;
    let daemon = TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
    (llm, daemon)
}

/// The TUI in a pseudo-terminal.
pub struct Tui {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    /// Starts `crabtalk-tui args…` for `home` in a terminal of `rows` ×
    /// `cols`, and waits for its prompt.
    pub async fn start(home: &Path, args: &[&str], rows: u16, cols: u16) -> Self {
        let tui = Self::spawn(home, home, args, rows, cols);
        tui.wait_for_prompt().await;
        tui
    }

    pub fn spawn(home: &Path, cwd: &Path, args: &[&str], rows: u16, cols: u16) -> Self {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pseudo-terminal");
        let mut command = CommandBuilder::new(tui_binary());
        command.args(args);
        command.cwd(cwd);
        command.env("CRABTALK_HOME", home);
        command.env("USER", USER);
        command.env("TERM", "xterm-256color");
        command.env_remove("CRABTALK_TOKEN");
        let child = pty
            .slave
            .spawn_command(command)
            .expect("start crabtalk-tui");
        drop(pty.slave);
        let mut reader = pty
            .master
            .try_clone_reader()
            .expect("the terminal's output");
        let writer = pty.master.take_writer().expect("the terminal's input");
        let rows = NonZeroU16::new(rows).expect("rows");
        let cols = NonZeroU16::new(cols).expect("cols");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let feed = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0; 8192];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => feed
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .process(&buffer[..n]),
                }
            }
        });
        Self {
            screen,
            writer,
            child,
            _master: pty.master,
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.writer
            .write_all(keys.as_bytes())
            .expect("write to the terminal");
        self.writer.flush().expect("flush the terminal");
    }

    /// Types `line` and Enter.
    pub fn line(&mut self, line: &str) {
        self.send(line);
        self.send(ENTER);
    }

    /// What the screen shows, row by row.
    pub fn contents(&self) -> String {
        self.with_screen(|screen| screen.contents())
    }

    /// Runs `check` on the screen.
    pub fn with_screen<T>(&self, check: impl FnOnce(&vt100::Screen) -> T) -> T {
        check(
            self.screen
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .screen(),
        )
    }

    /// Waits until the screen satisfies `condition`.
    pub async fn wait_until(&self, what: &str, condition: impl Fn(&vt100::Screen) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if self.with_screen(&condition) {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "timed out after {PATIENCE:?} waiting for {what}; the screen shows:\n{}",
                    self.contents()
                );
            }
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }

    /// Waits until the screen shows `text`.
    pub async fn wait_for(&self, text: &str) {
        self.wait_until(&format!("{text:?} on the screen"), |screen| {
            screen.contents().contains(text)
        })
        .await
    }

    /// Waits until the cursor is visible on an empty prompt.
    pub async fn wait_for_prompt(&self) {
        self.wait_until("an empty prompt with the cursor on it", |screen| {
            let (row, _) = screen.cursor_position();
            let cols = screen.size().1.get();
            let line = screen.rows(0, cols).nth(row as usize).unwrap_or_default();
            !screen.hide_cursor() && line.trim_end() == "›"
        })
        .await
    }

    /// Waits for the process to exit and returns its exit code.
    pub async fn wait_exit(&mut self) -> u32 {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the TUI") {
                return status.exit_code();
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "the TUI did not exit; the screen shows:\n{}",
                    self.contents()
                );
            }
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
