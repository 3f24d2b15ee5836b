//! `crabtalk-bm25`: BM25 ranking over an inverted index, shared by memory
//! recall (`crabtalk-memory`) and session search (`crabtalk-session-index`).
//!
//! An [`Index`] maps each term to a posting list of `(document, term
//! frequency)` and keeps, per document, its length and the terms it contains.
//! A query walks only the posting lists of its own terms; removing a document
//! walks only the posting lists of that document's terms. Nothing here knows
//! what a document is: callers choose the key type (memory uses entry ids,
//! session search its own message slots) and the text.
//!
//! The score of document `d` for query `q` is
//!
//! ```text
//! score(d, q) = Σ over distinct terms t of q that occur in d:
//!     idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
//! idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))        (Lucene)
//! ```
//!
//! with `k1` = 1.2, `b` = 0.75, `N` the number of documents, `df(t)` the number
//! of documents containing `t`, `|d|` the number of terms in `d` and `avgdl`
//! the mean of `|d|`. A term repeated in the query counts once. Equal scores
//! are ordered by key, ascending, so results never depend on hash order.
//!
//! ```
//! use crabtalk_bm25::Index;
//!
//! let mut index = Index::new();
//! index.insert(1u64, "ship the release on friday");
//! index.insert(2u64, "the cat sat");
//! let hits = index.search("release", 10, |_| Some(1.0));
//! assert_eq!(hits[0].doc, 1);
//! ```

pub mod tokenizer;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

pub use tokenizer::{MAX_TERM_BYTES, Token, terms, tokens};

/// Term-frequency saturation.
pub const K1: f64 = 1.2;
/// Length normalisation.
pub const B: f64 = 0.75;

/// One ranked document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored<K> {
    pub doc: K,
    pub score: f64,
}

/// An inverted BM25 index over documents keyed by `K`.
#[derive(Debug, Clone)]
pub struct Index<K> {
    term_ids: HashMap<TermKey, u32, FastHash>,
    /// Posting lists by term id, each sorted by document key.
    postings: Vec<Vec<Posting<K>>>,
    docs: HashMap<K, Doc, FastHash>,
    /// Sum of all document lengths, for `avgdl`.
    total_len: u64,
}

#[derive(Debug, Clone, Copy)]
struct Posting<K> {
    doc: K,
    tf: u32,
    /// The document's length, copied here so scoring needs no lookup.
    len: u32,
}

#[derive(Debug, Clone)]
struct Doc {
    len: u32,
    /// The distinct terms of the document: what removal has to visit.
    terms: Box<[u32]>,
}

impl<K: Copy + Ord + Hash> Default for Index<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Ord + Hash> Index<K> {
    pub fn new() -> Self {
        Self {
            term_ids: HashMap::default(),
            postings: Vec::new(),
            docs: HashMap::default(),
            total_len: 0,
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn contains(&self, doc: K) -> bool {
        self.docs.contains_key(&doc)
    }

    /// Indexes `text` as document `doc`, replacing what `doc` held before.
    /// A document without terms is still counted (it has length 0).
    pub fn insert(&mut self, doc: K, text: &str) {
        self.remove(doc);
        // Term ids in text order, then sorted: runs of equal ids are the
        // term frequencies (cheaper than a map for a message's few dozen
        // terms).
        let mut ids: Vec<u32> = Vec::new();
        tokenizer::for_each_token(text, |term, _| ids.push(self.term_id(term)));
        let len = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        ids.sort_unstable();
        let mut terms: Vec<u32> = Vec::with_capacity(ids.len());
        let mut at = 0;
        while at < ids.len() {
            let term = ids[at];
            let run = ids[at..].iter().take_while(|&&id| id == term).count();
            at += run;
            terms.push(term);
            let tf = u32::try_from(run).unwrap_or(u32::MAX);
            let list = &mut self.postings[term as usize];
            // Keys usually arrive in increasing order: append is the fast path.
            match list.last() {
                Some(last) if last.doc > doc => {
                    let at = list.partition_point(|p| p.doc < doc);
                    list.insert(at, Posting { doc, tf, len });
                }
                _ => list.push(Posting { doc, tf, len }),
            }
        }
        self.total_len += u64::from(len);
        self.docs.insert(
            doc,
            Doc {
                len,
                terms: terms.into_boxed_slice(),
            },
        );
    }

    /// Removes `doc`; touches only the posting lists of its own terms.
    /// Returns whether it was there.
    pub fn remove(&mut self, doc: K) -> bool {
        let Some(old) = self.docs.remove(&doc) else {
            return false;
        };
        self.total_len -= u64::from(old.len);
        for &term in old.terms.iter() {
            let list = &mut self.postings[term as usize];
            if let Ok(at) = list.binary_search_by(|p| p.doc.cmp(&doc)) {
                list.remove(at);
            }
        }
        true
    }

    /// Inverse document frequency of `term` (already a term, not text), or
    /// `None` when no document has it.
    pub fn idf(&self, term: &str) -> Option<f64> {
        let id = *self.term_ids.get(term)?;
        let df = self.postings[id as usize].len();
        (df > 0).then(|| self.idf_for(df))
    }

    /// The `limit` best documents for `query`. `weight(doc)` multiplies a
    /// document's score before the cut; `None` leaves the document out (a
    /// filter). Best first; equal scores by key, ascending.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        mut weight: impl FnMut(K) -> Option<f64>,
    ) -> Vec<Scored<K>> {
        if limit == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        let mut scores: HashMap<K, f64, FastHash> = HashMap::default();
        self.accumulate(query, |doc, score| {
            *scores.entry(doc).or_insert(0.0) += score;
        });
        let mut ranked: Vec<Scored<K>> = scores
            .into_iter()
            .filter_map(|(doc, score)| {
                weight(doc).map(|w| Scored {
                    doc,
                    score: score * w,
                })
            })
            .collect();
        top(&mut ranked, limit);
        ranked
    }

    /// Calls `add(doc, partial_score)` for each (query term, document) pair:
    /// a document's BM25 score is the sum of its partial scores. Terms are
    /// visited in a fixed order so sums are reproducible.
    pub fn accumulate(&self, query: &str, mut add: impl FnMut(K, f64)) {
        let mut query_terms: Vec<u32> = Vec::new();
        tokenizer::for_each_token(query, |term, _| {
            if let Some(&id) = self.term_ids.get(term) {
                query_terms.push(id);
            }
        });
        query_terms.sort_unstable();
        query_terms.dedup();
        let avgdl = self.total_len as f64 / self.docs.len().max(1) as f64;
        for term in query_terms {
            let list = &self.postings[term as usize];
            if list.is_empty() {
                continue;
            }
            let idf = self.idf_for(list.len());
            for posting in list {
                add(
                    posting.doc,
                    idf * saturation(posting.tf, posting.len, avgdl),
                );
            }
        }
    }

    fn idf_for(&self, df: usize) -> f64 {
        let n = self.docs.len() as f64;
        let df = df as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(term) {
            return id;
        }
        let id = u32::try_from(self.postings.len()).expect("fewer than 2^32 distinct terms");
        self.postings.push(Vec::new());
        self.term_ids.insert(TermKey::new(term), id);
        id
    }
}

impl Index<u32> {
    /// [`search`](Index::search) for dense `u32` keys (slots handed out
    /// from 0): partial scores are summed in a reusable per-thread array
    /// instead of a hash map, several times faster when query terms have
    /// long posting lists. Same results, same order.
    pub fn search_dense(
        &self,
        query: &str,
        limit: usize,
        mut weight: impl FnMut(u32) -> Option<f64>,
    ) -> Vec<Scored<u32>> {
        thread_local! {
            static SCRATCH: std::cell::RefCell<(Vec<f64>, Vec<u32>)> =
                const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
        }
        if limit == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        SCRATCH.with(|scratch| {
            let (scores, touched) = &mut *scratch.borrow_mut();
            self.accumulate(query, |doc, score| {
                let at = doc as usize;
                if at >= scores.len() {
                    scores.resize(at + 1, 0.0);
                }
                // Partial scores are always > 0: 0 means "not seen yet".
                if scores[at] == 0.0 {
                    touched.push(doc);
                }
                scores[at] += score;
            });
            let mut ranked = Vec::with_capacity(touched.len().min(4096));
            for &doc in touched.iter() {
                let score = std::mem::take(&mut scores[doc as usize]);
                if let Some(w) = weight(doc) {
                    ranked.push(Scored {
                        doc,
                        score: score * w,
                    });
                }
            }
            touched.clear();
            top(&mut ranked, limit);
            ranked
        })
    }
}

/// The term-frequency part of BM25 for one posting.
fn saturation(tf: u32, len: u32, avgdl: f64) -> f64 {
    let tf = f64::from(tf);
    let norm = if avgdl > 0.0 {
        1.0 - B + B * f64::from(len) / avgdl
    } else {
        1.0
    };
    tf * (K1 + 1.0) / (tf + K1 * norm)
}

/// Keeps the `limit` best of `ranked`, sorted best first, ties by key.
pub fn top<K: Ord + Copy>(ranked: &mut Vec<Scored<K>>, limit: usize) {
    let order =
        |a: &Scored<K>, b: &Scored<K>| b.score.total_cmp(&a.score).then_with(|| a.doc.cmp(&b.doc));
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(order);
}

/// FxHash (the rustc hasher): integer and short-string keys hash in a few
/// instructions. The keys here are ours, not an attacker's choice of
/// collisions worth defending against.
/// A term as a key of the term dictionary. Short terms — nearly every word —
/// are stored in the table itself, so a lookup compares bytes it has already
/// loaded instead of following a pointer to the heap: that pointer chase was
/// the largest single cost of indexing (a cache miss per word).
#[derive(Clone)]
enum TermKey {
    Inline { len: u8, bytes: [u8; INLINE_TERM] },
    Heap(Box<str>),
}

/// Longest term stored inline (the key is then 24 bytes, like a `String`).
const INLINE_TERM: usize = 22;

impl TermKey {
    fn new(term: &str) -> Self {
        if term.len() > INLINE_TERM {
            return Self::Heap(term.into());
        }
        let mut bytes = [0u8; INLINE_TERM];
        bytes[..term.len()].copy_from_slice(term.as_bytes());
        Self::Inline {
            len: term.len() as u8,
            bytes,
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // SAFETY: `bytes[..len]` was copied from a `&str` in `new`, so it
            // is valid UTF-8.
            Self::Inline { len, bytes } => unsafe {
                std::str::from_utf8_unchecked(&bytes[..usize::from(*len)])
            },
            Self::Heap(term) => term,
        }
    }
}

impl std::borrow::Borrow<str> for TermKey {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for TermKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TermKey {}

impl Hash for TermKey {
    // The same hash as the `str` it stands for, as `Borrow` requires.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl std::fmt::Debug for TermKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

type FastHash = BuildHasherDefault<FxHasher>;

#[derive(Default, Clone, Copy)]
struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the best-mixed bits at the top; the hash table
        // picks buckets with the low bits. Rotate them down (as rustc-hash 2
        // does), or similar strings pile up in the same buckets.
        self.hash.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(index: &Index<u64>, query: &str) -> Vec<u64> {
        index
            .search(query, 100, |_| Some(1.0))
            .iter()
            .map(|s| s.doc)
            .collect()
    }

    #[test]
    fn terms_stored_inline_and_on_the_heap_are_both_found() {
        let mut index = Index::new();
        let inline = "a".repeat(INLINE_TERM);
        let heap = "b".repeat(INLINE_TERM + 1);
        index.insert(1u64, &format!("{inline} {heap} 会议"));
        index.insert(2u64, &format!("{inline}a {heap}"));
        assert_eq!(docs(&index, &inline), [1]);
        let mut both = docs(&index, &heap);
        both.sort_unstable();
        assert_eq!(both, [1, 2]);
        assert_eq!(docs(&index, "议"), [1]);
        assert!(index.idf(&format!("{inline}a")).is_some());
    }

    #[test]
    fn single_document_score_matches_the_formula() {
        let mut index = Index::new();
        index.insert(7u64, "alpha beta alpha");
        // N = 1, df = 1: idf = ln(1 + 0.5 / 1.5); |d| = avgdl = 3, so the
        // length norm is 1 and tf = 2: 2 · 2.2 / (2 + 1.2).
        let expected = (1.0f64 + 0.5 / 1.5).ln() * (2.0 * 2.2 / 3.2);
        let hits = index.search("alpha", 10, |_| Some(1.0));
        assert_eq!(hits.len(), 1);
        assert!((hits[0].score - expected).abs() < 1e-12);
    }

    #[test]
    fn equal_scores_are_ordered_by_key() {
        let mut index = Index::new();
        for doc in [9u64, 3, 5, 1] {
            index.insert(doc, "same words here");
        }
        assert_eq!(docs(&index, "words"), [1, 3, 5, 9]);
    }

    #[test]
    fn removal_forgets_the_document_and_its_length() {
        let mut index = Index::new();
        index.insert(1u64, "red green");
        index.insert(2u64, "green blue blue blue");
        let before = index.search("green", 10, |_| Some(1.0));
        index.insert(3u64, "yellow");
        assert!(index.remove(3));
        assert!(!index.remove(3));
        assert_eq!(index.search("green", 10, |_| Some(1.0)), before);
        assert!(index.remove(2));
        assert_eq!(docs(&index, "blue"), Vec::<u64>::new());
        assert_eq!(docs(&index, "green"), [1]);
        assert_eq!(index.total_len, 2);
    }

    #[test]
    fn insert_replaces_a_document() {
        let mut index = Index::new();
        index.insert(1u64, "old text");
        index.insert(1u64, "new words");
        assert_eq!(index.len(), 1);
        assert!(docs(&index, "old").is_empty());
        assert_eq!(docs(&index, "new"), [1]);
    }

    #[test]
    fn out_of_order_keys_keep_posting_lists_sorted() {
        let mut index = Index::new();
        for doc in [5u64, 1, 9, 3] {
            index.insert(doc, "term");
        }
        let keys: Vec<u64> = index.postings[0].iter().map(|p| p.doc).collect();
        assert_eq!(keys, [1, 3, 5, 9]);
        index.remove(3);
        let keys: Vec<u64> = index.postings[0].iter().map(|p| p.doc).collect();
        assert_eq!(keys, [1, 5, 9]);
    }

    #[test]
    fn weights_apply_before_the_cut_and_none_filters() {
        let mut index = Index::new();
        index.insert(1u64, "apple apple apple");
        index.insert(2u64, "apple pie");
        index.insert(3u64, "apple tart");
        let plain = index.search("apple", 1, |_| Some(1.0));
        assert_eq!(plain[0].doc, 1);
        let boosted = index.search("apple", 1, |doc| Some(if doc == 3 { 5.0 } else { 1.0 }));
        assert_eq!(boosted[0].doc, 3);
        let filtered = index.search("apple", 10, |doc| (doc != 1).then_some(1.0));
        assert_eq!(filtered.iter().map(|s| s.doc).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn dense_search_matches_hashed_search() {
        let mut index: Index<u32> = Index::new();
        let words = ["a", "b", "c", "d", "e"];
        for doc in 0..300u32 {
            let text: Vec<&str> = (0..(doc % 7 + 1))
                .map(|i| words[((doc * 31 + i * 17) % 5) as usize])
                .collect();
            index.insert(doc, &text.join(" "));
        }
        index.remove(10);
        for query in ["a", "b c", "e e d", "zzz", "a b c d e"] {
            for limit in [1, 5, 50, 1000] {
                let weight =
                    |doc: u32| (!doc.is_multiple_of(11)).then_some(1.0 + f64::from(doc % 3));
                assert_eq!(
                    index.search(query, limit, weight),
                    index.search_dense(query, limit, weight),
                    "{query} {limit}"
                );
            }
        }
    }

    #[test]
    fn repeated_query_terms_count_once() {
        let mut index = Index::new();
        index.insert(1u64, "alpha beta");
        index.insert(2u64, "gamma");
        let once = index.search("alpha", 10, |_| Some(1.0));
        let twice = index.search("alpha ALPHA alpha", 10, |_| Some(1.0));
        assert_eq!(once, twice);
    }
}
