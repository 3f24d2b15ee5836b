//! Fusing the engines' lists into one, by SearXNG's rule.
//!
//! A result found by several engines, near the top of each, is the one to
//! show first. Each result's score is the sum, over every place it appears
//! (an engine and a rank), of that engine's weight × the number of places
//! it appears at ÷ the rank:
//!
//! ```text
//! score(r) = Σ_{(e, rank) ∈ places(r)}  weight(e) × |places(r)| / rank
//! ```
//!
//! Places are matched by [`normalize`]d URL. An engine that lists one page
//! twice (two spellings of its URL) has one place for it, its best rank:
//! the multiplier counts engines that agree, not an engine repeating
//! itself. A merged result keeps the longest title and snippet and prefers
//! an https URL, shown [`clean`] of its tracking parameters. The order is by
//! score, highest first, then by key, so the same lists always give the
//! same order.

use std::collections::HashMap;

use crate::config::EngineId;
use crate::engine::Hit;

use super::normalize::{clean, normalize};

/// One engine's list, best first.
#[derive(Debug, Clone)]
pub struct EngineList {
    pub engine: EngineId,
    pub weight: f64,
    pub hits: Vec<Hit>,
}

/// Where a result was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub engine: EngineId,
    /// 1-based.
    pub rank: usize,
}

/// A fused result.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub key: String,
    pub url: String,
    pub title: String,
    pub snippet: String,
    pub score: f64,
    /// In the order of the engines' lists.
    pub places: Vec<Place>,
}

/// The fused list of `lists`, best first.
pub fn fuse(lists: &[EngineList]) -> Vec<Fused> {
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut fused: Vec<Fused> = Vec::new();
    let mut weights: Vec<Vec<f64>> = Vec::new();
    for list in lists {
        for (index, hit) in list.hits.iter().enumerate() {
            let Some(key) = normalize(&hit.url) else {
                continue;
            };
            let place = Place {
                engine: list.engine,
                rank: index + 1,
            };
            match by_key.get(&key) {
                Some(&at) => {
                    let merged = &mut fused[at];
                    // The engine's first listing is its best rank.
                    if !merged.places.iter().any(|p| p.engine == list.engine) {
                        merged.places.push(place);
                        weights[at].push(list.weight);
                    }
                    if longer(&hit.title, &merged.title) {
                        merged.title = hit.title.clone();
                    }
                    if longer(&hit.snippet, &merged.snippet) {
                        merged.snippet = hit.snippet.clone();
                    }
                    if !merged.url.starts_with("https:") && hit.url.starts_with("https:") {
                        merged.url = clean(&hit.url);
                    }
                }
                None => {
                    by_key.insert(key.clone(), fused.len());
                    fused.push(Fused {
                        key,
                        url: clean(&hit.url),
                        title: hit.title.clone(),
                        snippet: hit.snippet.clone(),
                        score: 0.0,
                        places: vec![place],
                    });
                    weights.push(vec![list.weight]);
                }
            }
        }
    }
    for (result, weights) in fused.iter_mut().zip(&weights) {
        let count = result.places.len() as f64;
        result.score = result
            .places
            .iter()
            .zip(weights)
            .map(|(place, weight)| weight * count / place.rank as f64)
            .sum();
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.key.cmp(&b.key)));
    fused
}

fn longer(candidate: &str, current: &str) -> bool {
    candidate.chars().count() > current.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str, title: &str, snippet: &str) -> Hit {
        Hit {
            url: url.into(),
            title: title.into(),
            snippet: snippet.into(),
        }
    }

    fn list(engine: EngineId, weight: f64, urls: &[&str]) -> EngineList {
        EngineList {
            engine,
            weight,
            hits: urls.iter().map(|u| hit(u, u, "")).collect(),
        }
    }

    #[test]
    fn scores_follow_the_formula_by_hand() {
        // u1: A#1, C#1       → 2 places: 1×2/1 + 0.5×2/1       = 3
        // u2: A#2, B#1, C#2  → 3 places: 1×3/2 + 2×3/1 + 0.5×3/2 = 8.25
        // u3: A#3            → 1 place:  1×1/3                 = 0.333…
        // u4: B#2            → 1 place:  2×1/2                 = 1
        let lists = [
            list(
                EngineId::DuckDuckGo,
                1.0,
                &["https://u1.org/", "https://u2.org/", "https://u3.org/"],
            ),
            list(EngineId::Bing, 2.0, &["https://u2.org/", "https://u4.org/"]),
            list(
                EngineId::Mojeek,
                0.5,
                &["https://u1.org/", "https://u2.org/"],
            ),
        ];
        let fused = fuse(&lists);
        let scores: Vec<(&str, f64)> = fused.iter().map(|f| (f.key.as_str(), f.score)).collect();
        let expected = [
            ("u2.org", 8.25),
            ("u1.org", 3.0),
            ("u4.org", 1.0),
            ("u3.org", 1.0 / 3.0),
        ];
        assert_eq!(scores.len(), expected.len());
        for ((key, score), (want_key, want)) in scores.iter().zip(expected) {
            assert_eq!(*key, want_key);
            assert!((score - want).abs() < 1e-12, "{key}: {score} != {want}");
        }
        assert_eq!(
            fused[0].places,
            [
                Place {
                    engine: EngineId::DuckDuckGo,
                    rank: 2
                },
                Place {
                    engine: EngineId::Bing,
                    rank: 1
                },
                Place {
                    engine: EngineId::Mojeek,
                    rank: 2
                },
            ]
        );
    }

    #[test]
    fn five_engines_of_twenty_equal_weights_score_as_searxng_does() {
        // With weight 1 the rule is SearXNG's: a result at rank r in k
        // engines scores k × Σ 1/r.
        let urls: Vec<String> = (1..=20).map(|i| format!("https://site{i}.org/")).collect();
        let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
        let lists: Vec<EngineList> = EngineId::ALL[..5]
            .iter()
            .map(|&e| list(e, 1.0, &refs))
            .collect();
        let fused = fuse(&lists);
        assert_eq!(fused.len(), 20);
        assert!((fused[0].score - 25.0).abs() < 1e-12);
        assert!((fused[19].score - 5.0 * 5.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn duplicates_merge_keeping_the_longest_texts_and_https() {
        let lists = [
            EngineList {
                engine: EngineId::Bing,
                weight: 1.0,
                hits: vec![hit(
                    "http://www.example.org/a/?utm_source=bing",
                    "Short",
                    "A longer snippet here",
                )],
            },
            EngineList {
                engine: EngineId::DuckDuckGo,
                weight: 1.0,
                hits: vec![hit(
                    "https://example.org/a#top",
                    "A much longer title",
                    "short",
                )],
            },
        ];
        let fused = fuse(&lists);
        assert_eq!(fused.len(), 1);
        let only = &fused[0];
        assert_eq!(only.url, "https://example.org/a#top");
        // A result only one engine gave with tracking parameters is shown
        // without them.
        let tracked = fuse(&[EngineList {
            engine: EngineId::Bing,
            weight: 1.0,
            hits: vec![hit("https://example.org/b?utm_source=bing&id=2", "B", "")],
        }]);
        assert_eq!(tracked[0].url, "https://example.org/b?id=2");
        assert_eq!(only.title, "A much longer title");
        assert_eq!(only.snippet, "A longer snippet here");
        assert!((only.score - 4.0).abs() < 1e-12);
    }

    #[test]
    fn an_engine_listing_a_page_twice_counts_once() {
        // Bing lists one page at ranks 1 and 3 (two spellings); DuckDuckGo
        // at rank 2. Two engines, two places: 1×2/1 + 1×2/2 = 3.
        let lists = [
            list(
                EngineId::Bing,
                1.0,
                &[
                    "https://example.org/enc/a",
                    "https://other.org/",
                    "https://example.org/enc/%61?UTM_SOURCE=x",
                ],
            ),
            list(
                EngineId::DuckDuckGo,
                1.0,
                &["https://third.org/", "https://example.org/enc/a/"],
            ),
        ];
        let fused = fuse(&lists);
        let page = fused.iter().find(|f| f.key == "example.org/enc/a").unwrap();
        assert_eq!(
            page.places,
            [
                Place {
                    engine: EngineId::Bing,
                    rank: 1
                },
                Place {
                    engine: EngineId::DuckDuckGo,
                    rank: 2
                },
            ]
        );
        assert!((page.score - 3.0).abs() < 1e-12, "{}", page.score);
        assert_eq!(fused.len(), 3);
    }

    #[test]
    fn identical_input_gives_identical_order_and_ties_go_by_url() {
        let lists = [
            list(
                EngineId::DuckDuckGo,
                1.0,
                &["https://b.org/", "https://z.org/"],
            ),
            list(EngineId::Bing, 1.0, &["https://a.org/", "https://y.org/"]),
        ];
        let first = fuse(&lists);
        for _ in 0..20 {
            assert_eq!(fuse(&lists), first);
        }
        let order: Vec<&str> = first.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(order, ["a.org", "b.org", "y.org", "z.org"]);
    }
}
