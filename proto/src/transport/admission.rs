//! Who may use a connection, and what a connection may cost before it is
//! let in.
//!
//! The Unix socket is [`Admission::Open`]: its 0600 mode is the gate. A TCP
//! listener is [`Admission::Token`]: the first frame must be
//! `Hello{token}` with the listener's token. Until a connection has said
//! it, it is a stranger, and a stranger gets very little:
//!
//! - its frames may be at most [`MAX_HELLO_FRAME`] bytes (a `Hello` is a
//!   few dozen), checked on the header, before any byte of the payload is
//!   buffered;
//! - at most [`MAX_UNADMITTED`] strangers are served per listener at once;
//!   one more is answered `ErrorMsg{503}` and closed;
//! - it has the handshake timeout to say `Hello`;
//! - its attempt is judged by the listener's [`Throttle`], so wrong guesses
//!   get slower and slower answers.
//!
//! So what strangers can make a server hold is bounded: about
//! `MAX_UNADMITTED × (MAX_HELLO_FRAME + the connection's read buffer)`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use super::outbox::Outbox;
use super::throttle::{Delays, Source, Throttle};
use crate::codec::{FrameError, FrameReader, FrameWriter, MAX_FRAME_LEN};
use crate::msg::{ClientMessage, ErrorMsg, Pong, ServerMessage, client_message};

/// The largest frame a connection may send before it is admitted.
pub const MAX_HELLO_FRAME: usize = 4 * 1024;

/// Connections per listener that may wait to be admitted at once.
pub const MAX_UNADMITTED: usize = 64;

/// How long the answer to a connection refused at once may take to write.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Who may use a connection.
#[derive(Clone)]
pub(crate) enum Admission {
    /// Anyone who can reach the listener.
    Open,
    /// Only a client whose first frame is `Hello` with the token.
    Token(Arc<TokenGate>),
}

/// The gate of a token-protected listener.
pub(crate) struct TokenGate {
    token: Box<str>,
    pub(crate) handshake_timeout: Duration,
    pub(crate) throttle: Throttle,
    unadmitted: AtomicUsize,
}

/// A place among the connections waiting to be admitted; given back when
/// dropped (admitted or closed).
pub(crate) struct Waiting {
    gate: Arc<TokenGate>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.gate.unadmitted.fetch_sub(1, Ordering::AcqRel);
    }
}

impl TokenGate {
    pub(crate) fn new(token: &str, handshake_timeout: Duration, delays: Delays) -> Self {
        Self {
            token: token.into(),
            handshake_timeout,
            throttle: Throttle::new(delays),
            unadmitted: AtomicUsize::new(0),
        }
    }

    /// Whether `token` is the listener's token (in constant time).
    pub(crate) fn accepts(&self, token: &str) -> bool {
        constant_time_eq(self.token.as_bytes(), token.as_bytes())
    }

    /// A place for one more unadmitted connection, unless
    /// [`MAX_UNADMITTED`] are waiting already.
    pub(crate) fn wait_place(self: &Arc<Self>) -> Option<Waiting> {
        let taken = self
            .unadmitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |waiting| {
                (waiting < MAX_UNADMITTED).then_some(waiting + 1)
            });
        taken.ok().map(|_| Waiting { gate: self.clone() })
    }
}

/// Answers a connection that came when too many were waiting to be
/// admitted, and closes it.
pub(super) async fn refuse_busy<W: AsyncWrite + Unpin>(write: W) {
    let error = ErrorMsg::new(
        ErrorMsg::UNAVAILABLE,
        format!(
            "too many connections ({MAX_UNADMITTED}) are waiting to say Hello; try again in a few seconds"
        ),
    );
    let mut writer = FrameWriter::new(write);
    let refused = async {
        writer.write(&ServerMessage::from(error)).await?;
        writer.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE, refused).await;
}

/// How the first frame of a token-protected connection was judged.
enum Verdict {
    /// A `Hello` with the token (answering this request id).
    Admitted(u64),
    /// Anything else, with the answer to send before closing.
    Refused(Box<ServerMessage>),
    /// The peer went away before a whole frame arrived.
    Gone,
}

/// Reads and judges the first frame of a token-protected connection,
/// within the handshake timeout; true when the connection is admitted.
pub(super) async fn admit<R: AsyncRead + Unpin>(
    gate: &TokenGate,
    reader: &mut FrameReader<R>,
    source: Option<Source>,
    replies: &Outbox<ServerMessage>,
) -> bool {
    reader.set_limit(MAX_HELLO_FRAME);
    let judged = tokio::time::timeout(gate.handshake_timeout, async {
        let frame = reader.read::<ClientMessage>().await;
        if let Err(FrameError::Closed | FrameError::Truncated { .. } | FrameError::Io(_)) = &frame {
            return Verdict::Gone;
        }
        // Every attempt, good or bad, waits for its source's turn.
        let attempt = match source {
            Some(source) => Some(gate.throttle.attempt(source).await),
            None => None,
        };
        let verdict = judge(gate, frame);
        if let Some(attempt) = attempt {
            match verdict {
                Verdict::Admitted(_) => attempt.succeeded(),
                _ => attempt.failed(),
            }
        }
        verdict
    })
    .await;
    let verdict = judged.unwrap_or_else(|_| {
        Verdict::Refused(Box::new(
            ErrorMsg::unauthorized(
                "no Hello with the daemon's token arrived in time; closing the connection",
            )
            .into(),
        ))
    });
    match verdict {
        Verdict::Admitted(request_id) => {
            reader.set_limit(MAX_FRAME_LEN);
            let _ = replies
                .send(ServerMessage::from(Pong::of_this_server()).answering(request_id))
                .await;
            true
        }
        Verdict::Refused(answer) => {
            let _ = replies.send(*answer).await;
            false
        }
        Verdict::Gone => false,
    }
}

/// The verdict on a first frame that arrived whole (or was too large).
fn judge(gate: &TokenGate, frame: Result<ClientMessage, FrameError>) -> Verdict {
    let message = match frame {
        Ok(message) => message,
        Err(FrameError::TooLarge { len, max }) => {
            return Verdict::Refused(Box::new(
                ErrorMsg::too_large(format!(
                    "a first frame of {len} bytes is over the {max}-byte limit before Hello; the first frame must be Hello with the daemon's token"
                ))
                .into(),
            ));
        }
        Err(_) => {
            return Verdict::Refused(Box::new(
                ErrorMsg::unauthorized(
                    "the first frame is not a message; this listener requires Hello with the daemon's token first",
                )
                .into(),
            ));
        }
    };
    let request_id = message.request_id;
    let refusal = match &message.msg {
        Some(client_message::Msg::Hello(hello)) if gate.accepts(&hello.token) => {
            return Verdict::Admitted(request_id);
        }
        Some(client_message::Msg::Hello(_)) => {
            "wrong token in Hello: local clients read it from $CRABTALK_HOME/run/token; remote clients must be given it (see [transport] token)"
        }
        _ => "this listener requires Hello with the daemon's token as the first frame",
    };
    Verdict::Refused(Box::new(
        ServerMessage::from(ErrorMsg::unauthorized(refusal)).answering(request_id),
    ))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_accepted() {
        let gate = TokenGate::new("s3cret", Duration::from_secs(1), Delays::default());
        assert!(gate.accepts("s3cret"));
        for wrong in ["", "s3cre", "s3cret ", "S3cret", "s3cretx"] {
            assert!(!gate.accepts(wrong), "{wrong:?}");
        }
    }

    #[test]
    fn waiting_places_are_bounded_and_given_back() {
        let gate = Arc::new(TokenGate::new(
            "t",
            Duration::from_secs(1),
            Delays::default(),
        ));
        let places: Vec<Waiting> = (0..MAX_UNADMITTED)
            .map(|_| gate.wait_place().expect("a place"))
            .collect();
        assert!(gate.wait_place().is_none());
        drop(places);
        assert!(gate.wait_place().is_some());
    }
}
