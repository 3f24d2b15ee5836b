//! "Did you mean …?": the known word closest to a typo.
//!
//! Used wherever a person types a name crabtalk must know — a config key,
//! a provider kind, a program name for `crabup` — so a typo gets the right
//! word back instead of a bare "unknown".
//!
//! ```
//! use crabtalk_kit::closest;
//! assert_eq!(closest("deamon", &["daemon", "cron"]), Some("daemon"));
//! assert_eq!(closest("colour", &["daemon", "cron"]), None);
//! ```

/// The known key closest to `unknown` by edit distance, if it is close
/// enough to be a likely typo.
pub fn closest<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|candidate| (edit_distance(unknown, candidate), *candidate))
        .filter(|(distance, candidate)| {
            *distance <= (candidate.chars().count().max(unknown.chars().count()) / 3).max(1)
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Edit distance in characters, where swapping two neighbours counts as
/// one edit (the optimal-string-alignment distance): `tpc` is one edit
/// from `tcp`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: the distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word() {
        assert_eq!(closest("deamon", &["daemon", "search"]), Some("daemon"));
        assert_eq!(closest("serch", &["daemon", "search"]), Some("search"));
        assert_eq!(closest("tpc", &["tcp", "token"]), Some("tcp"));
        assert_eq!(closest("telegrma", &["telegram", "tui"]), Some("telegram"));
        assert_eq!(closest("x", &["daemon", "search"]), None);
    }
}
