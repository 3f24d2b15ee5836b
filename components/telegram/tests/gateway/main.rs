//! The gateway end to end: the real binary, a real daemon with a scripted
//! model, and a fake Bot API that records every call with its time.

mod access;
mod ask;
mod commands;
mod flaky;
mod inbox;
mod kinds;
mod polling;
mod relay;
mod reload;
mod replies;
mod support;
