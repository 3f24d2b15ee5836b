//! What the person types: the line [`editor`], its persisted [`history`],
//! and [`complete`]ion of slash commands, skills and agent names.

pub mod complete;
pub mod editor;
pub mod history;
