//! `crabtalk-tui` end to end: the real daemon (`crabtalkd` in a temp home,
//! answering from a scripted LLM over real HTTP) and the real TUI binary —
//! in a pseudo-terminal read through a terminal emulator for the chat, and
//! as a plain process for the script modes.

mod chat;
mod commands;
mod conversation;
mod live_input;
mod print;
mod status;
mod support;
