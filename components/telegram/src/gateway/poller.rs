//! The one long-poll loop.
//!
//! `getUpdates` from the persisted offset, each update handled in order
//! and the offset persisted right after it (so a restart neither hands an
//! update over twice nor loses one); an update id at or below what was
//! handled is ignored; an update the gateway cannot read is logged and
//! skipped. A message that waits for a download is handled beside the
//! loop ([`inbox`](super::inbox)); it counts as handled once it is
//! written down there. A poll with no answer within `poll_restart_secs`
//! is abandoned and started again. A 409 says who else holds the bot
//! (another poller, or a webhook — which is deleted) and backs off; a
//! refused token, an unavailable API (no answer, a 5xx, an answer that is
//! not JSON) back off too — the loop's own backoff, the only pause there
//! is — with one log line per outage that says what Telegram answered. The
//! loop ends at shutdown, after the update in hand is handled and
//! recorded.

use std::sync::Arc;
use std::time::Duration;

use crabtalk_kit::Problems;

use super::Gateway;
use crate::api::ApiFailure;
use crate::api::update::Update;
use crate::state::offset::OffsetStore;

/// Pauses after failures, doubling up to the cap.
struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    fn new(cap: Duration) -> Self {
        Self {
            next: Duration::from_secs(1),
            cap,
        }
    }

    fn step(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(self.cap);
        now
    }

    fn reset(&mut self) {
        self.next = Duration::from_secs(1);
    }
}

/// Polls until shutdown.
pub(crate) async fn run(gateway: Arc<Gateway>, mut offsets: OffsetStore, problems: Problems) {
    let poll_timeout = Duration::from_secs(gateway.config.poll_timeout_secs);
    let restart_after = Duration::from_secs(gateway.config.poll_restart_secs);
    let stopping = gateway.shutdown.requested();
    tokio::pin!(stopping);
    let mut backoff = Backoff::new(Duration::from_secs(60));
    let mut failing: Option<String> = None;
    loop {
        let poll = tokio::time::timeout(
            restart_after,
            gateway.api.get_updates(offsets.next(), poll_timeout),
        );
        let answer = tokio::select! {
            () = &mut stopping => return,
            answer = poll => answer,
        };
        let failure = match answer {
            Err(_) => {
                tracing::warn!("getUpdates gave no answer for {restart_after:?}; polling again");
                continue;
            }
            Ok(Ok(updates)) => {
                backoff.reset();
                if let Some(was) = failing.take() {
                    tracing::info!("the Bot API answers again (it failed with: {was})");
                    problems.clear("poll");
                }
                for value in updates {
                    let Some(id) = value.get("update_id").and_then(serde_json::Value::as_i64)
                    else {
                        tracing::warn!(
                            "an update without an update_id was skipped: {}",
                            value.to_string().chars().take(300).collect::<String>()
                        );
                        continue;
                    };
                    if offsets.is_handled(id) {
                        tracing::debug!(update = id, "update handled before; ignored");
                        continue;
                    }
                    match Update::read(&value) {
                        Ok(update) => super::inbound::update(&gateway, &value, update).await,
                        Err(err) => tracing::warn!(
                            update = id,
                            "an update the gateway cannot read was skipped ({err}): {}",
                            value.to_string().chars().take(300).collect::<String>()
                        ),
                    }
                    if let Err(err) = offsets.handled(id) {
                        tracing::error!("cannot persist the update offset: {err}");
                    }
                }
                continue;
            }
            Ok(Err(failure)) => failure,
        };
        let pause = match &failure {
            ApiFailure::RetryAfter(wait) => *wait,
            ApiFailure::Conflict(text) => {
                tracing::warn!("{text}");
                problems.set("poll", text.clone());
                if text == crate::api::WEBHOOK_SET {
                    if let Err(err) = gateway.api.delete_webhook().await {
                        tracing::warn!("cannot delete the webhook: {err}");
                    }
                    backoff.step().min(Duration::from_secs(5))
                } else {
                    backoff.step().max(Duration::from_secs(5))
                }
            }
            ApiFailure::Unauthorized(_) => {
                let text = failure.to_string();
                tracing::error!("{text}");
                problems.set("poll", text);
                Duration::from_secs(60)
            }
            other => {
                let text = other.to_string();
                let pause = backoff.step().min(Duration::from_secs(30));
                if failing.as_deref() != Some(text.as_str()) {
                    tracing::warn!(
                        "getUpdates failed: {text}; polling again in {} s (and less often while it fails)",
                        pause.as_secs()
                    );
                }
                problems.set("poll", format!("getUpdates failed: {text}"));
                failing = Some(text);
                pause
            }
        };
        tokio::select! {
            () = &mut stopping => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}
