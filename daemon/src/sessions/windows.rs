//! A hit's window read from its log by message number, starting from the
//! nearest remembered line position (every [`STRIDE`]th numbered line,
//! learnt by the rebuild and by earlier reads).

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::ops::{ControlFlow, Range};

use crabtalk_session_index::{MessageSource, SourceMessage};

use super::SessionSearch;
use super::document::source_message;
use crate::storage::numbering::{self, Position};

/// A position is remembered for every this many numbered lines.
pub(super) const STRIDE: u64 = 64;

/// Where every [`STRIDE`]th numbered line of one log starts.
#[derive(Debug, Default)]
pub(super) struct Positions {
    pub(super) file: FileId,
    /// `offsets[i]` is where line number `i * STRIDE` starts.
    pub(super) offsets: Vec<u64>,
}

/// Which file the positions belong to, so a log deleted and created anew
/// is not read with the old one's positions.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    device: u64,
    inode: u64,
}

impl FileId {
    pub(super) fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Self {
                device: metadata.dev(),
                inode: metadata.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Self::default()
        }
    }
}

impl SessionSearch {
    /// Where to start reading `handle`'s log for line `number`: the nearest
    /// remembered position at or before it.
    fn start_for(&self, handle: &str, file: FileId, number: u64) -> Position {
        let known = self.positions.lock();
        let Some(positions) = known
            .get(handle)
            .filter(|p| p.file == file && !p.offsets.is_empty())
        else {
            return Position::default();
        };
        let slot = (number / STRIDE).min(positions.offsets.len() as u64 - 1);
        Position {
            offset: positions.offsets[slot as usize],
            number: slot * STRIDE,
        }
    }

    /// Remembers positions learnt by a read: `found[i]` is where line
    /// `(first + i) * STRIDE` starts.
    fn learn(&self, handle: &str, file: FileId, first: u64, found: Vec<u64>) {
        if found.is_empty() {
            return;
        }
        let mut known = self.positions.lock();
        let positions = known.entry(handle.to_owned()).or_default();
        if positions.file != file {
            *positions = Positions {
                file,
                offsets: Vec::new(),
            };
        }
        let have = positions.offsets.len() as u64;
        if first <= have {
            let skip = (have - first) as usize;
            positions.offsets.extend(found.into_iter().skip(skip));
        }
    }

    fn read_window(&self, handle: &str, range: Range<u32>) -> io::Result<Vec<SourceMessage>> {
        let files = match self.storage.resolve(handle) {
            Ok(files) => files,
            Err(crate::storage::HandleError::NotFound(_)) => return Ok(Vec::new()),
            Err(err) => return Err(io::Error::new(io::ErrorKind::InvalidInput, err.to_string())),
        };
        let mut file = match File::open(&files.log) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let file_id = FileId::of(&file.metadata()?);
        let mut start = self.start_for(handle, file_id, u64::from(range.start));
        if start.offset > 0 && !starts_a_line(&mut file, start.offset)? {
            // The positions do not fit this file (replaced under us).
            self.positions.lock().remove(handle);
            start = Position::default();
        }
        file.seek(SeekFrom::Start(start.offset))?;
        let reader = BufReader::with_capacity(64 * 1024, file);
        let wanted = u64::from(range.start)..u64::from(range.end);
        let first_new = start.number.div_ceil(STRIDE);
        let mut found = Vec::new();
        let mut messages = Vec::with_capacity(range.len());
        numbering::for_each_line(reader, start, |line| {
            let Some(number) = line.number else {
                return ControlFlow::Continue(());
            };
            if number % STRIDE == 0 && number / STRIDE >= first_new {
                found.push(line.offset);
            }
            if number >= wanted.end {
                return ControlFlow::Break(());
            }
            if number < wanted.start {
                return ControlFlow::Continue(());
            }
            if let Some(message) = source_message(number as u32, line.bytes) {
                messages.push(message);
            }
            ControlFlow::Continue(())
        })?;
        self.learn(handle, file_id, first_new, found);
        Ok(messages)
    }
}

impl MessageSource for SessionSearch {
    fn read(
        &self,
        _agent: &str,
        conversation: &str,
        range: Range<u32>,
    ) -> io::Result<Vec<SourceMessage>> {
        self.read_window(conversation, range)
    }
}

/// Whether `offset` is the start of a line of `file` (the byte before it is
/// a newline).
fn starts_a_line(file: &mut File, offset: u64) -> io::Result<bool> {
    let mut before = [0u8; 1];
    file.seek(SeekFrom::Start(offset - 1))?;
    match file.read_exact(&mut before) {
        Ok(()) => Ok(before[0] == b'\n'),
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(err) => Err(err),
    }
}
