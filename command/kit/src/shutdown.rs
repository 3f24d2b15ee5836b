//! [`Shutdown`]: one signal that every task of a process stops on.
//!
//! A component has several tasks — an HTTP server, a daemon link, a poller
//! — and all of them must stop when the service manager says so. The kit's
//! `main` makes one [`Shutdown`] that fires on SIGINT or SIGTERM (Ctrl-C on
//! Windows) and hands clones of it to everything; a task can also fire it
//! itself (a fatal error in one part stops the others).

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// A shared "stop now" signal. Clones fire together.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    /// A signal that only [`Shutdown::trigger`] fires.
    pub fn new() -> Self {
        Self::default()
    }

    /// A signal that fires on SIGINT or SIGTERM (Ctrl-C on Windows), or
    /// [`Shutdown::trigger`]. The handlers are in place when this returns,
    /// so from then on those signals no longer kill the process outright.
    /// Call it inside a tokio runtime.
    pub fn on_signals() -> std::io::Result<Self> {
        let shutdown = Self::new();
        let signals = OsSignals::install()?;
        let trigger = shutdown.clone();
        tokio::spawn(async move {
            let name = signals.received().await;
            tracing::info!("{name} received, shutting down");
            trigger.trigger();
        });
        Ok(shutdown)
    }

    /// Fires the signal for every clone.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Whether it has fired.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once the signal fires (at once if it has).
    pub fn requested(&self) -> impl Future<Output = ()> + Send + 'static {
        self.token.clone().cancelled_owned()
    }

    /// The same signal as a `tokio_util` cancellation token, for code that
    /// takes one (a child of it would not be fired by the signal alone).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.token.clone()
    }
}

/// The operating system's stop signals.
struct OsSignals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl OsSignals {
    fn install() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                terminate: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for one and names it.
    async fn received(mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => "SIGTERM",
                _ = self.interrupt.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = &mut self;
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn clones_fire_together_and_late_waiters_return_at_once() {
        let shutdown = Shutdown::new();
        let waiter = tokio::spawn(shutdown.clone().requested());
        assert!(!shutdown.is_triggered());
        shutdown.clone().trigger();
        waiter.await.unwrap();
        assert!(shutdown.is_triggered());
        shutdown.requested().await;
        assert!(shutdown.cancellation_token().is_cancelled());
    }
}
