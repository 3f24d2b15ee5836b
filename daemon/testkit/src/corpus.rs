//! Synthetic text for benches: a Zipf-distributed vocabulary, so a few
//! words are in most documents (like "the") and most words are rare, as in
//! real chat logs. Deterministic: the same seed gives the same text.

use std::time::Duration;

pub const VOCABULARY: usize = 50_000;

/// xorshift64*.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Words drawn with probability proportional to 1 / rank.
pub struct Zipf {
    cumulative: Vec<f64>,
    words: Vec<String>,
}

impl Default for Zipf {
    fn default() -> Self {
        Self::new()
    }
}

impl Zipf {
    pub fn new() -> Self {
        let mut cumulative = Vec::with_capacity(VOCABULARY);
        let mut total = 0.0;
        for rank in 1..=VOCABULARY {
            total += 1.0 / rank as f64;
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        let words = (0..VOCABULARY).map(word).collect();
        Zipf { cumulative, words }
    }

    pub fn rank(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cumulative
            .partition_point(|c| *c < u)
            .min(VOCABULARY - 1)
    }

    pub fn word(&self, rank: usize) -> &str {
        &self.words[rank]
    }

    /// A text of `min..max` words.
    pub fn text(&self, rng: &mut Rng, min: usize, max: usize) -> String {
        let n = min + rng.below((max - min) as u64) as usize;
        let mut out = String::with_capacity(n * 8);
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(self.word(self.rank(rng)));
        }
        out
    }

    /// A query of 1 to 3 words, each drawn from the Zipf distribution but
    /// skipping the `skip` most common words (stop words a person rarely
    /// types on their own).
    pub fn query(&self, rng: &mut Rng, skip: usize) -> String {
        let n = 1 + rng.below(3) as usize;
        let mut words = Vec::with_capacity(n);
        while words.len() < n {
            let rank = self.rank(rng);
            if rank >= skip {
                words.push(self.word(rank));
            }
        }
        words.join(" ")
    }
}

/// A pronounceable word for each rank: syllables in base 20.
fn word(rank: usize) -> String {
    const SYLLABLES: [&str; 20] = [
        "ka", "to", "ri", "mu", "se", "no", "pa", "li", "ve", "do", "gu", "fi", "ha", "zo", "be",
        "ne", "tu", "ra", "mi", "so",
    ];
    let mut n = rank;
    let mut out = String::new();
    loop {
        out.push_str(SYLLABLES[n % 20]);
        n /= 20;
        if n == 0 {
            break;
        }
    }
    out
}

/// p50, p99 and max of `samples`, sorted in place.
pub fn percentiles(samples: &mut [Duration]) -> (Duration, Duration, Duration) {
    samples.sort_unstable();
    let at = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    (at(0.50), at(0.99), samples[samples.len() - 1])
}

/// Resident set size of this process, in MiB (Linux; 0 elsewhere).
pub fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |pages| pages * 4096.0 / (1024.0 * 1024.0))
}
