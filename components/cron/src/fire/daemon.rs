//! Firing through the daemon: one streamed turn per slot.
//!
//! The daemon is reached through the component kit's [`DaemonLink`] (the
//! home's Unix socket, else TCP with `run/token`), which reconnects with
//! backoff on its own; a slot waits for it until its retry window ends,
//! then it is an error. A turn that started is never retried (it may have
//! run).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use crabtalk_home::Home;
use crabtalk_kit::daemon::{DaemonLink, LinkClosed};
use crabtalk_proto::Client;
use crabtalk_proto::ClientError;
use crabtalk_proto::msg::{KillMsg, StreamMsg, stream_event::Event};
use futures::StreamExt;
use futures::future::BoxFuture;

use super::telegram::TelegramDelivery;
use super::{Firer, Job, Outcome};
use crate::config::{Deliver, Entry};
use crate::engine::Clock;
use crate::runlog::{Delivery, Status};
use crate::schedule::Span;

/// A reply that is exactly this is not delivered anywhere.
pub(crate) const SILENT: &str = "[SILENT]";

/// Why a slot's turn did not run to its end (the run's recorded error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnError {
    #[error("the daemon link is closed: {source}")]
    LinkClosed { source: LinkClosed },
    #[error(
        "the daemon did not answer within the slot's grace (until {until}); is it running? `crabup daemon start`"
    )]
    NoAnswer { until: DateTime<Utc> },
    #[error("the daemon refused the turn: {source}")]
    Refused { source: ClientError },
    #[error("the turn failed: {source}")]
    Failed { source: ClientError },
    #[error("the turn ended with an error: {message}")]
    Ended { message: String },
    #[error("the turn's stream closed before it ended")]
    Unfinished,
    #[error("no end of the turn within {timeout} (the entry's timeout); it was stopped")]
    TimedOut { timeout: Span },
}

/// Fires slots as turns in the daemon of a home.
pub(crate) struct DaemonFirer {
    daemon: DaemonLink,
    clock: Arc<dyn Clock>,
    telegram: TelegramDelivery,
}

impl DaemonFirer {
    pub(crate) fn new(home: Home, daemon: DaemonLink, clock: Arc<dyn Clock>) -> Self {
        let telegram = TelegramDelivery::new(home);
        Self {
            daemon,
            clock,
            telegram,
        }
    }

    /// A client of the daemon, waiting for it (the link reconnects with
    /// its own backoff) until `until`.
    async fn connect(&self, until: DateTime<Utc>) -> Result<Client, TurnError> {
        let left = (until - self.clock.now()).to_std().unwrap_or_default();
        match tokio::time::timeout(left, self.daemon.client()).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(source)) => Err(TurnError::LinkClosed { source }),
            Err(_) => Err(TurnError::NoAnswer { until }),
        }
    }

    async fn run(&self, job: Job) -> Outcome {
        let started = self.clock.now();
        let outcome = |status, error: Option<TurnError>, reply: Option<String>, delivery| Outcome {
            status,
            started,
            finished: self.clock.now(),
            error: error.map(|err| err.to_string()),
            reply,
            delivery,
        };
        let client = match self.connect(job.retry_until).await {
            Ok(client) => client,
            Err(err) => return outcome(Status::Error, Some(err), None, None),
        };
        job.reached_daemon();
        let (reply, run_id) =
            match tokio::time::timeout(job.entry.timeout.as_std(), turn(&client, &job.entry)).await
            {
                Ok(Ok(done)) => done,
                Ok(Err(err)) => return outcome(Status::Error, Some(err), None, None),
                Err(_) => {
                    let _ = client
                        .kill(KillMsg {
                            agent: job.entry.agent.clone(),
                            sender: job.entry.sender.clone(),
                        })
                        .await;
                    let err = TurnError::TimedOut {
                        timeout: job.entry.timeout,
                    };
                    return outcome(Status::Error, Some(err), None, None);
                }
            };
        let delivery = self.deliver(&job.entry, &reply, run_id).await;
        outcome(Status::Ok, None, Some(reply), delivery)
    }

    async fn deliver(&self, entry: &Entry, reply: &str, run_id: Option<u64>) -> Option<Delivery> {
        let Deliver::Telegram(chat) = &entry.deliver else {
            return None;
        };
        let to = entry.deliver.to_text();
        if reply.trim() == SILENT {
            return Some(Delivery {
                status: "silent".into(),
                to,
                message_ids: Vec::new(),
                error: None,
            });
        }
        Some(match self.telegram.send(chat, reply, run_id).await {
            Ok(message_ids) => Delivery {
                status: "delivered".into(),
                to,
                message_ids,
                error: None,
            },
            Err(err) => {
                tracing::warn!(entry = %entry.id, "delivery to {to} failed: {err}");
                Delivery {
                    status: "error".into(),
                    to,
                    message_ids: Vec::new(),
                    error: Some(err.to_string()),
                }
            }
        })
    }
}

impl Firer for DaemonFirer {
    fn fire(&self, job: Job) -> BoxFuture<'static, Outcome> {
        let firer = Self {
            daemon: self.daemon.clone(),
            clock: self.clock.clone(),
            telegram: self.telegram.clone(),
        };
        Box::pin(async move { firer.run(job).await })
    }
}

/// The trigger cron's turns carry (RFC 0005): the daemon offers them no
/// `cron__*` tools, and the telegram gateway relays their replies.
pub(crate) const TRIGGER: &str = "cron";

/// Runs the entry's turn to its end; the final reply (the text after the
/// last tool call) and the turn's run id (from its `StreamStart`).
async fn turn(client: &Client, entry: &Entry) -> Result<(String, Option<u64>), TurnError> {
    let request = StreamMsg {
        agent: entry.agent.clone(),
        content: entry.action.content(),
        sender: Some(entry.sender.clone()),
        trigger: Some(TRIGGER.into()),
        // An entry a gateway sender made runs as that sender's turn.
        origin: entry.origin.clone(),
        ..Default::default()
    };
    let mut stream = client
        .stream(request)
        .await
        .map_err(|source| TurnError::Refused { source })?;
    let mut reply = String::new();
    let mut run_id = None;
    while let Some(event) = stream.next().await {
        let event = event.map_err(|source| TurnError::Failed { source })?;
        match event.event {
            Some(Event::Start(start)) => run_id = Some(start.run_id).filter(|id| *id != 0),
            Some(Event::Chunk(chunk)) => reply.push_str(&chunk.content),
            Some(Event::ToolStart(_)) => reply.clear(),
            Some(Event::End(end)) => {
                if !end.error.is_empty() {
                    return Err(TurnError::Ended { message: end.error });
                }
                return Ok((reply, run_id));
            }
            _ => {}
        }
    }
    Err(TurnError::Unfinished)
}
