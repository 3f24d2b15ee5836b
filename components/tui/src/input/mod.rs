//! What the person types: the line [`editor`], its persisted [`history`],
//! and [`complete`]ion of slash commands, skills and agent names.

pub(crate) mod complete;
pub(crate) mod editor;
pub(crate) mod history;
