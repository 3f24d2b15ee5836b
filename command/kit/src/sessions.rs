//! A bounded number of MCP sessions per component.
//!
//! Every `initialize` on `/mcp` opens a session: a task, a handler and
//! their queues, kept until the client deletes it or it has been idle for
//! rmcp's keep-alive (five minutes). Without a bound, a client that only
//! says `initialize` makes a component hold memory without limit.
//! [`CappedSessions`] wraps rmcp's [`LocalSessionManager`] and keeps at most
//! [`MAX_SESSIONS`]: when one more is opened, the session used longest ago
//! that has no stream open is closed first. A session with an open stream
//! (the daemon's, which keeps its notification stream open) is never
//! evicted; when every session has one, the new session is refused.
//!
//! Only the owner reaches this far (see [`access`](crate::access)): a
//! stranger's request is refused before any session exists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionManager};

/// The most sessions a component keeps at once.
pub const MAX_SESSIONS: usize = 64;

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error("all {0} sessions have a stream open; close one first")]
    Full(usize),
}

/// [`LocalSessionManager`] with at most `cap` sessions (see the module doc).
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    cap: usize,
    usage: Arc<Mutex<HashMap<SessionId, Usage>>>,
}

#[derive(Debug, Clone, Copy)]
struct Usage {
    last_used: Instant,
    open_streams: usize,
}

impl Default for CappedSessions {
    fn default() -> Self {
        Self::with_cap(MAX_SESSIONS)
    }
}

impl CappedSessions {
    /// At most `cap` sessions (at least one).
    pub fn with_cap(cap: usize) -> Self {
        Self {
            inner: LocalSessionManager::default(),
            cap: cap.max(1),
            usage: Arc::default(),
        }
    }

    /// How many sessions are open now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Usage>> {
        self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self, id: &SessionId) {
        if let Some(usage) = self.lock().get_mut(id) {
            usage.last_used = Instant::now();
        }
    }

    /// The session to close to make room, if one must and may be closed.
    fn victim(&self) -> Result<Option<SessionId>, SessionsError> {
        let usage = self.lock();
        if usage.len() < self.cap {
            return Ok(None);
        }
        usage
            .iter()
            .filter(|(_, usage)| usage.open_streams == 0)
            .min_by_key(|(_, usage)| usage.last_used)
            .map(|(id, _)| Some(id.clone()))
            .ok_or(SessionsError::Full(self.cap))
    }

    /// `stream`, counted as open on `id` until it is dropped.
    fn counted<S>(
        &self,
        id: &SessionId,
        stream: S,
    ) -> impl Stream<Item = S::Item> + Send + Sync + 'static
    where
        S: Stream + Send + Sync + 'static,
    {
        let guard = StreamGuard::open(self.usage.clone(), id.clone());
        stream.map(move |item| {
            let _keep = &guard;
            item
        })
    }
}

/// One open stream on a session; dropping it closes the count.
struct StreamGuard {
    usage: Arc<Mutex<HashMap<SessionId, Usage>>>,
    id: SessionId,
}

impl StreamGuard {
    fn open(usage: Arc<Mutex<HashMap<SessionId, Usage>>>, id: SessionId) -> Self {
        if let Some(entry) = usage.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&id) {
            entry.open_streams += 1;
            entry.last_used = Instant::now();
        }
        Self { usage, id }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = usage.get_mut(&self.id) {
            entry.open_streams = entry.open_streams.saturating_sub(1);
            entry.last_used = Instant::now();
        }
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if let Some(victim) = self.victim()? {
            tracing::debug!(session = %victim, "closing the longest-idle MCP session to make room");
            self.lock().remove(&victim);
            self.inner.close_session(&victim).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.lock().insert(
            id.clone(),
            Usage {
                last_used: Instant::now(),
                open_streams: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.counted(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.counted(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.counted(id, stream))
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No external store: a session unknown here stays unknown (404).
        Ok(RestoreOutcome::NotSupported)
    }
}
