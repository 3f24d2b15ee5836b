//! The writer task of a connection: drains its [`Outbox`](super::outbox)
//! into the socket, batching what is queued, and what the tasks ready on its
//! worker are about to queue, into one write (RFC 0001).

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
            || write_queued(&mut queue, &mut writer, &oversize)
                .await
                .is_err()
        {
            return;
        }
        // Yielding once puts this task behind the tasks that are ready on
        // its worker (a turn producing more events): what they queue before
        // the worker would sleep goes in the same write.
        tokio::task::yield_now().await;
        if write_queued(&mut queue, &mut writer, &oversize)
            .await
            .is_err()
            || writer.flush().await.is_err()
        {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

/// Adds to the writer's buffer every message queued now.
async fn write_queued<M: Message, W: AsyncWrite + Unpin>(
    queue: &mut OutboxReceiver<M>,
    writer: &mut FrameWriter<W>,
    oversize: &impl Fn(&M, FrameError) -> Option<M>,
) -> Result<(), FrameError> {
    while let Some(queued) = queue.try_recv() {
        write_one(writer, queued.message, oversize).await?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::io;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use tokio::io::AsyncWrite;

    use super::write_frames;
    use crate::msg::{ServerMessage, StreamChunk, StreamEvent};
    use crate::transport::outbox::outbox;

    /// A socket that takes everything and counts the writes that reach it.
    struct CountingSocket(Arc<AtomicUsize>);

    impl AsyncWrite for CountingSocket {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn chunk(text: &str) -> ServerMessage {
        ServerMessage::from(StreamEvent::from(StreamChunk {
            content: text.into(),
        }))
    }

    /// A turn reads the model's reply a piece at a time from another task
    /// (the HTTP connection's), sending an event for each; every piece
    /// makes it wait for that task. Those events leave in one or two
    /// writes, not one write each.
    #[tokio::test]
    async fn a_burst_of_events_from_a_busy_task_leaves_in_few_writes() {
        let writes = Arc::new(AtomicUsize::new(0));
        let (replies, queue) = outbox::<ServerMessage>(64 * 1024);
        let writer = tokio::spawn(write_frames(
            queue,
            CountingSocket(writes.clone()),
            |_, _| None,
        ));
        let (pieces, mut read) = tokio::sync::mpsc::channel::<String>(1);
        let connection = tokio::spawn(async move {
            for piece in 0..20 {
                pieces.send(format!("piece {piece} ")).await.unwrap();
            }
        });
        let turn = tokio::spawn(async move {
            while let Some(piece) = read.recv().await {
                replies.send(chunk(&piece)).await.unwrap();
            }
        });
        connection.await.unwrap();
        turn.await.unwrap();
        writer.await.unwrap();
        let writes = writes.load(Ordering::Relaxed);
        assert!(
            writes <= 3,
            "20 events of one burst took {writes} writes to the socket"
        );
    }
}
