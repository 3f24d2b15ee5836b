//! A download's progress on stderr, only when stderr is a terminal (a log
//! or a pipe gets nothing but the final result).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often the line is redrawn.
const EVERY: Duration = Duration::from_millis(100);

pub(super) struct Progress {
    label: String,
    total: Option<u64>,
    shown: Option<Instant>,
    done: u64,
    on: bool,
}

impl Progress {
    pub(super) fn new(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            total: None,
            shown: None,
            done: 0,
            on: std::io::stderr().is_terminal(),
        }
    }

    pub(super) fn start(&mut self, total: Option<u64>) {
        self.total = total;
        self.draw();
    }

    pub(super) fn advance(&mut self, done: u64) {
        self.done = done;
        if self.shown.is_none_or(|at| at.elapsed() >= EVERY) {
            self.draw();
        }
    }

    pub(super) fn finish(&mut self) {
        if self.on {
            self.draw();
            eprintln!();
            self.on = false;
        }
    }

    fn draw(&mut self) {
        if !self.on {
            return;
        }
        self.shown = Some(Instant::now());
        let line = line(&self.label, self.done, self.total);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r{line}\x1b[K");
        let _ = stderr.flush();
    }
}

impl Drop for Progress {
    /// A download that failed leaves the cursor on a fresh line.
    fn drop(&mut self) {
        if self.on {
            eprintln!();
        }
    }
}

/// `crabtalkd-….tar.xz  [#########           ]  4.1/9.0 MiB  45%`.
fn line(label: &str, done: u64, total: Option<u64>) -> String {
    const WIDTH: usize = 24;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    match total.filter(|total| *total > 0) {
        Some(total) => {
            let part = (done.min(total) as f64 / total as f64).clamp(0.0, 1.0);
            let filled = (part * WIDTH as f64).round() as usize;
            format!(
                "{label}  [{}{}]  {:.1}/{:.1} MiB  {:>3.0}%",
                "#".repeat(filled),
                " ".repeat(WIDTH - filled),
                mib(done),
                mib(total),
                part * 100.0
            )
        }
        None => format!("{label}  {:.1} MiB", mib(done)),
    }
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn the_line_shows_how_far_the_download_is() {
        assert_eq!(
            line("a.tar.xz", 3 * 1024 * 1024, Some(6 * 1024 * 1024)),
            "a.tar.xz  [############            ]  3.0/6.0 MiB   50%"
        );
        assert_eq!(line("a.tar.xz", 1024 * 1024, None), "a.tar.xz  1.0 MiB");
        assert!(line("a", 10, Some(0)).ends_with("0.0 MiB"));
    }
}
