//! Message numbers: where a message sits in its conversation's whole log.
//!
//! Session search names a message by its number (`msg_idx`) and must find
//! the same message by that number after any restart or crash, whether the
//! number was given when the message was appended, when the index was
//! rebuilt from the files, or when a search reads a window back. So the
//! number is a property of the file's bytes alone:
//!
//! - every *complete* line (ending in `\n`) that is neither blank nor a
//!   compact marker (`{"compact":…`) gets the next number, from 0;
//! - an unreadable line keeps its number (nothing is indexed for it), so one
//!   bad line never shifts the numbers after it;
//! - a torn last line (no `\n`, left by a crash) has no number, and loading
//!   the conversation cuts it off before anything else is appended.
//!
//! The metadata sidecar's `message_count` is *not* a source of numbers: it
//! is written a second after the fact and lags after a `kill -9`. A compact
//! marker records how many numbered lines came before it
//! (`messages_before`), so loading a conversation, which reads only from the
//! last marker, still knows the next number without reading the whole file.
//!
//! Numbers only grow: logs are append-only.

use std::io::{self, BufRead};
use std::ops::ControlFlow;

use super::entry::MARKER_PREFIX;

/// Whether a complete line (without its `\n`) gets a message number.
pub fn is_numbered(line: &[u8]) -> bool {
    !line.starts_with(MARKER_PREFIX) && !line.iter().all(u8::is_ascii_whitespace)
}

/// Whether a complete line is a compact marker.
pub fn is_marker(line: &[u8]) -> bool {
    line.starts_with(MARKER_PREFIX)
}

/// A place in a log where a line starts, and the number of the first
/// numbered line at or after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    pub offset: u64,
    pub number: u64,
}

/// One complete line of a log, as [`for_each_line`] visits it.
#[derive(Debug)]
pub struct Line<'a> {
    /// Where the line starts.
    pub offset: u64,
    /// Its message number; `None` for markers and blank lines.
    pub number: Option<u64>,
    /// The line without its `\n`.
    pub bytes: &'a [u8],
}

/// Visits every complete line of `reader`, which starts at `start` (a line
/// start), until `visit` breaks or the input ends. A last line without `\n`
/// is not visited. Returns the position after the last visited line.
pub fn for_each_line(
    mut reader: impl BufRead,
    start: Position,
    mut visit: impl FnMut(Line<'_>) -> ControlFlow<()>,
) -> io::Result<Position> {
    let mut at = start;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = reader.read_until(b'\n', &mut buffer)?;
        if read == 0 || buffer.last() != Some(&b'\n') {
            return Ok(at);
        }
        let bytes = &buffer[..buffer.len() - 1];
        let number = is_numbered(bytes).then_some(at.number);
        let line = Line {
            offset: at.offset,
            number,
            bytes,
        };
        at.offset += read as u64;
        at.number += u64::from(number.is_some());
        if visit(line).is_break() {
            return Ok(at);
        }
    }
}

/// Like [`for_each_line`] over bytes already in memory (the rebuild reads
/// whole files), without copying lines.
pub fn for_each_line_in(
    bytes: &[u8],
    start: Position,
    mut visit: impl FnMut(Line<'_>) -> ControlFlow<()>,
) -> Position {
    let mut at = start;
    let mut rest = bytes;
    while let Some(end) = memchr_newline(rest) {
        let line = &rest[..end];
        let number = is_numbered(line).then_some(at.number);
        let visited = Line {
            offset: at.offset,
            number,
            bytes: line,
        };
        at.offset += end as u64 + 1;
        at.number += u64::from(number.is_some());
        rest = &rest[end + 1..];
        if visit(visited).is_break() {
            break;
        }
    }
    at
}

/// Counts the numbered lines among the complete lines of `bytes`.
pub fn count_numbered(bytes: &[u8]) -> u64 {
    for_each_line_in(bytes, Position::default(), |_| ControlFlow::Continue(())).number
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &[u8] = b"{\"role\":\"user\",\"content\":\"a\"}\n\
        not json at all\n\
        \n\
        {\"compact\":\"sum\"}\n\
        {\"role\":\"assistant\",\"content\":\"b\"}\n\
        {\"role\":\"user\",\"content\":\"torn";

    #[test]
    fn markers_blanks_and_torn_tails_have_no_number_but_bad_lines_do() {
        let mut seen = Vec::new();
        let end = for_each_line_in(LOG, Position::default(), |line| {
            seen.push((
                line.number,
                String::from_utf8_lossy(line.bytes).into_owned(),
            ));
            ControlFlow::Continue(())
        });
        let numbers: Vec<Option<u64>> = seen.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [Some(0), Some(1), None, None, Some(2)]);
        assert_eq!(end.number, 3);
        assert_eq!(count_numbered(LOG), 3);
        // The torn line is not part of the position either.
        let torn = LOG.len() - b"{\"role\":\"user\",\"content\":\"torn".len();
        assert_eq!(end.offset, torn as u64);
    }

    #[test]
    fn reading_from_a_position_agrees_with_reading_from_the_start() {
        let mut positions = Vec::new();
        for_each_line_in(LOG, Position::default(), |line| {
            if let Some(number) = line.number {
                positions.push(Position {
                    offset: line.offset,
                    number,
                });
            }
            ControlFlow::Continue(())
        });
        let from = positions[1];
        let mut numbers = Vec::new();
        let end = for_each_line(&LOG[from.offset as usize..], from, |line| {
            numbers.extend(line.number);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(end.number, 3);
        let mut first = None;
        for_each_line(LOG, Position::default(), |line| {
            first = line.number;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(first, Some(0));
    }
}
