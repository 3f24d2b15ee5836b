//! Errors a person can act on, and the exit status each one means.

use crabtalk_kit::daemon::ConnectError;
use crabtalk_proto::ClientError;
use crabtalk_proto::msg::ErrorMsg;

/// The exit status for a reply or turn that failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// The exit status for bad usage (clap uses it too).
pub(crate) const EXIT_USAGE: u8 = 2;
/// The exit status when the daemon cannot be reached.
pub(crate) const EXIT_UNREACHABLE: u8 = 3;
/// The exit status after Ctrl-C.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// Why the TUI could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TuiError {
    /// Nothing answers where the daemon of the home should be (the message
    /// carries the `crabup daemon start` hint), or its files say nothing
    /// usable about where it is.
    #[error("{0}")]
    NotRunning(ConnectError),
    #[error(
        "cannot reach crabtalkd at {addr}: {source}. Is it running there? Start it with `crabup daemon start` (or `crabtalkd run`)"
    )]
    Unreachable { addr: String, source: ClientError },
    #[error(
        "crabtalkd at {addr} refused the connection: {source}. {hint}",
        hint = if *.had_token {
            "The token given (--token or CRABTALK_TOKEN) is not the daemon's: it is in run/token of the daemon's CRABTALK_HOME, or [transport] token in its config.toml"
        } else {
            "Give its token with --token or CRABTALK_TOKEN: it is in run/token of the daemon's CRABTALK_HOME, or [transport] token in its config.toml"
        }
    )]
    Refused {
        addr: String,
        source: ClientError,
        had_token: bool,
    },
    #[error("{}", unknown_agent(.name, .agents))]
    UnknownAgent { name: String, agents: Vec<String> },
    #[error("the turn failed: {0}")]
    TurnFailed(String),
    #[error("{0}")]
    Usage(String),
    #[error("interrupted")]
    Interrupted,
    #[error(transparent)]
    Client(ClientError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

fn unknown_agent(name: &str, agents: &[String]) -> String {
    if agents.is_empty() {
        return format!("there is no agent {name:?}, and the daemon has no agents");
    }
    format!(
        "there is no agent {name:?}; the agents are: {}. Pick one with --agent NAME (or /agent NAME)",
        agents.join(", ")
    )
}

impl TuiError {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::NotRunning(_) | Self::Unreachable { .. } | Self::Refused { .. } => {
                EXIT_UNREACHABLE
            }
            Self::Usage(_) => EXIT_USAGE,
            Self::Interrupted => EXIT_INTERRUPTED,
            Self::Client(ClientError::Closed { .. }) => EXIT_UNREACHABLE,
            _ => EXIT_FAILED,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// The protocol code of a refusal, for `--json` output (people read the
    /// message, which never carries it).
    pub(crate) fn code(&self) -> Option<u32> {
        match self {
            Self::UnknownAgent { .. } => Some(ErrorMsg::NOT_FOUND),
            Self::Client(err) | Self::Refused { source: err, .. } => err.code(),
            _ => None,
        }
    }
}

impl From<ClientError> for TuiError {
    fn from(err: ClientError) -> Self {
        Self::Client(err)
    }
}

impl From<ConnectError> for TuiError {
    fn from(err: ConnectError) -> Self {
        match err {
            ConnectError::Client(err) => Self::Client(err),
            err => Self::NotRunning(err),
        }
    }
}
