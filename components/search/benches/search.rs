//! Fusion of five engines' lists of twenty (target ≤ 1 ms) and a cache hit
//! through `Web::search` (target ≤ 100 µs): the key, the lookup and the
//! copy of the answer the caller gets.
//!
//! `cargo bench -p crabtalk-search --bench search`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use crabtalk_search::{
    Cached, EngineId, EngineList, EngineReport, FoundBy, Hit, ResultItem, SearchAnswer,
    SearchConfig, SearchRequest, Settings, Status, Web, fuse,
};
use criterion::Criterion;

/// Five engines, twenty results each, half of them shared with the
/// neighbouring engine, URLs spelled differently (www., tracking, slash).
fn lists() -> Vec<EngineList> {
    EngineId::ALL[..5]
        .iter()
        .enumerate()
        .map(|(e, &engine)| EngineList {
            engine,
            weight: 1.0 + e as f64 * 0.25,
            hits: (0..20)
                .map(|i| {
                    let site = if i % 2 == 0 { i + e * 2 } else { i + e * 40 };
                    Hit {
                        url: match e % 3 {
                            0 => format!("https://www.site{site}.example/page/{i}/?utm_source=e{e}"),
                            1 => format!("http://site{site}.example/page/{i}"),
                            _ => format!("https://site{site}.example/page/{i}/#top"),
                        },
                        title: format!("Result {i} about crabs and their sideways walk, from engine {e}"),
                        snippet: "Crabs walk sideways because of the way their legs bend; most live in the sea. ".repeat(2),
                    }
                })
                .collect(),
        })
        .collect()
}

fn answer() -> SearchAnswer {
    SearchAnswer {
        query: "crabs sideways".into(),
        results: (0..10)
            .map(|i| ResultItem {
                title: format!("Result {i} about crabs and their sideways walk"),
                url: format!("https://site{i}.example/page/{i}"),
                snippet:
                    "Crabs walk sideways because of the way their legs bend; most live in the sea. "
                        .repeat(2),
                score: 10.0 / (i + 1) as f64,
                engines: EngineId::ALL[..4]
                    .iter()
                    .map(|e| FoundBy {
                        engine: e.name().into(),
                        rank: i + 1,
                    })
                    .collect(),
            })
            .collect(),
        engines: EngineId::ALL
            .iter()
            .map(|e| EngineReport {
                engine: e.name().into(),
                status: Status::Ok,
                results: Some(20),
                ms: Some(312),
                detail: None,
                suspended_until: None,
            })
            .collect(),
        cached: false,
        cached_secs: None,
        note: None,
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let lists = lists();
    criterion.bench_function("fuse 5 engines x 20 results", |b| {
        b.iter(|| fuse(black_box(&lists)))
    });

    let home = tempfile::tempdir().unwrap();
    let web = Web::new(
        &crabtalk_home::Home::new(home.path()),
        Settings::resolve(&SearchConfig::default(), |_| None),
    );
    let request = SearchRequest {
        query: "Crabs  sideways".into(),
        count: 10,
        lang: None,
        region: None,
        engines: None,
    };
    let answer = answer();
    let size = serde_json::to_vec(&answer).unwrap().len();
    web.cache().insert(
        request.cache_key(),
        Cached::Search(Arc::new(answer)),
        size,
        Instant::now(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hit = runtime.block_on(web.search(&request));
    assert!(hit.cached, "the bench must measure a hit");
    criterion.bench_function("cache hit through Web::search", |b| {
        b.to_async(&runtime)
            .iter(|| web.search(black_box(&request)))
    });
    criterion.final_summary();
}
