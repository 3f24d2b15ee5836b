//! Length-prefixed protobuf frames.
//!
//! A frame is `[u32 big-endian payload length][payload]`; the length counts
//! payload bytes only. Payloads are limited to [`MAX_FRAME_LEN`] (16 MiB) in
//! both directions.
//!
//! The reader never trusts the announced length for an allocation: it checks
//! it against the limit first, then grows its buffer only as bytes actually
//! arrive, so a peer that announces 16 MiB and sends three bytes costs a few
//! kilobytes, not 16 MiB.
//!
//! Failures are distinct, because callers treat them differently:
//! [`FrameError::Closed`] is a clean end of stream (EOF between frames),
//! [`FrameError::Truncated`] is EOF inside a frame, [`FrameError::TooLarge`]
//! is a length over the limit (the stream cannot be resynchronised), and
//! [`FrameError::Decode`] is a complete frame whose payload is not valid
//! protobuf for the expected message (the stream is still in sync).

use std::io;

use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Largest payload accepted or sent: 16 MiB.
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// The reader reserves at most this much ahead of the bytes that arrived.
const READ_CHUNK: usize = 64 * 1024;

/// [`READ_CHUNK`], for the fuzz oracle of the allocation guarantee.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub const READ_AHEAD: usize = READ_CHUNK;

/// A reader keeps a buffer at most this large between frames.
pub(crate) const RETAINED_BUFFER: usize = 1024 * 1024;

/// The writer sends its buffer once it holds this much.
pub(crate) const WRITE_HIGH_WATER: usize = 64 * 1024;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the stream between frames.
    #[error("connection closed")]
    Closed,
    /// The stream ended inside a frame.
    #[error("connection closed inside a frame ({received} of {expected} bytes received)")]
    Truncated { expected: usize, received: usize },
    /// A frame's length is over the limit.
    #[error("frame of {len} bytes is over the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    /// A complete frame whose payload does not decode.
    #[error("frame payload is not a valid message: {0}")]
    Decode(#[from] prost::DecodeError),
    /// The underlying stream failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Appends `msg` as one frame to `out`.
///
/// Fails with [`FrameError::TooLarge`] (and leaves `out` untouched) when the
/// encoded message is over [`MAX_FRAME_LEN`].
pub fn encode_frame(msg: &impl Message, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let len = msg.encoded_len();
    if len > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    out.reserve(4 + len);
    out.extend_from_slice(&(len as u32).to_be_bytes());
    // Encoding into a Vec cannot run out of space.
    msg.encode(out)
        .map_err(|err| io::Error::other(err.to_string()))?;
    Ok(())
}

/// Decodes the payload of one frame (the bytes after the length prefix).
pub fn decode_payload<M: Message + Default>(payload: &[u8]) -> Result<M, FrameError> {
    Ok(M::decode(payload)?)
}

/// Reads frames from a byte stream.
///
/// Its limit is [`MAX_FRAME_LEN`] unless lowered with
/// [`set_limit`](Self::set_limit): a server keeps it small until a
/// connection has said who it is, so a stranger cannot make it buffer
/// megabytes.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    buf: Vec<u8>,
    limit: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner: BufReader::new(inner),
            buf: Vec::new(),
            limit: MAX_FRAME_LEN,
        }
    }

    /// Sets the largest payload the next frames may have (at most
    /// [`MAX_FRAME_LEN`]); a header announcing more is
    /// [`FrameError::TooLarge`], before anything is allocated for it.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(MAX_FRAME_LEN);
    }

    /// The largest payload the reader accepts now.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Reads and decodes the next frame.
    pub async fn read<M: Message + Default>(&mut self) -> Result<M, FrameError> {
        self.read_payload().await?;
        let decoded = M::decode(self.buf.as_slice());
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf = Vec::new();
        }
        Ok(decoded?)
    }

    /// Reads the next frame's payload into the internal buffer.
    async fn read_payload(&mut self) -> Result<(), FrameError> {
        let mut header = [0u8; 4];
        let mut filled = 0;
        while filled < header.len() {
            let n = self.inner.read(&mut header[filled..]).await?;
            if n == 0 {
                return Err(if filled == 0 {
                    FrameError::Closed
                } else {
                    FrameError::Truncated {
                        expected: header.len(),
                        received: filled,
                    }
                });
            }
            filled += n;
        }
        let len = u32::from_be_bytes(header) as usize;
        if len > self.limit {
            return Err(FrameError::TooLarge {
                len,
                max: self.limit,
            });
        }
        self.buf.clear();
        while self.buf.len() < len {
            let remaining = len - self.buf.len();
            self.buf.reserve(remaining.min(READ_CHUNK));
            let n = (&mut self.inner)
                .take(remaining as u64)
                .read_buf(&mut self.buf)
                .await?;
            if n == 0 {
                return Err(FrameError::Truncated {
                    expected: len,
                    received: self.buf.len(),
                });
            }
        }
        Ok(())
    }

    /// The bytes currently reserved by the reader (for tests and the fuzz
    /// oracle of the allocation guarantee).
    #[cfg(any(test, feature = "fuzzing"))]
    #[doc(hidden)]
    pub fn reserved(&self) -> usize {
        self.buf.capacity()
    }
}

/// Writes frames to a byte stream, batching small frames into one write.
pub struct FrameWriter<W> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            buf: Vec::new(),
        }
    }

    /// Queues one frame; it is sent by [`flush`](Self::flush), or earlier when
    /// enough bytes are queued.
    pub async fn queue(&mut self, msg: &impl Message) -> Result<(), FrameError> {
        encode_frame(msg, &mut self.buf)?;
        if self.buf.len() >= WRITE_HIGH_WATER {
            self.send_buffer().await?;
        }
        Ok(())
    }

    /// Writes one frame and flushes it.
    pub async fn write(&mut self, msg: &impl Message) -> Result<(), FrameError> {
        self.queue(msg).await?;
        self.flush().await
    }

    /// Sends every queued frame.
    pub async fn flush(&mut self) -> Result<(), FrameError> {
        self.send_buffer().await?;
        self.inner.flush().await?;
        Ok(())
    }

    /// Flushes, then shuts the write side down.
    pub async fn shutdown(&mut self) -> Result<(), FrameError> {
        self.send_buffer().await?;
        self.inner.shutdown().await?;
        Ok(())
    }

    async fn send_buffer(&mut self) -> Result<(), FrameError> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf).await?;
            self.buf.clear();
            if self.buf.capacity() > RETAINED_BUFFER {
                self.buf = Vec::new();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use proptest::prelude::*;
    use tokio::io::ReadBuf;

    use super::*;
    use crate::msg::{
        ClientMessage, Ping, ServerMessage, StreamChunk, StreamEvent, StreamMsg, arbitrary,
        client_message, server_message,
    };

    /// Hands out its bytes `step` at a time, then EOF.
    struct Trickle {
        bytes: Vec<u8>,
        pos: usize,
        step: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let end = (self.pos + self.step)
                .min(self.bytes.len())
                .min(self.pos + buf.remaining());
            let chunk = self.bytes[self.pos..end].to_vec();
            buf.put_slice(&chunk);
            self.pos = end;
            Poll::Ready(Ok(()))
        }
    }

    fn trickle(bytes: Vec<u8>, step: usize) -> FrameReader<Trickle> {
        FrameReader::new(Trickle {
            bytes,
            pos: 0,
            step,
        })
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    fn stream_msg(
        agent: String,
        content: String,
        sender: Option<String>,
        id: u64,
    ) -> ClientMessage {
        ClientMessage {
            msg: Some(client_message::Msg::Stream(StreamMsg {
                agent,
                content,
                sender,
                ..Default::default()
            })),
            request_id: id,
        }
    }

    /// Encodes `msgs` as one byte stream, delivers it in pieces of the given
    /// sizes (cycled), and decodes frames until the clean close.
    fn round_trip<M>(msgs: &[M], read_sizes: &[usize]) -> Vec<M>
    where
        M: Message + Default,
    {
        let mut bytes = Vec::new();
        for msg in msgs {
            encode_frame(msg, &mut bytes).unwrap();
        }
        let mut pieces = std::collections::VecDeque::new();
        let mut sizes = read_sizes.iter().cycle();
        while !bytes.is_empty() {
            let size = (*sizes.next().unwrap()).min(bytes.len());
            let rest = bytes.split_off(size);
            pieces.push_back(std::mem::replace(&mut bytes, rest));
        }
        rt().block_on(async {
            let mut reader = FrameReader::new(Pieces(pieces));
            let mut out = Vec::new();
            loop {
                match reader.read::<M>().await {
                    Ok(msg) => out.push(msg),
                    Err(FrameError::Closed) => break,
                    Err(err) => panic!("unexpected error: {err}"),
                }
            }
            out
        })
    }

    proptest! {
        // Each case builds a handful of deep messages; 96 cases keep the
        // test well under a second while still visiting every variant.
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn any_client_messages_round_trip_at_any_read_sizes(
            msgs in prop::collection::vec(arbitrary::client_message(), 1..8),
            read_sizes in prop::collection::vec(1usize..48, 1..12),
        ) {
            prop_assert_eq!(round_trip(&msgs, &read_sizes), msgs);
        }

        #[test]
        fn any_server_messages_round_trip_at_any_read_sizes(
            msgs in prop::collection::vec(arbitrary::server_message(), 1..8),
            read_sizes in prop::collection::vec(1usize..48, 1..12),
        ) {
            prop_assert_eq!(round_trip(&msgs, &read_sizes), msgs);
        }
    }

    proptest! {
        #[test]
        fn frames_round_trip_at_every_read_size(
            msgs in prop::collection::vec(
                (".{0,40}", ".{0,300}", prop::option::of(".{0,10}"), any::<u64>()),
                1..6,
            ),
            step in 1usize..9,
        ) {
            let msgs: Vec<ClientMessage> = msgs
                .into_iter()
                .map(|(agent, content, sender, id)| stream_msg(agent, content, sender, id))
                .collect();
            let mut bytes = Vec::new();
            for msg in &msgs {
                encode_frame(msg, &mut bytes).unwrap();
            }
            let decoded = rt().block_on(async {
                let mut reader = trickle(bytes, step);
                let mut out = Vec::new();
                loop {
                    match reader.read::<ClientMessage>().await {
                        Ok(msg) => out.push(msg),
                        Err(FrameError::Closed) => break,
                        Err(err) => panic!("unexpected error: {err}"),
                    }
                }
                out
            });
            prop_assert_eq!(decoded, msgs);
        }

        #[test]
        fn any_cut_inside_a_frame_is_truncated(cut in 1usize..64) {
            let msg = stream_msg("crab".into(), "x".repeat(50), None, 9);
            let mut bytes = Vec::new();
            encode_frame(&msg, &mut bytes).unwrap();
            prop_assume!(cut < bytes.len());
            bytes.truncate(cut);
            let err = rt().block_on(trickle(bytes, 1).read::<ClientMessage>()).unwrap_err();
            prop_assert!(matches!(err, FrameError::Truncated { .. }), "{err:?}");
        }

        #[test]
        fn with_a_small_limit_no_bytes_make_the_reader_hold_more(
            header in any::<u32>(),
            rest in prop::collection::vec(any::<u8>(), 0..9000),
            step in 1usize..700,
        ) {
            // What a server reads from a connection before Hello.
            let limit = 4096;
            let mut bytes = header.to_be_bytes().to_vec();
            bytes.extend(rest);
            rt().block_on(async {
                let mut reader = trickle(bytes, step);
                reader.set_limit(limit);
                loop {
                    let read = reader.read::<ClientMessage>().await;
                    assert!(reader.reserved() <= limit, "reserved {}", reader.reserved());
                    match read {
                        Ok(_) | Err(FrameError::Decode(_)) => {}
                        Err(FrameError::TooLarge { len, max }) => {
                            assert!(len > limit && max == limit);
                            break;
                        }
                        Err(_) => break,
                    }
                }
            });
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            rt().block_on(async {
                let mut reader = trickle(bytes, 3);
                while reader.read::<ClientMessage>().await.is_ok() {}
            });
        }
    }

    /// Delivers its bytes in the given pieces, one piece per read.
    struct Pieces(std::collections::VecDeque<Vec<u8>>);

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if let Some(mut piece) = self.0.pop_front() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece[..n]);
                if n < piece.len() {
                    self.0.push_front(piece.split_off(n));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn every_split_point_of_a_stream_decodes_the_same() {
        let first = stream_msg("crab".into(), "héllo wörld".into(), Some("user".into()), 1);
        let second = ClientMessage {
            msg: Some(client_message::Msg::Ping(Ping {
                client_version: "1".into(),
            })),
            request_id: 2,
        };
        let mut bytes = Vec::new();
        encode_frame(&first, &mut bytes).unwrap();
        encode_frame(&second, &mut bytes).unwrap();
        for split in 1..bytes.len() {
            let pieces = [bytes[..split].to_vec(), bytes[split..].to_vec()];
            rt().block_on(async {
                let mut reader = FrameReader::new(Pieces(pieces.into_iter().collect()));
                assert_eq!(
                    reader.read::<ClientMessage>().await.unwrap(),
                    first,
                    "split {split}"
                );
                assert_eq!(
                    reader.read::<ClientMessage>().await.unwrap(),
                    second,
                    "split {split}"
                );
                let end = reader.read::<ClientMessage>().await.unwrap_err();
                assert!(matches!(end, FrameError::Closed), "split {split}: {end:?}");
            });
        }
    }

    #[test]
    fn oversize_header_is_rejected_without_allocating() {
        let mut bytes = ((MAX_FRAME_LEN + 1) as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 16]);
        rt().block_on(async {
            let mut reader = trickle(bytes, 64);
            let err = reader.read::<ClientMessage>().await.unwrap_err();
            assert!(
                matches!(err, FrameError::TooLarge { len, max } if len == MAX_FRAME_LEN + 1 && max == MAX_FRAME_LEN),
                "{err:?}"
            );
            assert_eq!(reader.reserved(), 0);
        });
    }

    #[test]
    fn a_lowered_limit_refuses_larger_frames_before_reading_them() {
        let small = stream_msg("crab".into(), "x".repeat(10), None, 1);
        let large = stream_msg("crab".into(), "x".repeat(5000), None, 2);
        let mut bytes = Vec::new();
        encode_frame(&small, &mut bytes).unwrap();
        encode_frame(&large, &mut bytes).unwrap();
        rt().block_on(async {
            let mut reader = trickle(bytes, 7);
            reader.set_limit(4096);
            assert_eq!(reader.read::<ClientMessage>().await.unwrap(), small);
            let err = reader.read::<ClientMessage>().await.unwrap_err();
            assert!(
                matches!(err, FrameError::TooLarge { len, max: 4096 } if len > 5000),
                "{err:?}"
            );
            assert!(reader.reserved() <= 4096, "reserved {}", reader.reserved());
        });
        let mut reader = trickle(Vec::new(), 1);
        reader.set_limit(usize::MAX);
        assert_eq!(reader.limit(), MAX_FRAME_LEN);
    }

    #[test]
    fn announced_size_is_not_reserved_before_the_bytes_arrive() {
        // A peer announces the full 16 MiB and sends three bytes.
        let mut bytes = (MAX_FRAME_LEN as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(&[1, 2, 3]);
        rt().block_on(async {
            let mut reader = trickle(bytes, 1);
            let err = reader.read::<ClientMessage>().await.unwrap_err();
            assert!(
                matches!(err, FrameError::Truncated { expected, received: 3 } if expected == MAX_FRAME_LEN),
                "{err:?}"
            );
            assert!(reader.reserved() <= 2 * READ_CHUNK, "reserved {} bytes", reader.reserved());
        });
    }

    #[test]
    fn eof_between_frames_is_a_clean_close_and_inside_a_header_is_truncated() {
        rt().block_on(async {
            let err = trickle(vec![], 1)
                .read::<ClientMessage>()
                .await
                .unwrap_err();
            assert!(matches!(err, FrameError::Closed), "{err:?}");
            let err = trickle(vec![0, 0], 1)
                .read::<ClientMessage>()
                .await
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    FrameError::Truncated {
                        expected: 4,
                        received: 2
                    }
                ),
                "{err:?}"
            );
        });
    }

    #[test]
    fn a_frame_at_the_limit_round_trips_and_one_byte_more_is_refused() {
        // A ServerMessage whose encoding is exactly MAX_FRAME_LEN bytes.
        let chunk = |n: usize| ServerMessage {
            msg: Some(server_message::Msg::Stream(StreamEvent::from(
                StreamChunk {
                    content: "a".repeat(n),
                },
            ))),
            request_id: 0,
        };
        let overhead = chunk(MAX_FRAME_LEN - 64).encoded_len() - (MAX_FRAME_LEN - 64);
        let mut n = MAX_FRAME_LEN - overhead;
        while chunk(n).encoded_len() > MAX_FRAME_LEN {
            n -= 1;
        }
        while chunk(n + 1).encoded_len() <= MAX_FRAME_LEN {
            n += 1;
        }
        let at_limit = chunk(n);
        let mut bytes = Vec::new();
        encode_frame(&at_limit, &mut bytes).unwrap();
        let decoded = rt()
            .block_on(trickle(bytes, READ_CHUNK).read::<ServerMessage>())
            .unwrap();
        assert_eq!(decoded, at_limit);

        let mut out = Vec::new();
        let err = encode_frame(&chunk(n + 1), &mut out).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { .. }), "{err:?}");
        assert!(out.is_empty());
    }

    #[test]
    fn garbage_payload_is_a_decode_error_and_the_stream_stays_in_sync() {
        let mut bytes = vec![0, 0, 0, 2, 0xff, 0xff];
        encode_frame(
            &ClientMessage {
                msg: Some(client_message::Msg::Ping(Ping::default())),
                request_id: 5,
            },
            &mut bytes,
        )
        .unwrap();
        rt().block_on(async {
            let mut reader = trickle(bytes, 2);
            let err = reader.read::<ClientMessage>().await.unwrap_err();
            assert!(matches!(err, FrameError::Decode(_)), "{err:?}");
            let next = reader.read::<ClientMessage>().await.unwrap();
            assert_eq!(next.request_id, 5);
        });
    }

    #[test]
    fn writer_output_is_what_encode_frame_produces() {
        rt().block_on(async {
            let msgs: Vec<ServerMessage> = (0..100)
                .map(|i| {
                    ServerMessage::from(StreamEvent::from(StreamChunk {
                        content: i.to_string(),
                    }))
                    .answering(i)
                })
                .collect();
            let mut expected = Vec::new();
            for msg in &msgs {
                encode_frame(msg, &mut expected).unwrap();
            }
            let mut writer = FrameWriter::new(Vec::new());
            for msg in &msgs {
                writer.queue(msg).await.unwrap();
            }
            writer.flush().await.unwrap();
            assert_eq!(writer.inner, expected);
        });
    }
}
