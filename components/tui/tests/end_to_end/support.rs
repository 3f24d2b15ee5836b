//! Driving the TUI: a daemon with a scripted LLM, the binary in a
//! pseudo-terminal whose output feeds a `vt100` screen, and waits on what
//! the screen shows (never fixed sleeps).
//!
//! The screen also counts what tmux (with its default `scroll-on-clear`)
//! would push into the scrollback: "clear to the end of the screen" with
//! the cursor in the top-left corner. `vt100` itself keeps no such count.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crabtalk_testkit::{PATIENCE, ScriptedLlm, TestDaemon, daemon_binary, poll_within};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub(crate) const ENTER: &str = "\r";
pub(crate) const ALT_ENTER: &str = "\x1b\r";
pub(crate) const CTRL_C: &str = "\x03";
pub(crate) const CTRL_D: &str = "\x04";
pub(crate) const ESC: &str = "\x1b";
pub(crate) const UP: &str = "\x1b[A";
pub(crate) const DOWN: &str = "\x1b[B";
pub(crate) const TAB: &str = "\t";
pub(crate) const CTRL_L: &str = "\x0c";

/// The user name the TUI runs as (its default sender).
pub(crate) const USER: &str = "tester";

pub(crate) fn tui_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crabtalk-tui"))
}

/// A scripted LLM and a daemon answering from it.
pub(crate) async fn daemon() -> (ScriptedLlm, TestDaemon) {
    let llm = ScriptedLlm::start().await;
    let daemon = TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
    (llm, daemon)
}

/// The TUI in a pseudo-terminal.
pub(crate) struct Tui {
    screen: Arc<Mutex<vt100::Parser>>,
    /// Screens tmux would have pushed into its scrollback.
    pushed: Arc<AtomicUsize>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    /// Starts `crabtalk-tui args…` for `home` in a terminal of `rows` ×
    /// `cols`, and waits for its prompt.
    pub(crate) async fn start(home: &Path, args: &[&str], rows: u16, cols: u16) -> Self {
        let tui = Self::spawn(home, home, args, rows, cols);
        tui.wait_for_prompt().await;
        tui
    }

    pub(crate) fn spawn(home: &Path, cwd: &Path, args: &[&str], rows: u16, cols: u16) -> Self {
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
        let pushed = Arc::new(AtomicUsize::new(0));
        let feed = screen.clone();
        let count = pushed.clone();
        std::thread::spawn(move || {
            let mut buffer = [0; 8192];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let mut parser =
                            feed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                        process_counting_pushes(&mut parser, &buffer[..n], &count);
                    }
                }
            }
        });
        Self {
            screen,
            pushed,
            writer,
            child,
            _master: pty.master,
        }
    }

    /// Types `keys`.
    pub(crate) fn send(&mut self, keys: &str) {
        self.writer
            .write_all(keys.as_bytes())
            .expect("write to the terminal");
        self.writer.flush().expect("flush the terminal");
    }

    /// Types `line` and Enter.
    pub(crate) fn line(&mut self, line: &str) {
        self.send(line);
        self.send(ENTER);
    }

    /// What the screen shows, row by row.
    pub(crate) fn contents(&self) -> String {
        self.with_screen(|screen| screen.contents())
    }

    /// Runs `check` on the screen.
    pub(crate) fn with_screen<T>(&self, check: impl FnOnce(&vt100::Screen) -> T) -> T {
        check(
            self.screen
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .screen(),
        )
    }

    /// Waits until the screen satisfies `condition`.
    pub(crate) async fn wait_until(&self, what: &str, condition: impl Fn(&vt100::Screen) -> bool) {
        let shown = async || self.with_screen(&condition).then_some(());
        if poll_within(PATIENCE, shown).await.is_none() {
            panic!(
                "timed out after {PATIENCE:?} waiting for {what}; the screen shows:\n{}",
                self.contents()
            );
        }
    }

    /// Waits until the screen shows `text`.
    pub(crate) async fn wait_for(&self, text: &str) {
        self.wait_until(&format!("{text:?} on the screen"), |screen| {
            screen.contents().contains(text)
        })
        .await
    }

    /// Waits until the cursor is visible on an empty prompt (`agent ›`).
    pub(crate) async fn wait_for_prompt(&self) {
        self.wait_until("an empty prompt with the cursor on it", |screen| {
            let (row, _) = screen.cursor_position();
            let cols = screen.size().1.get();
            let line = screen.rows(0, cols).nth(row as usize).unwrap_or_default();
            !screen.hide_cursor() && line.trim_end().ends_with('›')
        })
        .await
    }

    /// How many times tmux would have pushed the screen into its
    /// scrollback so far.
    pub(crate) fn scrollback_pushes(&self) -> usize {
        self.pushed.load(Ordering::SeqCst)
    }

    /// Waits for the process to exit and returns its exit code.
    pub(crate) async fn wait_exit(&mut self) -> u32 {
        let child = &mut self.child;
        let exited = async || child.try_wait().expect("poll the TUI");
        match poll_within(PATIENCE, exited).await {
            Some(status) => status.exit_code(),
            None => panic!(
                "the TUI did not exit; the screen shows:\n{}",
                self.contents()
            ),
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Feeds `bytes` to `parser`, counting each "clear to the end of the
/// screen" (`CSI J`, `CSI 0 J`) that finds the cursor at the top-left
/// corner: tmux's `scroll-on-clear` moves the screen into the scrollback
/// then.
fn process_counting_pushes(parser: &mut vt100::Parser, bytes: &[u8], pushed: &AtomicUsize) {
    let mut start = 0;
    let mut index = 0;
    while index + 2 < bytes.len() {
        let sequence = if bytes[index..].starts_with(b"\x1b[J") {
            Some(3)
        } else if bytes[index..].starts_with(b"\x1b[0J") {
            Some(4)
        } else {
            None
        };
        if let Some(len) = sequence {
            parser.process(&bytes[start..index]);
            if parser.screen().cursor_position() == (0, 0) {
                pushed.fetch_add(1, Ordering::SeqCst);
            }
            parser.process(&bytes[index..index + len]);
            index += len;
            start = index;
        } else {
            index += 1;
        }
    }
    parser.process(&bytes[start..]);
}
