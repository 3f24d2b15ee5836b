//! CRMEM v1, the memory file format (RFC 0020), byte for byte.
//!
//! All integers little endian; strings are a `u32` byte count followed by that
//! many bytes of UTF-8 (no terminator).
//!
//! ```text
//! header (16 bytes)   magic "CRMEM\0" (6) · version u32 = 1 · flags u16 = 0 · reserved [u8; 4] = 0
//! body                next_id u64 · entry_count u32 · entry × entry_count
//! entry               id u64 · created_at u64 · kind u32 (0 Note, 1 Archive)
//!                     · name str · content str · alias_count u32 · alias str × alias_count
//! ```
//!
//! The reader is strict: anything but exactly this fails with a
//! [`FormatError`] that says what was wrong and at which byte offset. A count or
//! length read from the file is checked against the bytes that remain before
//! anything is allocated for it, so a hostile file cannot make the reader
//! reserve more memory than the file's own size. Beyond the layout, the reader
//! also refuses files that break the store's invariants: duplicate ids, an id
//! not below `next_id`, an empty name, or a name or alias used twice.

use std::collections::HashSet;

use crate::entry::{Entry, EntryKind};

pub const MAGIC: [u8; 6] = *b"CRMEM\0";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 16;
/// The fixed part of an entry: id, created_at, kind, and the four length and
/// count fields of an entry with empty strings and no aliases.
pub const MIN_ENTRY_LEN: usize = 8 + 8 + 4 + 4 + 4 + 4;

/// The decoded contents of a CRMEM file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub next_id: u64,
    pub entries: Vec<Entry>,
}

/// Why bytes are not a valid CRMEM v1 file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("bad magic {found:02x?} at offset 0, expected \"CRMEM\\0\"")]
    BadMagic { found: Vec<u8> },
    #[error("unsupported version {found} at offset 6, this build reads version 1")]
    UnsupportedVersion { found: u32 },
    #[error("unknown flags {found:#06x} at offset 10, expected 0")]
    UnknownFlags { found: u16 },
    #[error("reserved bytes {found:02x?} at offset 12 are not zero")]
    Reserved { found: [u8; 4] },
    #[error("truncated: {field} at offset {offset} needs {needed} bytes, only {left} left")]
    Truncated {
        field: Field,
        offset: usize,
        needed: u64,
        left: usize,
    },
    #[error("{field} at offset {offset} is not valid UTF-8")]
    InvalidUtf8 { field: Field, offset: usize },
    #[error("unknown kind {found} at offset {offset}, expected 0 (Note) or 1 (Archive)")]
    UnknownKind { found: u32, offset: usize },
    #[error("{count} trailing bytes after the last entry, at offset {offset}")]
    TrailingBytes { offset: usize, count: usize },
    #[error("entry id {id} appears twice")]
    DuplicateId { id: u64 },
    #[error("entry id {id} is not below next_id {next_id}")]
    IdNotBelowNextId { id: u64, next_id: u64 },
    #[error("entry {id} has an empty {what}")]
    EmptyName { id: u64, what: &'static str },
    #[error("the name {name:?} is used twice (entry {id})")]
    DuplicateName { name: String, id: u64 },
}

/// Which field of the file a [`FormatError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Header,
    NextId,
    EntryCount,
    /// The fixed part (id, created_at, kind, name length) of entry `n`
    /// (0-based).
    Entry(u32),
    Name(u32),
    Content(u32),
    AliasCount(u32),
    Alias(u32),
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Header => f.write_str("the header"),
            Field::NextId => f.write_str("next_id"),
            Field::EntryCount => f.write_str("the entries"),
            Field::Entry(n) => write!(f, "entry #{n}"),
            Field::Name(n) => write!(f, "the name of entry #{n}"),
            Field::Content(n) => write!(f, "the content of entry #{n}"),
            Field::AliasCount(n) => write!(f, "the alias count of entry #{n}"),
            Field::Alias(n) => write!(f, "an alias of entry #{n}"),
        }
    }
}

/// Encodes a whole memory. `entries` are written in the order given (the store
/// passes them by ascending id).
pub fn encode<'a>(
    next_id: u64,
    entries: impl ExactSizeIterator<Item = &'a Entry> + Clone,
) -> Vec<u8> {
    let body: usize = entries
        .clone()
        .map(|e| {
            MIN_ENTRY_LEN
                + e.name.len()
                + e.content.len()
                + e.aliases.iter().map(|a| 4 + a.len()).sum::<usize>()
        })
        .sum();
    let mut out = Vec::with_capacity(HEADER_LEN + 12 + body);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&next_id.to_le_bytes());
    let count = u32::try_from(entries.len()).expect("fewer than 2^32 entries");
    out.extend_from_slice(&count.to_le_bytes());
    for entry in entries {
        out.extend_from_slice(&entry.id.to_le_bytes());
        out.extend_from_slice(&entry.created_at.to_le_bytes());
        out.extend_from_slice(&entry.kind.code().to_le_bytes());
        put_str(&mut out, &entry.name);
        put_str(&mut out, &entry.content);
        let aliases = u32::try_from(entry.aliases.len()).expect("fewer than 2^32 aliases");
        out.extend_from_slice(&aliases.to_le_bytes());
        for alias in &entry.aliases {
            put_str(&mut out, alias);
        }
    }
    out
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Names are capped by the store and content by MAX_CONTENT_BYTES, far
    // below 4 GiB.
    let len = u32::try_from(s.len()).expect("strings are shorter than 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Decodes a whole CRMEM v1 file.
pub fn decode(bytes: &[u8]) -> Result<Snapshot, FormatError> {
    let mut r = Reader { bytes, at: 0 };
    let header = r.take(HEADER_LEN, Field::Header)?;
    if header[..6] != MAGIC {
        return Err(FormatError::BadMagic {
            found: header[..6].to_vec(),
        });
    }
    let version = u32::from_le_bytes(header[6..10].try_into().unwrap());
    if version != VERSION {
        return Err(FormatError::UnsupportedVersion { found: version });
    }
    let flags = u16::from_le_bytes(header[10..12].try_into().unwrap());
    if flags != 0 {
        return Err(FormatError::UnknownFlags { found: flags });
    }
    let reserved: [u8; 4] = header[12..16].try_into().unwrap();
    if reserved != [0; 4] {
        return Err(FormatError::Reserved { found: reserved });
    }

    let next_id = r.u64(Field::NextId)?;
    let count = r.u32(Field::EntryCount)?;
    // Every entry takes at least MIN_ENTRY_LEN bytes: a count the rest of the
    // file cannot hold is refused before anything is reserved for it.
    r.ensure(u64::from(count) * MIN_ENTRY_LEN as u64, Field::EntryCount)?;
    let mut entries = Vec::with_capacity(count as usize);
    let mut ids = HashSet::with_capacity(count as usize);
    let mut names = HashSet::new();
    for n in 0..count {
        let entry = r.entry(n)?;
        if !ids.insert(entry.id) {
            return Err(FormatError::DuplicateId { id: entry.id });
        }
        if entry.id >= next_id {
            return Err(FormatError::IdNotBelowNextId {
                id: entry.id,
                next_id,
            });
        }
        if entry.name.is_empty() {
            return Err(FormatError::EmptyName {
                id: entry.id,
                what: "name",
            });
        }
        for name in std::iter::once(&entry.name).chain(&entry.aliases) {
            if name.is_empty() {
                return Err(FormatError::EmptyName {
                    id: entry.id,
                    what: "alias",
                });
            }
            if !names.insert(name.clone()) {
                return Err(FormatError::DuplicateName {
                    name: name.clone(),
                    id: entry.id,
                });
            }
        }
        entries.push(entry);
    }
    if r.at != bytes.len() {
        return Err(FormatError::TrailingBytes {
            offset: r.at,
            count: bytes.len() - r.at,
        });
    }
    Ok(Snapshot { next_id, entries })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn ensure(&self, needed: u64, field: Field) -> Result<(), FormatError> {
        if needed > self.left() as u64 {
            return Err(FormatError::Truncated {
                field,
                offset: self.at,
                needed,
                left: self.left(),
            });
        }
        Ok(())
    }

    fn take(&mut self, n: usize, field: Field) -> Result<&'a [u8], FormatError> {
        self.ensure(n as u64, field)?;
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u32(&mut self, field: Field) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take(4, field)?.try_into().unwrap()))
    }

    fn u64(&mut self, field: Field) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take(8, field)?.try_into().unwrap()))
    }

    fn string(&mut self, field: Field) -> Result<String, FormatError> {
        let len = self.u32(field)?;
        let offset = self.at;
        let bytes = self.take(len as usize, field)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| FormatError::InvalidUtf8 { field, offset })
    }

    fn entry(&mut self, n: u32) -> Result<Entry, FormatError> {
        let id = self.u64(Field::Entry(n))?;
        let created_at = self.u64(Field::Entry(n))?;
        let kind_at = self.at;
        let code = self.u32(Field::Entry(n))?;
        let kind = EntryKind::from_code(code).ok_or(FormatError::UnknownKind {
            found: code,
            offset: kind_at,
        })?;
        let name = self.string(Field::Name(n))?;
        let content = self.string(Field::Content(n))?;
        let alias_count = self.u32(Field::AliasCount(n))?;
        // Each alias takes at least its 4-byte length.
        self.ensure(u64::from(alias_count) * 4, Field::AliasCount(n))?;
        let mut aliases = Vec::with_capacity(alias_count as usize);
        for _ in 0..alias_count {
            aliases.push(self.string(Field::Alias(n))?);
        }
        Ok(Entry {
            id,
            name,
            content,
            aliases,
            created_at,
            kind,
        })
    }
}
