//! [`Following`]: a subscription that survives daemon restarts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crabtalk_proto::Client;
use crabtalk_proto::msg::{
    AgentEventMsg, ErrorMsg, McpEventMsg, SubscribeEvents, SubscribeMcpEventsMsg,
};
use crabtalk_proto::{ClientError, ReplyStream, StreamItem};
use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

use super::backoff::Backoff;
use super::connection::{Connected, Current, Keeper};
use crate::Shutdown;

/// How many items wait for a slow consumer before the follower waits too.
const QUEUE: usize = 64;

/// Delays before opening a subscription again on a connection that stayed
/// open after the daemon ended it.
const SAME_CONNECTION_FIRST: Duration = Duration::from_millis(500);
const SAME_CONNECTION_CAP: Duration = Duration::from_secs(5);

/// A streaming request that can be opened again on a new connection.
pub trait Subscription: Clone + Send + Sync + 'static {
    /// What the stream yields.
    type Item: StreamItem;

    /// Opens the stream on `client`.
    fn open(
        &self,
        client: &Client,
    ) -> impl Future<Output = Result<ReplyStream<Self::Item>, ClientError>> + Send;
}

// `clone`, not a copy: the request messages are empty (so `Copy`) today,
// and stay correct when they gain fields.
#[allow(clippy::clone_on_copy)]
impl Subscription for SubscribeEvents {
    type Item = AgentEventMsg;

    async fn open(&self, client: &Client) -> Result<ReplyStream<AgentEventMsg>, ClientError> {
        client.subscribe_events(self.clone()).await
    }
}

#[allow(clippy::clone_on_copy)]
impl Subscription for SubscribeMcpEventsMsg {
    type Item = McpEventMsg;

    async fn open(&self, client: &Client) -> Result<ReplyStream<McpEventMsg>, ClientError> {
        client.subscribe_mcp_events(self.clone()).await
    }
}

/// What a followed subscription yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Followed<T> {
    /// The subscription is in place on the daemon for the first time:
    /// anything published after this point arrives.
    Started,
    /// The connection was lost and the subscription is in place again on
    /// a new one. Items published while it was away are not replayed.
    Resumed,
    /// One item of the stream.
    Item(T),
}

/// A subscription followed across connections: a stream of [`Followed`]
/// items that ends only at shutdown or after an error the daemon answered
/// the subscription with (the stream's last item: the daemon refused it,
/// and would refuse it again). It keeps its link alive while it is kept.
///
/// A subscription the daemon closes because it is going away (503) is not
/// such an error: it is opened again once the daemon is back. Dropping the
/// stream cancels the subscription.
pub struct Following<T> {
    items: mpsc::Receiver<Result<Followed<T>, ClientError>>,
    follower: AbortHandle,
    /// Keeps the link's task alive as long as something follows through it.
    _keeper: Arc<Keeper>,
}

impl<T> Drop for Following<T> {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

impl<T: StreamItem> Following<T> {
    pub(super) fn start<S>(
        keeper: Arc<Keeper>,
        subscription: S,
        current: watch::Receiver<Current>,
        shutdown: Shutdown,
    ) -> Self
    where
        S: Subscription<Item = T>,
    {
        let (sender, items) = mpsc::channel(QUEUE);
        let follower = Follower {
            subscription,
            current,
            sender,
            retry: Backoff::new(SAME_CONNECTION_FIRST, SAME_CONNECTION_CAP),
        };
        let task = tokio::spawn(async move {
            tokio::select! {
                () = shutdown.requested() => {}
                () = follower.run() => {}
            }
        });
        Self {
            items,
            follower: task.abort_handle(),
            _keeper: keeper,
        }
    }
}

impl<T> Stream for Following<T> {
    type Item = Result<Followed<T>, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.items.poll_recv(cx)
    }
}

/// The task behind a [`Following`].
struct Follower<S: Subscription> {
    subscription: S,
    current: watch::Receiver<Current>,
    sender: mpsc::Sender<Result<Followed<S::Item>, ClientError>>,
    retry: Backoff,
}

/// Why one opening of the stream ended.
enum Ended {
    /// The consumer dropped the stream, or the daemon refused it for good.
    Finished,
    /// The connection went away, or the daemon closed the subscription.
    Interrupted,
}

impl<S: Subscription> Follower<S> {
    async fn run(mut self) {
        let mut last_generation = None;
        loop {
            let Some(connected) = self.next_connection().await else {
                return;
            };
            if last_generation == Some(connected.generation) {
                // The daemon ended the stream but kept the connection: most
                // often it is shutting down and the connection closes next.
                // Wait for that (then the next connection is a new daemon's)
                // or, if it stays open, retry on it after a while.
                tokio::select! {
                    _ = connected.client.closed() => continue,
                    () = tokio::time::sleep(self.retry.next_delay()) => {}
                }
            }
            let marker = match last_generation {
                None => Followed::Started,
                Some(_) => Followed::Resumed,
            };
            last_generation = Some(connected.generation);
            match self.follow_once(&connected.client, marker).await {
                Ended::Finished => return,
                Ended::Interrupted => {}
            }
        }
    }

    /// A usable connection (the one already used, if it is still open).
    /// `None` once the link is gone or the consumer is.
    async fn next_connection(&mut self) -> Option<Connected> {
        let usable = |current: &Current| current.as_ref().is_some_and(Connected::is_usable);
        tokio::select! {
            () = self.sender.closed() => None,
            found = self.current.wait_for(usable) => found.ok()?.clone(),
        }
    }

    async fn follow_once(&mut self, client: &Client, marker: Followed<S::Item>) -> Ended {
        let mut stream = match self.subscription.open(client).await {
            Ok(stream) => stream,
            Err(err) => return self.failed(err).await,
        };
        // The marker says "following": only once the daemon has taken the
        // subscription. Requests on one connection start in the order they
        // arrive, so a ping answered after the subscription was sent was
        // started after it; without this, an event published in between
        // (another client's turn ending) would be missed by a follower that
        // believes it is following.
        if let Err(err) = client.ping().await {
            return self.failed(err).await;
        }
        if self.sender.send(Ok(marker)).await.is_err() {
            return Ended::Finished;
        }
        self.retry.reset();
        loop {
            let item = tokio::select! {
                () = self.sender.closed() => return Ended::Finished,
                item = stream.next() => item,
            };
            match item {
                Some(Ok(item)) => {
                    if self.sender.send(Ok(Followed::Item(item))).await.is_err() {
                        return Ended::Finished;
                    }
                }
                Some(Err(err)) => return self.failed(err).await,
                None => return Ended::Interrupted,
            }
        }
    }

    /// An error opening or reading the stream: a refusal ends the
    /// following (the consumer gets the error); anything else is the
    /// connection or the daemon going away.
    async fn failed(&mut self, err: ClientError) -> Ended {
        match &err {
            ClientError::Server(error) if error.code != ErrorMsg::UNAVAILABLE => {
                let _ = self.sender.send(Err(err)).await;
                Ended::Finished
            }
            _ => {
                tracing::debug!("a followed subscription was interrupted: {err}");
                Ended::Interrupted
            }
        }
    }
}
