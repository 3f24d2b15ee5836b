//! Logging set-up: tracing to stderr.
//!
//! A service's stderr is its log: the service manager appends it to
//! `$CRABTALK_HOME/logs/<name>.log`. The level is what `-v` asks for, for
//! the service or for a one-shot command ([`Verbosity::filter_for`]: a
//! command logs only warnings, so no log line mixes with what it prints);
//! `RUST_LOG`, which may come from the env file, overrides it with
//! comma-separated `target=level` directives (or a bare level). Colour
//! codes are written only to a terminal.
//!
//! `rmcp` is kept to warnings by default: at `info` it logs every MCP
//! session's whole `peer_info` on each connect, which says nothing a
//! person reading a service's log needs (`RUST_LOG=rmcp=info` brings it
//! back).
//!
//! The filter is `tracing_subscriber`'s `Targets`, not `EnvFilter`:
//! `EnvFilter` compiles regular expressions at start, which pulls a regex
//! engine's code into every service's resident memory for directives that
//! are never more than targets and levels here.

use tracing_subscriber::filter::{ParseError, Targets};

use crate::cli::{Mode, Verbosity};

/// Targets whose `info` is noise in a service's log, kept to warnings
/// unless `RUST_LOG` names them.
const QUIET_TARGETS: &str = "rmcp=warn";

/// Sends tracing to stderr at the level `verbosity` asks for in `mode`
/// (`RUST_LOG` wins). Only the first call in a process has an effect.
pub(crate) fn init(verbosity: Verbosity, mode: Mode) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let (filter, refused) = match from_env.as_deref().map(filter_of) {
        Some(Ok(filter)) => (filter, None),
        Some(Err(err)) => (default_filter(verbosity, mode), Some(err)),
        None => (default_filter(verbosity, mode), None),
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
            verbosity.filter_for(mode)
        );
    }
}

/// `RUST_LOG`-style directives that do not read as a filter.
#[derive(Debug, thiserror::Error)]
#[error("{directives:?}: {source}")]
pub(crate) struct FilterError {
    /// The directives as given.
    directives: String,
    source: ParseError,
}

/// The filter `RUST_LOG`-style `directives` ask for: `level`, or
/// `target=level` pairs separated by commas.
pub(crate) fn filter_of(directives: &str) -> Result<Targets, FilterError> {
    directives
        .trim()
        .parse::<Targets>()
        .map_err(|source| FilterError {
            directives: directives.to_owned(),
            source,
        })
}

/// The filter without `RUST_LOG`: the level of `verbosity` in `mode`,
/// with the quiet targets (dependencies that chatter) held to warnings unless `-v` asks for more.
pub(crate) fn default_filter(verbosity: Verbosity, mode: Mode) -> Targets {
    let level = verbosity.filter_for(mode);
    let directives = if verbosity.verbose == 0 {
        format!("{level},{QUIET_TARGETS}")
    } else {
        level.to_owned()
    };
    filter_of(&directives).expect("the built-in levels parse")
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
        let refused = filter_of("crabtalk=loud").unwrap_err();
        assert!(
            refused.to_string().starts_with("\"crabtalk=loud\": "),
            "{refused}"
        );
    }

    #[test]
    fn by_default_a_service_logs_info_without_rmcps_sessions_and_a_command_only_warnings() {
        let service = default_filter(Verbosity::from_count(0), Mode::Service);
        assert!(service.would_enable("crabtalk_kit::entry", &Level::INFO));
        assert!(!service.would_enable("rmcp::service", &Level::INFO));
        assert!(service.would_enable("rmcp::service", &Level::WARN));
        let command = default_filter(Verbosity::from_count(0), Mode::Command);
        assert!(!command.would_enable("crabtalk_kit::entry", &Level::INFO));
        assert!(command.would_enable("crabtalk_kit::entry", &Level::WARN));
        // -v asks for everything, rmcp's sessions included.
        let verbose = default_filter(Verbosity::from_count(1), Mode::Command);
        assert!(verbose.would_enable("rmcp::service", &Level::DEBUG));
    }
}
