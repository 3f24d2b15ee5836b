//! Logging set-up: tracing to stderr.
//!
//! A service's stderr is its log: the service manager appends it to
//! `$CRABTALK_HOME/logs/<name>.log`. The level is what `-v` asks for
//! ([`Verbosity::filter`]); `RUST_LOG`, which may come from the env file,
//! overrides it. Colour codes are written only to a terminal.

use crate::cli::Verbosity;

/// Sends tracing to stderr at the level `verbosity` asks for (`RUST_LOG`
/// wins). Only the first call in a process has an effect.
pub fn init(verbosity: Verbosity) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(verbosity.filter()));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
