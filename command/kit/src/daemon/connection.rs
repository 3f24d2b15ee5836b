//! What a [`DaemonLink`](super::DaemonLink)'s task publishes — the current
//! connection, numbered — and [`Keeper`], which keeps that task running
//! for as long as the link or a stream followed through it is kept. The
//! link and its followers both stand on this file, not on each other.

use crabtalk_proto::Client;
use tokio::task::AbortHandle;

/// One connection to the daemon, numbered so a subscription can tell a
/// new connection from the one it already used.
#[derive(Clone)]
pub(super) struct Connected {
    pub(super) generation: u64,
    pub(super) client: Client,
}

impl Connected {
    pub(super) fn is_usable(&self) -> bool {
        !self.client.is_closed()
    }
}

/// What the link publishes: the current connection, if there is one.
pub(super) type Current = Option<Connected>;

/// The link's task, ended when the last holder of its `Arc` is dropped:
/// every clone of the link and every `Following` made from it holds one.
pub(super) struct Keeper(AbortHandle);

impl Keeper {
    pub(super) fn new(task: AbortHandle) -> Self {
        Self(task)
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}
