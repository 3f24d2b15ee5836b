//! Session search at 100k and 1M indexed messages (targets: p99 ≤ 5 ms and
//! ≤ 50 ms) and index append cost (target: ≤ 50 µs per message).
//!
//! `cargo bench -p crabtalk-session-index --bench session_search`
//!
//! All messages belong to one agent (the worst case: scoping by agent makes
//! every other agent's conversations free). Conversations are 100 messages of
//! user / tool call / tool result / assistant turns; half have a title, one in
//! ten a summary. Windows (4 before, 4 after) are read from an in-RAM copy of
//! the messages, standing in for a warm page cache. Set
//! `SESSION_BENCH_SIZES=100000` to run one size.

use std::hint::black_box;
use std::ops::Range;
use std::time::{Duration, Instant};

use crabtalk_session_index::{
    ConversationRef, MessageSource, Role, SearchQuery, SessionIndex, SourceMessage,
};
use criterion::Criterion;

use crabtalk_testkit::corpus::{Rng, Zipf, percentiles, rss_mib};

const PER_CONVERSATION: usize = 100;
const QUERIES: usize = 2_000;
const APPENDS: usize = 20_000;

/// Every message's text in one arena.
struct Store {
    text: String,
    /// Byte offset of message `conv * PER_CONVERSATION + idx` (plus an end).
    offsets: Vec<u32>,
}

impl Store {
    fn message(&self, n: usize) -> &str {
        &self.text[self.offsets[n] as usize..self.offsets[n + 1] as usize]
    }
}

fn role(idx: usize) -> Role {
    match idx % 4 {
        0 => Role::User,
        1 => Role::ToolCall,
        2 => Role::ToolResult,
        _ => Role::Assistant,
    }
}

impl MessageSource for Store {
    fn read(
        &self,
        _: &str,
        conversation: &str,
        range: Range<u32>,
    ) -> std::io::Result<Vec<SourceMessage>> {
        // The append measurement's conversations have no stored text.
        let Some(conv) = conversation
            .strip_prefix('c')
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return Ok(Vec::new());
        };
        Ok(range
            .map(|i| SourceMessage {
                msg_idx: i,
                role: role(i as usize),
                text: self
                    .message(conv * PER_CONVERSATION + i as usize)
                    .to_owned(),
                tool_name: matches!(role(i as usize), Role::ToolCall | Role::ToolResult)
                    .then(|| "bash".to_owned()),
            })
            .collect())
    }
}

fn conv_id(c: usize) -> String {
    format!("c{c}")
}

fn build(zipf: &Zipf, messages: usize) -> (SessionIndex, Store) {
    let mut rng = Rng::new(messages as u64);
    let mut store = Store {
        text: String::new(),
        offsets: vec![0],
    };
    let rss_before = rss_mib();
    let index = SessionIndex::new();
    let mut indexing = Duration::ZERO;
    for c in 0..messages / PER_CONVERSATION {
        let id = conv_id(c);
        let conv = ConversationRef {
            agent: "crab",
            sender: if c.is_multiple_of(3) {
                "tg:alice"
            } else {
                "user"
            },
            conversation: &id,
        };
        for i in 0..PER_CONVERSATION {
            let r = role(i);
            let text = match r {
                Role::User => zipf.text(&mut rng, 5, 30),
                _ => zipf.text(&mut rng, 10, 80),
            };
            let tool = matches!(r, Role::ToolCall | Role::ToolResult).then_some("bash");
            let started = Instant::now();
            index.add_message(conv, i as u32, r, &text, tool);
            indexing += started.elapsed();
            store.text.push_str(&text);
            store.offsets.push(store.text.len() as u32);
        }
        if c.is_multiple_of(2) {
            index.set_title(conv, &zipf.text(&mut rng, 3, 8));
        }
        if c.is_multiple_of(10) {
            index.set_summary(conv, Some(&zipf.text(&mut rng, 30, 100)));
        }
    }
    let rss_after = rss_mib();
    let text_mib = store.text.len() as f64 / (1024.0 * 1024.0);
    println!(
        "session_search/{messages}: indexed in {indexing:?} ({:.2} µs/message); RSS +{:.0} MiB, of which {:.0} MiB is the message text copy (not part of the index)",
        indexing.as_secs_f64() * 1e6 / messages as f64,
        rss_after - rss_before,
        text_mib,
    );
    (index, store)
}

fn measure_search(zipf: &Zipf, index: &SessionIndex, store: &Store, messages: usize) {
    for (label, skip) in [("content words", 100), ("any words", 0)] {
        let mut rng = Rng::new(99);
        let queries: Vec<String> = (0..QUERIES).map(|_| zipf.query(&mut rng, skip)).collect();
        let mut samples = Vec::with_capacity(QUERIES);
        let mut hits = 0;
        for (n, q) in queries.iter().enumerate() {
            let query = SearchQuery {
                agent: "crab",
                sender: n.is_multiple_of(4).then_some("tg:alice"),
                query: q,
                context_before: 4,
                context_after: 4,
                limit: 20,
            };
            let started = Instant::now();
            let result = index.search(&query, store).unwrap();
            samples.push(started.elapsed());
            hits += result.len();
            black_box(result);
        }
        let (p50, p99, max) = percentiles(&mut samples);
        println!(
            "session_search/{messages}/{label}: p50 {p50:?}  p99 {p99:?}  max {max:?}  ({QUERIES} queries, {:.1} hits each, window 4+1+4)",
            hits as f64 / QUERIES as f64
        );
    }
}

fn measure_append(zipf: &Zipf, index: &SessionIndex, messages: usize) {
    let mut rng = Rng::new(5);
    let texts: Vec<String> = (0..APPENDS).map(|_| zipf.text(&mut rng, 10, 80)).collect();
    let mut samples = Vec::with_capacity(APPENDS);
    let started_all = Instant::now();
    for (n, text) in texts.iter().enumerate() {
        let id = format!("append-{}", n / PER_CONVERSATION);
        let conv = ConversationRef {
            agent: "crab",
            sender: "user",
            conversation: &id,
        };
        let started = Instant::now();
        index.add_message(conv, (n % PER_CONVERSATION) as u32, role(n), text, None);
        samples.push(started.elapsed());
    }
    let mean = started_all.elapsed() / APPENDS as u32;
    let (p50, p99, max) = percentiles(&mut samples);
    println!(
        "session_append/{messages}: mean {mean:?}  p50 {p50:?}  p99 {p99:?}  max {max:?}  ({APPENDS} appends of 10-80 words)"
    );
}

/// The CPU part of a cold rebuild: every stored message fed to a
/// [`Rebuild`](crabtalk_session_index::Rebuild) (no lock held), then swapped in.
/// Reading and parsing the logs from disk comes on top.
fn measure_rebuild(index: &SessionIndex, store: &Store, messages: usize) {
    let started = Instant::now();
    let mut rebuild = index.start_rebuild();
    for c in 0..messages / PER_CONVERSATION {
        let id = conv_id(c);
        let conv = ConversationRef {
            agent: "crab",
            sender: if c.is_multiple_of(3) {
                "tg:alice"
            } else {
                "user"
            },
            conversation: &id,
        };
        for i in 0..PER_CONVERSATION {
            let r = role(i);
            let tool = matches!(r, Role::ToolCall | Role::ToolResult).then_some("bash");
            rebuild.add_message(
                conv,
                i as u32,
                r,
                store.message(c * PER_CONVERSATION + i),
                tool,
            );
        }
    }
    let stats = rebuild.finish().unwrap();
    let elapsed = started.elapsed();
    println!(
        "session_rebuild/{messages}: {elapsed:?} ({:.2} µs/message, {} messages) from RAM, CPU only",
        elapsed.as_secs_f64() * 1e6 / stats.messages as f64,
        stats.messages
    );
}

fn main() {
    let zipf = Zipf::new();
    let sizes: Vec<usize> = std::env::var("SESSION_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').map(|n| n.trim().parse().unwrap()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000]);
    let mut criterion = Criterion::default().configure_from_args();
    for messages in sizes {
        let (index, store) = build(&zipf, messages);
        measure_search(&zipf, &index, &store, messages);
        measure_append(&zipf, &index, messages);
        let mut rng = Rng::new(3);
        let queries: Vec<String> = (0..512).map(|_| zipf.query(&mut rng, 100)).collect();
        let mut i = 0;
        criterion.bench_function(&format!("session_search/{messages}"), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let query = SearchQuery {
                    agent: "crab",
                    sender: None,
                    query: &queries[i],
                    context_before: 4,
                    context_after: 4,
                    limit: 20,
                };
                black_box(index.search(&query, &store).unwrap())
            })
        });
        measure_rebuild(&index, &store, messages);
    }
    criterion.final_summary();
}
