//! Memory recall at 10k entries (target: p99 ≤ 1 ms).
//!
//! `cargo bench -p crabtalk-memory --bench memory_recall`
//!
//! Prints p50/p99/max over individually timed queries, then runs the
//! criterion group for the mean.

use std::hint::black_box;
use std::time::Instant;

use crabtalk_memory::{Entry, EntryKind, Memory, format};
use criterion::Criterion;

use crabtalk_testkit::corpus::{Rng, Zipf, percentiles};

const ENTRIES: usize = 10_000;
const QUERIES: usize = 5_000;

fn build(zipf: &Zipf, dir: &std::path::Path) -> Memory {
    let mut rng = Rng::new(7);
    let entries: Vec<Entry> = (0..ENTRIES)
        .map(|i| Entry {
            id: i as u64 + 1,
            name: format!("note-{i}-{}", zipf.word(zipf.rank(&mut rng))),
            content: zipf.text(&mut rng, 20, 200),
            aliases: (0..rng.below(3))
                .map(|a| format!("alias-{i}-{a}"))
                .collect(),
            created_at: 1_776_000_000 + i as u64,
            kind: if i.is_multiple_of(5) {
                EntryKind::Archive
            } else {
                EntryKind::Note
            },
        })
        .collect();
    // One file write instead of 10k fsync'd ops: the bench measures recall.
    let path = dir.join("bench.crmem");
    std::fs::write(&path, format::encode(ENTRIES as u64 + 1, entries.iter())).unwrap();
    let started = Instant::now();
    let memory = Memory::open(&path).unwrap();
    println!(
        "memory_recall: opened {ENTRIES} entries ({} KiB file) and built the index in {:?}",
        std::fs::metadata(&path).unwrap().len() / 1024,
        started.elapsed()
    );
    memory
}

fn main() {
    let zipf = Zipf::new();
    let dir = tempfile::tempdir().unwrap();
    let memory = build(&zipf, dir.path());

    for (label, skip) in [("content words", 100), ("any words", 0)] {
        let mut rng = Rng::new(11);
        let queries: Vec<String> = (0..QUERIES).map(|_| zipf.query(&mut rng, skip)).collect();
        let mut samples = Vec::with_capacity(QUERIES);
        for q in &queries {
            let started = Instant::now();
            black_box(memory.search(q, 10));
            samples.push(started.elapsed());
        }
        let (p50, p99, max) = percentiles(&mut samples);
        println!(
            "memory_recall/10k/{label}: p50 {p50:?}  p99 {p99:?}  max {max:?}  ({QUERIES} queries, limit 10)"
        );
    }

    let mut criterion = Criterion::default().configure_from_args();
    let mut rng = Rng::new(13);
    let queries: Vec<String> = (0..1024).map(|_| zipf.query(&mut rng, 100)).collect();
    let mut i = 0;
    criterion.bench_function("memory_recall/10k", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(memory.search(&queries[i], 10))
        })
    });
    criterion.final_summary();
}
