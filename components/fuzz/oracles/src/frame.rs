//! The frame codec (`crabtalk-proto`'s `codec`): whatever bytes a client or
//! a daemon sends.
//!
//! The first input byte picks the reader's limit and the message type; the
//! rest is the stream. Oracles:
//!
//! - every frame read is decoded, encoded and decoded again to the same
//!   message (compared by its encoding: a `double` may be NaN), through
//!   [`encode_frame`] and a [`FrameReader`] both;
//! - the reader never holds more than twice what the limit lets a frame
//!   announce, nor more than twice what arrived plus one read-ahead: a
//!   header announcing 16 MiB followed by three bytes costs kilobytes;
//! - a frame over the limit is refused as [`FrameError::TooLarge`] and a
//!   stream cut inside a frame as [`FrameError::Truncated`]; nothing else
//!   fails on an in-memory stream.

use crabtalk_proto::codec::{
    FrameError, FrameReader, MAX_FRAME_LEN, READ_AHEAD, decode_payload, encode_frame,
};
use crabtalk_proto::msg::{ClientMessage, ServerMessage};
use prost::Message;

use crate::runtime;

pub fn frame(data: &[u8]) {
    let Some((&pick, stream)) = data.split_first() else {
        return;
    };
    let limit = match pick >> 1 {
        127 => MAX_FRAME_LEN,
        n => usize::from(n) * 16,
    };
    if pick & 1 == 0 {
        read_all::<ClientMessage>(stream, limit);
    } else {
        read_all::<ServerMessage>(stream, limit);
    }
}

fn read_all<M: Message + Default>(stream: &[u8], limit: usize) {
    runtime().block_on(async {
        let mut reader = FrameReader::new(stream);
        reader.set_limit(limit);
        // Vec's growth may double what was asked for.
        let bound = (2 * limit).min(2 * (stream.len() + READ_AHEAD)).max(8);
        loop {
            let read = reader.read::<M>().await;
            assert!(
                reader.reserved() <= bound,
                "the reader holds {} bytes for a {}-byte stream with a {limit}-byte limit",
                reader.reserved(),
                stream.len()
            );
            match read {
                Ok(message) => round_trip(&message).await,
                Err(FrameError::Decode(_)) => {}
                Err(FrameError::TooLarge { len, max }) => {
                    assert!(len > max && max == limit, "{len} refused under {max}");
                    break;
                }
                Err(FrameError::Closed | FrameError::Truncated { .. }) => break,
                Err(FrameError::Io(err)) => panic!("an in-memory stream failed: {err}"),
            }
        }
    });
}

/// decode ∘ encode = id, through both the function and the reader.
async fn round_trip<M: Message + Default>(message: &M) {
    let mut first = Vec::new();
    encode_frame(message, &mut first).expect("a decoded message encodes");
    let again: M = decode_payload(&first[4..]).expect("an encoded message decodes");
    let mut second = Vec::new();
    encode_frame(&again, &mut second).expect("a decoded message encodes");
    assert_eq!(first, second, "decode ∘ encode changed the message");
    let through_reader: M = FrameReader::new(first.as_slice())
        .read()
        .await
        .expect("an encoded frame reads back");
    assert_eq!(
        through_reader.encode_to_vec(),
        first[4..],
        "the reader read another message"
    );
}
