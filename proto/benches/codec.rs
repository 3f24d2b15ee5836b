//! Frame codec throughput at 0 B, 1 KiB, 100 KiB and 1 MiB payloads.
//!
//! `cargo bench -p crabtalk-proto --bench codec`

use std::hint::black_box;

use crabtalk_proto::codec::{FrameReader, decode_payload, encode_frame};
use crabtalk_proto::msg::{ServerMessage, StreamChunk, StreamEvent};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const SIZES: [(&str, usize); 4] = [
    ("0B", 0),
    ("1KiB", 1024),
    ("100KiB", 100 * 1024),
    ("1MiB", 1024 * 1024),
];

fn message(size: usize) -> ServerMessage {
    ServerMessage::from(StreamEvent::from(StreamChunk {
        content: "a".repeat(size),
    }))
    .answering(7)
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("codec");
    for (name, size) in SIZES {
        let msg = message(size);
        let mut frame = Vec::new();
        encode_frame(&msg, &mut frame).unwrap();
        group.throughput(Throughput::Bytes(frame.len() as u64));

        let mut out = Vec::with_capacity(frame.len());
        group.bench_with_input(BenchmarkId::new("encode", name), &msg, |b, msg| {
            b.iter(|| {
                out.clear();
                encode_frame(black_box(msg), &mut out).unwrap();
            })
        });

        group.bench_with_input(BenchmarkId::new("decode", name), &frame, |b, frame| {
            b.iter(|| decode_payload::<ServerMessage>(black_box(&frame[4..])).unwrap())
        });

        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        group.bench_with_input(BenchmarkId::new("read", name), &frame, |b, frame| {
            b.iter(|| {
                runtime.block_on(async {
                    let mut reader = FrameReader::new(black_box(frame.as_slice()));
                    reader.read::<ServerMessage>().await.unwrap()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
