//! The oracles of crabtalk's fuzz targets: one function per parser that
//! reads input from outside, each checking more than "does not panic"
//! wherever there is more to check (RFC 0090).
//!
//! Each function takes the fuzzer's bytes and panics when its oracle is
//! broken. libFuzzer calls them from `components/fuzz/fuzz_targets/<name>.rs` (nightly,
//! `cargo fuzz run <name>`); on stable, this crate's tests call every one
//! of them on every file of its seed corpus, `components/fuzz/corpus/<name>/`, so the
//! oracles build and hold in every `cargo test --workspace`.
//!
//! ```
//! // A frame announcing 16 MiB, followed by three bytes: refused, and the
//! // reader holds kilobytes, not megabytes.
//! crabtalk_fuzz_oracles::frame(&[0xff, 0x01, 0x00, 0x00, 0x00, 1, 2, 3]);
//! ```

mod address;
mod config;
mod cron;
mod frame;
mod logs;
mod mcp;
mod search;
mod telegram;

pub use address::ssrf_address;
pub use config::{agent_config, crons_toml, daemon_config, search_toml, telegram_toml};
pub use cron::{cron_expr, cron_in_at};
pub use frame::frame;
pub use logs::{conversation_log, crmem};
pub use mcp::{mcp_arguments, mcp_stdio_reply};
pub use search::{engine_pages, readable};
pub use telegram::{telegram_render, telegram_update};

/// An oracle: panics when the input breaks it.
pub type Oracle = fn(&[u8]);

/// Every target: its name (a file in `components/fuzz/fuzz_targets/`, a folder in
/// `components/fuzz/corpus/`) and its oracle.
pub const TARGETS: &[(&str, Oracle)] = &[
    ("frame", frame),
    ("daemon_config", daemon_config),
    ("agent_config", agent_config),
    ("crons_toml", crons_toml),
    ("search_toml", search_toml),
    ("telegram_toml", telegram_toml),
    ("cron_expr", cron_expr),
    ("cron_in_at", cron_in_at),
    ("telegram_render", telegram_render),
    ("telegram_update", telegram_update),
    ("ssrf_address", ssrf_address),
    ("crmem", crmem),
    ("conversation_log", conversation_log),
    ("engine_pages", engine_pages),
    ("readable", readable),
    ("mcp_arguments", mcp_arguments),
    ("mcp_stdio_reply", mcp_stdio_reply),
];

thread_local! {
    static RUNTIME: std::rc::Rc<tokio::runtime::Runtime> = std::rc::Rc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime"),
    );
}

/// The thread's runtime, for the parsers that read from async streams.
fn runtime() -> std::rc::Rc<tokio::runtime::Runtime> {
    RUNTIME.with(std::rc::Rc::clone)
}
