//! `crabtalkd` as a library: the daemon's subsystems, so that the binary only
//! wires them and tests and benches reach them.
//!
//! - [`bm25`]: the inverted BM25 index and the tokenizer, shared by memory
//!   recall and session search.
//! - [`memory`]: the per-agent memory store, one CRMEM v1 file per agent, with
//!   recall and the mdbook dump/load.
//! - [`search`]: the in-memory session search index over conversation
//!   messages, scoped per agent, with bounded windowed hits.

pub mod bm25;
pub mod memory;
pub mod search;
