//! Rendering what a turn produces into terminal lines.
//!
//! - [`markdown`]: a whole Markdown text at a width;
//! - [`stream`]: Markdown arriving in pieces, split into lines that are
//!   final and a live tail that is redrawn until its block is complete;
//! - [`tool`]: one-line summaries of tool calls and their results;
//! - [`turn`]: a turn's events in order, as lines for the screen;
//! - [`history`]: the tail of a stored conversation, drawn the same way.

pub(crate) mod history;
pub mod markdown;
pub(crate) mod stream;
pub(crate) mod tool;
pub(crate) mod turn;
