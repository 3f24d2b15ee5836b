//! What a stdio server wrote to stderr: the reason it died is usually there.
//!
//! The last [`KEEP`] lines are kept, each cut to [`MAX_LINE`] bytes, so a
//! server that logs a lot costs a bounded amount of memory. Every line goes
//! to the daemon's log at debug level; when the server stops or fails, the
//! kept lines are logged as a warning, and the last one is shown by
//! `ListMcps`. The tail outlives each process: after a crash it still says
//! why while the server is being restarted.

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Lines kept.
pub(super) const KEEP: usize = 20;
/// Bytes kept of one line.
pub(super) const MAX_LINE: usize = 1024;

/// The last lines of a server's stderr.
#[derive(Debug, Default)]
pub(super) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    /// Reads `stderr` to its end, keeping the last lines.
    pub(super) async fn follow(&self, mut stderr: impl AsyncRead + Unpin, server: &str) {
        let mut chunk = vec![0u8; 8192];
        let mut line = Vec::new();
        let mut cut = false;
        loop {
            let read = match stderr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            for &byte in &chunk[..read] {
                if byte == b'\n' {
                    self.push(&line, cut, server);
                    line.clear();
                    cut = false;
                } else if line.len() < MAX_LINE {
                    line.push(byte);
                } else {
                    cut = true;
                }
            }
        }
        if !line.is_empty() {
            self.push(&line, cut, server);
        }
    }

    fn push(&self, bytes: &[u8], cut: bool, server: &str) {
        let mut text = String::from_utf8_lossy(bytes).trim_end().to_owned();
        if text.is_empty() {
            return;
        }
        if cut {
            text.push_str(" […]");
        }
        tracing::debug!("MCP server {server} stderr: {text}");
        let mut lines = self.lines.lock();
        if lines.len() == KEEP {
            lines.pop_front();
        }
        lines.push_back(text);
    }

    /// The last line written, if any.
    pub(super) fn last_line(&self) -> Option<String> {
        self.lines.lock().back().cloned()
    }

    /// The kept lines, oldest first.
    pub(super) fn lines(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_lines_each_bounded() {
        let mut text = String::new();
        for i in 0..(KEEP + 5) {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str(&"y".repeat(MAX_LINE * 3));
        text.push('\n');
        text.push_str("\n\nfatal: no config\r\n");
        let tail = StderrTail::default();
        tail.follow(text.as_bytes(), "test").await;
        let lines = tail.lines();
        assert_eq!(lines.len(), KEEP);
        assert_eq!(lines[0], "line 7");
        assert_eq!(lines[KEEP - 2].len(), MAX_LINE + " […]".len());
        assert_eq!(tail.last_line().as_deref(), Some("fatal: no config"));
    }

    #[tokio::test]
    async fn a_last_line_without_a_newline_is_kept() {
        let tail = StderrTail::default();
        tail.follow(&b"panic: boom"[..], "test").await;
        assert_eq!(tail.last_line().as_deref(), Some("panic: boom"));
    }
}
