//! Taking one binary out of a release archive, whatever the archive holds.
//!
//! The archive comes from a server and is read only after its SHA-256
//! matched, but the reader does not rely on that: it never unpacks the
//! archive as such. It looks for the one entry it was told about
//! (`<folder>/<binary>`, compared byte for byte, so no `..`, absolute path
//! or link can point anywhere else), requires it to be a plain file, and
//! copies its bytes into the caller's writer — the only thing written.
//! Everything else is bounded: the xz decoder's memory (a header can ask
//! for gigabytes), the entries read, the bytes decompressed in all (a
//! small archive can expand without end), and the binary's size.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::rc::Rc;

/// What reading one archive may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest binary taken out.
    pub max_binary_bytes: u64,
    /// The most bytes decompressed in all, entries skipped included.
    pub max_unpacked_bytes: u64,
    /// The most entries looked at.
    pub max_entries: usize,
    /// The most memory the xz decoder may take, in KiB (xz -9 needs
    /// 65 MiB).
    pub max_decoder_kib: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_binary_bytes: 200 * 1024 * 1024,
            max_unpacked_bytes: 320 * 1024 * 1024,
            max_entries: 256,
            max_decoder_kib: 128 * 1024,
        }
    }
}

/// Why no binary came out of an archive.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("it is not a readable .tar.xz ({0})")]
    Corrupt(io::Error),
    #[error("it has no {0}")]
    Missing(String),
    #[error("its {path} is a {kind}, not a plain file")]
    NotAFile { path: String, kind: String },
    #[error("it has more than {0} entries")]
    TooManyEntries(usize),
    #[error("its {path} is {size} bytes, more than the {limit} a binary may have")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("it unpacks to more than {0} bytes")]
    TooMuch(u64),
    #[error("its {path} ends early: {got} of {size} bytes")]
    Truncated { path: String, got: u64, size: u64 },
    #[error("writing the binary failed: {0}")]
    Write(io::Error),
}

/// Copies the plain file at `wanted` (`<folder>/<binary>`) in the
/// `.tar.xz` read from `archive` into `out`; the bytes copied.
pub fn extract_binary(
    archive: impl Read,
    wanted: &str,
    limits: &Limits,
    out: &mut impl Write,
) -> Result<u64, UnpackError> {
    let decoder = lzma_rust2::XzReader::new_mem_limit(archive, false, limits.max_decoder_kib);
    let tripped = Rc::new(Cell::new(false));
    let counted = Counted {
        inner: decoder,
        read: 0,
        limit: limits.max_unpacked_bytes,
        tripped: tripped.clone(),
    };
    let mut tar = tar::Archive::new(counted);
    // The tar reader wraps read errors in its own: whether the bound was
    // hit is asked of the counter, not of the error.
    let failed = |err: io::Error| {
        if tripped.get() {
            UnpackError::TooMuch(limits.max_unpacked_bytes)
        } else {
            UnpackError::Corrupt(err)
        }
    };
    let entries = tar.entries().map_err(failed)?;
    for (seen, entry) in entries.enumerate() {
        if seen >= limits.max_entries {
            return Err(UnpackError::TooManyEntries(limits.max_entries));
        }
        let mut entry = entry.map_err(failed)?;
        let path = entry.path_bytes();
        let path = path.strip_prefix(b"./").unwrap_or(&path);
        if path != wanted.as_bytes() {
            continue;
        }
        let kind = entry.header().entry_type();
        if !kind.is_file() {
            return Err(UnpackError::NotAFile {
                path: wanted.to_owned(),
                kind: kind_name(kind),
            });
        }
        let size = entry.size();
        if size > limits.max_binary_bytes {
            return Err(UnpackError::TooLarge {
                path: wanted.to_owned(),
                size,
                limit: limits.max_binary_bytes,
            });
        }
        let got = copy(&mut entry, out, &failed)?;
        if got != size {
            return Err(UnpackError::Truncated {
                path: wanted.to_owned(),
                got,
                size,
            });
        }
        return Ok(got);
    }
    Err(UnpackError::Missing(wanted.to_owned()))
}

/// Copies `entry` into `out`, telling a read failure (the archive) from a
/// write failure (the caller's file).
fn copy(
    entry: &mut impl Read,
    out: &mut impl Write,
    failed: &impl Fn(io::Error) -> UnpackError,
) -> Result<u64, UnpackError> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut copied = 0u64;
    loop {
        let read = match entry.read(&mut buffer) {
            Ok(0) => return Ok(copied),
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(failed(err)),
        };
        out.write_all(&buffer[..read]).map_err(UnpackError::Write)?;
        copied += read as u64;
    }
}

fn kind_name(kind: tar::EntryType) -> String {
    match kind {
        tar::EntryType::Symlink => "symbolic link".into(),
        tar::EntryType::Link => "hard link".into(),
        tar::EntryType::Directory => "directory".into(),
        tar::EntryType::Char | tar::EntryType::Block => "device".into(),
        tar::EntryType::Fifo => "fifo".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// A reader that fails, and says so in `tripped`, once more than `limit`
/// bytes came through.
struct Counted<R> {
    inner: R,
    read: u64,
    limit: u64,
    tripped: Rc<Cell<bool>>,
}

impl<R: Read> Counted<R> {
    fn over(&self) -> io::Error {
        self.tripped.set(true);
        io::Error::other(format!("more than {} bytes decompressed", self.limit))
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.read > self.limit {
            return Err(self.over());
        }
        // Never more than one byte past the limit per call.
        let room = (self.limit + 1 - self.read).min(buf.len() as u64) as usize;
        let read = self.inner.read(&mut buf[..room])?;
        self.read += read as u64;
        if self.read > self.limit {
            return Err(self.over());
        }
        Ok(read)
    }
}
