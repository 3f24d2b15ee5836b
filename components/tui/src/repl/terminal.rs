//! The terminal: raw mode for the session's lifetime, and an output area
//! split into scrollback and one live region at the bottom.
//!
//! Lines printed with [`Terminal::show`]'s `commit` go into the scrollback
//! for good. The live region (the input, a streaming block, a question) is
//! erased and redrawn on every change. Its height is known because every
//! line handed in is already wrapped to [`Terminal::layout`]'s width — one
//! column narrower than the terminal, so no line ever ends in the last
//! column, where terminals disagree about wrapping.
//!
//! The region is redrawn row by row, each row cleared to its end, and rows
//! left over from a taller region are cleared one by one: never with
//! "clear to the end of the screen", which some terminals (tmux with its
//! default `scroll-on-clear`) answer, when the cursor is in the top-left
//! corner — as it is right after a clear — by pushing the whole screen into
//! the scrollback.

use std::io::{self, Stdout, Write};

use crossterm::cursor::{Hide, MoveDown, MoveToColumn, MoveUp, Show};
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::terminal::{self, Clear, ClearType};
use crossterm::{execute, queue};

use crate::render::stream::Layout;
use crate::text::Line;

/// Narrowest layout used, whatever the terminal says.
const MIN_WIDTH: usize = 10;

pub(super) struct Terminal {
    out: Stdout,
    /// Rows of the live region.
    live_rows: usize,
    /// The live row the cursor is on.
    cursor_row: usize,
}

impl Terminal {
    /// Enters raw mode (restored on drop, and by the panic hook).
    pub(super) fn enter() -> io::Result<Self> {
        terminal::enable_raw_mode()?;
        let mut out = io::stdout();
        // Not every terminal knows bracketed paste; a paste then arrives as
        // keys, which still works.
        let _ = execute!(out, EnableBracketedPaste);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        Ok(Self {
            out,
            live_rows: 0,
            cursor_row: 0,
        })
    }

    /// The width and height to lay out for.
    pub(super) fn layout(&self) -> Layout {
        let (columns, rows) = terminal::size().unwrap_or((80, 24));
        Layout {
            width: (columns as usize).saturating_sub(1).max(MIN_WIDTH),
            max_live: (rows as usize).saturating_sub(4).max(3),
        }
    }

    /// Replaces the live region: `commit` goes to the scrollback, then
    /// `live` is drawn with the cursor at `cursor` (row, column) or after
    /// its end.
    pub(super) fn show(
        &mut self,
        commit: &[Line],
        live: &[Line],
        cursor: Option<(usize, usize)>,
    ) -> io::Result<()> {
        let out = &mut self.out;
        if self.cursor_row > 0 {
            queue!(out, MoveUp(self.cursor_row as u16))?;
        }
        queue!(out, MoveToColumn(0))?;
        for line in commit {
            write!(out, "{}", line.to_ansi())?;
            queue!(out, Clear(ClearType::UntilNewLine))?;
            write!(out, "\r\n")?;
        }
        for (index, line) in live.iter().enumerate() {
            if index > 0 {
                write!(out, "\r\n")?;
            }
            write!(out, "{}", line.to_ansi())?;
            queue!(out, Clear(ClearType::UntilNewLine))?;
        }
        // Rows of the old region that nothing was written over.
        let covered = commit.len() + live.len();
        let stale = self.live_rows.saturating_sub(covered);
        if live.is_empty() {
            // The cursor is on the first row after the commit, not cleared.
            queue!(out, Clear(ClearType::CurrentLine))?;
            for _ in 1..stale {
                queue!(out, MoveDown(1), Clear(ClearType::CurrentLine))?;
            }
            if stale > 1 {
                queue!(out, MoveUp(stale as u16 - 1))?;
            }
        } else if stale > 0 {
            for _ in 0..stale {
                queue!(out, MoveDown(1), Clear(ClearType::CurrentLine))?;
            }
            queue!(out, MoveUp(stale as u16))?;
        }
        self.live_rows = live.len();
        self.cursor_row = live.len().saturating_sub(1);
        if let Some((row, column)) = cursor.filter(|_| !live.is_empty()) {
            let row = row.min(live.len() - 1);
            let up = self.cursor_row - row;
            if up > 0 {
                queue!(out, MoveUp(up as u16))?;
            }
            queue!(out, MoveToColumn(column as u16), Show)?;
            self.cursor_row = row;
        } else {
            queue!(out, MoveToColumn(0), Hide)?;
        }
        out.flush()
    }

    /// Prints lines for good, clearing the live region.
    pub(super) fn print(&mut self, lines: &[Line]) -> io::Result<()> {
        self.show(lines, &[], None)
    }

    /// Clears the screen and the scrollback.
    pub(super) fn clear_screen(&mut self) -> io::Result<()> {
        queue!(
            self.out,
            Clear(ClearType::All),
            Clear(ClearType::Purge),
            crossterm::cursor::MoveTo(0, 0)
        )?;
        self.live_rows = 0;
        self.cursor_row = 0;
        self.out.flush()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.show(&[], &[], None);
        restore();
    }
}

/// Leaves raw mode and shows the cursor.
fn restore() {
    let mut out = io::stdout();
    let _ = execute!(out, DisableBracketedPaste, Show);
    let _ = terminal::disable_raw_mode();
}
