//! `crabtalk-memory`: long-term memory for one agent: named entries in one CRMEM v1 file
//! (`memory/<agent>.crmem`), ranked recall, and an mdbook export for people.
//!
//! An [`Entry`] has a unique name, any number of aliases (other names that
//! resolve to it, unique across the memory), content, a creation time and a
//! [`EntryKind`]: a `Note` the agent wrote, or an `Archive` compaction wrote.
//! Every change is an [`Op`] given to [`Memory::apply`], which writes the
//! whole file atomically before the change is visible; a crash at any moment
//! leaves the file as it was before or after the op, never between.
//!
//! Recall ([`Memory::search`]) is BM25 (see [`crabtalk_bm25`]) over each entry's
//! name, aliases and content; the index lives in RAM and is rebuilt from the
//! entries on open.
//!
//! ```
//! use crabtalk_memory::{EntryKind, Memory, Op};
//!
//! let dir = tempfile::tempdir()?;
//! let mut memory = Memory::open(dir.path().join("crab.crmem"))?;
//! memory.apply(Op::Add {
//!     name: "deploy".into(),
//!     content: "run make release, then tag".into(),
//!     aliases: vec!["ship".into()],
//!     kind: EntryKind::Note,
//! })?;
//! assert_eq!(memory.get("ship").unwrap().name, "deploy");
//! assert_eq!(memory.search("release", 5)[0].entry.name, "deploy");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The daemon keeps one `Memory` per agent behind a lock; reads (`get`,
//! `list`, `search`) take `&self`, writes take `&mut self` and block on the
//! disk for one atomic write.

mod dump;
mod entry;
mod error;
pub mod file_name;
pub mod format;
mod store;

pub use entry::{Entry, EntryKind, MAX_CONTENT_BYTES, MAX_NAME_BYTES};
pub use error::MemoryError;
pub use format::FormatError;
pub use store::{Memory, Op, Recall};
