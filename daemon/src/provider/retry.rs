//! Retries and stall detection for model calls.
//!
//! - Non-streaming calls retry transient failures (429, 5xx, network,
//!   timeouts) up to `max_retries` times, waiting a random time in
//!   `[0, base × 2^attempt]` ("full jitter"), or at least what the
//!   provider's `Retry-After` asked for (capped).
//! - Streams are retried the same way until their first chunk has arrived;
//!   after that a failure is final (the client has seen output).
//! - Every wait for a chunk, including the first, is bounded by the idle
//!   timeout.

use std::future::Future;
use std::time::Duration;

use crabllm_core::{BoxStream, ChatCompletionChunk, ChatCompletionRequest, Error, Provider};
use futures::StreamExt;
use rand::Rng;

use super::LlmError;

/// The longest a `Retry-After` is honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// How model calls are retried and timed out.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_backoff: Duration,
    pub idle_timeout: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (0-based).
    pub fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let cap = self.base_backoff.saturating_mul(1u32 << attempt.min(16));
        let jittered = rand::rng().random_range(Duration::ZERO..=cap);
        match retry_after {
            Some(asked) => jittered.max(asked.min(MAX_RETRY_AFTER)),
            None => jittered,
        }
    }
}

/// Runs `call` until it succeeds, fails permanently, or retries run out.
pub async fn with_retries<T, F, Fut>(policy: &RetryPolicy, mut call: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut attempt = 0;
    loop {
        match call().await {
            Err(err) if err.is_transient() && attempt < policy.max_retries => {
                let wait = policy.backoff(attempt, err.retry_after());
                tracing::info!(
                    "transient model error ({}); retrying in {wait:?}",
                    err.message()
                );
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// Why a stream could not be opened.
#[derive(Debug)]
pub enum StreamOpenError {
    Provider(Error),
    /// Nothing arrived within the idle timeout (seconds).
    Idle(u64),
}

/// An open model stream; its first chunk has already arrived (or the stream
/// was empty).
pub struct ChunkStream {
    inner: BoxStream<'static, Result<ChatCompletionChunk, Error>>,
    first: Option<ChatCompletionChunk>,
    idle: Duration,
    label: String,
}

impl ChunkStream {
    pub(super) fn with_label(mut self, label: String) -> Self {
        self.label = label;
        self
    }

    /// The next chunk; an error ends the stream.
    pub async fn next(&mut self) -> Option<Result<ChatCompletionChunk, LlmError>> {
        if let Some(first) = self.first.take() {
            return Some(Ok(first));
        }
        match tokio::time::timeout(self.idle, self.inner.next()).await {
            Err(_) => Some(Err(LlmError::Idle {
                secs: self.idle.as_secs(),
            })),
            Ok(None) => None,
            Ok(Some(Ok(chunk))) => Some(Ok(chunk)),
            Ok(Some(Err(err))) => Some(Err(LlmError::from_provider(&self.label, &err))),
        }
    }
}

/// Opens a stream and waits for its first chunk, retrying transient
/// failures until then.
pub async fn open_stream(
    policy: &RetryPolicy,
    provider: &impl Provider,
    request: &ChatCompletionRequest,
) -> Result<ChunkStream, StreamOpenError> {
    let mut attempt = 0;
    loop {
        let opened = tokio::time::timeout(policy.idle_timeout, async {
            let mut stream = provider.chat_completion_stream(request).await?;
            match stream.next().await {
                Some(Ok(first)) => Ok((stream, Some(first))),
                Some(Err(err)) => Err(err),
                None => Ok((stream, None)),
            }
        })
        .await;
        match opened {
            Err(_) => return Err(StreamOpenError::Idle(policy.idle_timeout.as_secs())),
            Ok(Ok((inner, first))) => {
                return Ok(ChunkStream {
                    inner,
                    first,
                    idle: policy.idle_timeout,
                    label: String::new(),
                });
            }
            Ok(Err(err)) if err.is_transient() && attempt < policy.max_retries => {
                let wait = policy.backoff(attempt, err.retry_after());
                tracing::info!(
                    "model stream failed before its first chunk ({}); retrying in {wait:?}",
                    err.message()
                );
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Ok(Err(err)) => return Err(StreamOpenError::Provider(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_backoff: Duration::from_millis(100),
            idle_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_cap() {
        let policy = policy();
        for attempt in 0..4 {
            let cap = Duration::from_millis(100 << attempt);
            for _ in 0..200 {
                assert!(policy.backoff(attempt, None) <= cap);
            }
        }
        // Spread: not every draw is the cap.
        let draws: Vec<_> = (0..50).map(|_| policy.backoff(3, None)).collect();
        assert!(draws.iter().any(|d| *d < Duration::from_millis(400)));
        assert!(policy.backoff(0, Some(Duration::from_secs(2))) >= Duration::from_secs(2));
        assert!(policy.backoff(0, Some(Duration::from_secs(600))) <= MAX_RETRY_AFTER);
    }

    #[tokio::test(start_paused = true)]
    async fn transient_errors_are_retried_and_permanent_ones_are_not() {
        let calls = AtomicU32::new(0);
        let result = with_retries(&policy(), || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(Error::Provider {
                    status: 429,
                    body: "slow down".into(),
                    retry_after: None,
                })
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&policy(), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Error::Provider {
                status: 401,
                body: "bad key".into(),
                retry_after: None,
            })
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&policy(), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Error::Network("reset".into()))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 3, "two retries, then give up");
    }
}
