//! Logging set-up: tracing to stderr.
//!
//! A service's stderr is its log: the service manager appends it to
//! `$CRABTALK_HOME/logs/<name>.log`. The level is what `-v` asks for
//! ([`Verbosity::filter`]); `RUST_LOG`, which may come from the env file,
//! overrides it with comma-separated `target=level` directives (or a bare
//! level). Colour codes are written only to a terminal.
//!
//! The filter is `tracing_subscriber`'s `Targets`, not `EnvFilter`:
//! `EnvFilter` compiles regular expressions at start, which pulls a regex
//! engine's code into every service's resident memory for directives that
//! are never more than targets and levels here.

use tracing_subscriber::filter::Targets;

use crate::cli::Verbosity;

/// Sends tracing to stderr at the level `verbosity` asks for (`RUST_LOG`
/// wins). Only the first call in a process has an effect.
pub fn init(verbosity: Verbosity) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let (filter, refused) = match from_env.as_deref().map(filter_of) {
        Some(Ok(filter)) => (filter, None),
        Some(Err(err)) => (default_filter(verbosity), Some(err)),
        None => (default_filter(verbosity), None),
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let installed = tracing_subscriber::registry()
        .with(fmt)
        .with(filter)
        .try_init()
        .is_ok();
    if let (true, Some(err)) = (installed, refused) {
        tracing::warn!(
            "RUST_LOG is not understood ({err}); logging at {}",
            verbosity.filter()
        );
    }
}

/// The filter `RUST_LOG`-style `directives` ask for: `level`, or
/// `target=level` pairs separated by commas.
pub fn filter_of(directives: &str) -> Result<Targets, String> {
    directives
        .trim()
        .parse::<Targets>()
        .map_err(|err| format!("{directives:?}: {err}"))
}

fn default_filter(verbosity: Verbosity) -> Targets {
    filter_of(verbosity.filter()).expect("the built-in levels parse")
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    #[test]
    fn levels_and_targets_are_understood_and_nonsense_is_not() {
        let filter = filter_of("warn,crabtalk_cron=debug").unwrap();
        assert!(filter.would_enable("crabtalk_cron::engine", &Level::DEBUG));
        assert!(!filter.would_enable("hyper", &Level::INFO));
        assert!(filter.would_enable("hyper", &Level::WARN));
        assert!(
            filter_of("info")
                .unwrap()
                .would_enable("anything", &Level::INFO)
        );
        assert!(filter_of("crabtalk=loud").is_err());
    }
}
