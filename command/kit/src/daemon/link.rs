//! [`DaemonLink`]: a connection to the daemon that outlives daemon restarts.

use std::sync::Arc;

use crabtalk_home::Home;
use crabtalk_proto::Client;
use tokio::sync::watch;

use super::backoff::Backoff;
use super::connection::{Connected, Current, Keeper};
use super::follow::{Following, Subscription};
use crate::Shutdown;

/// The link is shut down: the component is stopping, or every handle to
/// the link was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the link to the daemon is shut down")]
pub struct LinkClosed;

/// A component's connection to the daemon of its home, kept for the whole
/// life of the component.
///
/// One task keeps it: it connects ([`connect`](super::connect): the Unix
/// socket, else TCP with the token from `run/token`), waits for the
/// connection to close, and connects again, with [`Backoff`] between
/// attempts while the daemon is away — so a component may start before the
/// daemon and survives its restarts. Streams followed with
/// [`DaemonLink::follow`] are opened again on every new connection. At
/// idle nothing runs: the task waits on the connection, and the connection
/// on its socket.
///
/// Requests go through [`DaemonLink::client`], which waits until the
/// daemon is reachable:
///
/// ```no_run
/// # async fn example(link: crabtalk_kit::daemon::DaemonLink) -> anyhow::Result<()> {
/// use crabtalk_proto::msg::StreamMsg;
/// use futures::StreamExt;
///
/// let mut turn = link
///     .client()
///     .await?
///     .stream(StreamMsg { agent: "crab".into(), content: "hello".into(), ..Default::default() })
///     .await?;
/// while let Some(event) = turn.next().await {
///     println!("{:?}", event?);
/// }
/// # Ok(()) }
/// ```
///
/// A turn in flight when the daemon goes away ends with an error; whether
/// to send it again is the component's decision. Clones share the link; it
/// stops at [`Shutdown`], or when the last clone and the last [`Following`]
/// made from it are dropped.
#[derive(Clone)]
pub struct DaemonLink {
    shared: Arc<Shared>,
}

struct Shared {
    current: watch::Receiver<Current>,
    shutdown: Shutdown,
    keeper: Arc<Keeper>,
}

impl DaemonLink {
    /// Starts keeping a connection to the daemon of `home` until
    /// `shutdown`. Call it inside a tokio runtime.
    pub fn start(home: Home, shutdown: Shutdown) -> Self {
        Self::start_with_backoff(home, shutdown, Backoff::default())
    }

    /// [`DaemonLink::start`] with other delays between attempts.
    pub fn start_with_backoff(home: Home, shutdown: Shutdown, backoff: Backoff) -> Self {
        let (publish, current) = watch::channel(None);
        let keeper = tokio::spawn(keep_connected(home, shutdown.clone(), backoff, publish));
        Self {
            shared: Arc::new(Shared {
                current,
                shutdown,
                keeper: Arc::new(Keeper::new(keeper.abort_handle())),
            }),
        }
    }

    /// A client on the current connection, waiting for the daemon if it is
    /// not reachable right now. Fails only once the link is shut down.
    pub async fn client(&self) -> Result<Client, LinkClosed> {
        let mut current = self.shared.current.clone();
        let stopping = self.shared.shutdown.requested();
        tokio::select! {
            biased;
            _ = stopping => Err(LinkClosed),
            found = current.wait_for(|c| c.as_ref().is_some_and(Connected::is_usable)) => {
                let found = found.map_err(|_| LinkClosed)?;
                Ok(found.as_ref().map(|c| c.client.clone()).ok_or(LinkClosed)?)
            }
        }
    }

    /// The client of the current connection, if the daemon is reachable
    /// right now.
    pub fn current(&self) -> Option<Client> {
        self.shared
            .current
            .borrow()
            .as_ref()
            .filter(|c| c.is_usable())
            .map(|c| c.client.clone())
    }

    /// How many times the link has connected so far (0 before the first
    /// connection; each daemon restart adds one).
    pub fn connections(&self) -> u64 {
        self.shared
            .current
            .borrow()
            .as_ref()
            .map_or(0, |c| c.generation)
    }

    /// Follows `subscription` (e.g. `SubscribeEvents {}`) for as long as
    /// the returned stream is kept: it is opened on the current connection
    /// and again on every new one. See [`Following`].
    pub fn follow<S: Subscription>(&self, subscription: S) -> Following<S::Item> {
        Following::start(
            self.shared.keeper.clone(),
            subscription,
            self.shared.current.clone(),
            self.shared.shutdown.clone(),
        )
    }
}

/// The link's one task: connect, publish, wait for the connection to end,
/// again — until shutdown.
async fn keep_connected(
    home: Home,
    shutdown: Shutdown,
    mut backoff: Backoff,
    publish: watch::Sender<Current>,
) {
    let mut generation = 0;
    let stopping = shutdown.requested();
    tokio::pin!(stopping);
    loop {
        let mut said_waiting = false;
        let client = loop {
            let attempt = tokio::select! {
                () = &mut stopping => return,
                attempt = super::connect(&home) => attempt,
            };
            match attempt {
                Ok(client) => break client,
                Err(err) if err.is_not_running() => {
                    // Once per absence at info; every attempt at debug.
                    if !said_waiting {
                        said_waiting = true;
                        tracing::info!("waiting for the daemon: {err}");
                    } else {
                        tracing::debug!("the daemon is not reachable yet: {err}");
                    }
                }
                Err(err) => tracing::warn!("cannot connect to the daemon: {err}"),
            }
            tokio::select! {
                () = &mut stopping => return,
                () = tokio::time::sleep(backoff.next_delay()) => {}
            }
        };
        backoff.reset();
        generation += 1;
        tracing::info!(connection = generation, "connected to the daemon");
        publish.send_replace(Some(Connected {
            generation,
            client: client.clone(),
        }));
        let reason = tokio::select! {
            () = &mut stopping => return,
            reason = client.closed() => reason,
        };
        tracing::warn!("lost the daemon ({reason}); reconnecting");
        publish.send_replace(None);
    }
}
