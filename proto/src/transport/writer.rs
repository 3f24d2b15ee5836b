//! The writer task of a connection: drains its [`Outbox`](super::outbox)
//! into the socket, batching whatever is already queued into one write.

use prost::Message;
use tokio::io::AsyncWrite;

use super::outbox::OutboxReceiver;
use crate::codec::{FrameError, FrameWriter};

/// Writes every message from `queue` until every sender is gone or the
/// socket fails. Each message's share of the outbox budget is given back
/// once it is encoded into the writer's buffer.
///
/// A message too large for a frame is passed to `oversize`, which may offer a
/// replacement (the server answers `ErrorMsg{413}` in its place).
pub(crate) async fn write_frames<M, W>(
    mut queue: OutboxReceiver<M>,
    socket: W,
    oversize: impl Fn(&M, FrameError) -> Option<M>,
) where
    M: Message,
    W: AsyncWrite + Unpin,
{
    let mut writer = FrameWriter::new(socket);
    while let Some(queued) = queue.recv().await {
        if write_one(&mut writer, queued.message, &oversize)
            .await
            .is_err()
        {
            return;
        }
        while let Some(queued) = queue.try_recv() {
            if write_one(&mut writer, queued.message, &oversize)
                .await
                .is_err()
            {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

async fn write_one<M: Message, W: AsyncWrite + Unpin>(
    writer: &mut FrameWriter<W>,
    message: M,
    oversize: &impl Fn(&M, FrameError) -> Option<M>,
) -> Result<(), FrameError> {
    match writer.queue(&message).await {
        Err(err @ FrameError::TooLarge { .. }) => match oversize(&message, err) {
            Some(replacement) => writer.queue(&replacement).await,
            None => Ok(()),
        },
        other => other,
    }
}
