//! Cutting rendered [`Piece`]s into messages of at most `limit` UTF-16
//! units of visible text.
//!
//! First the cut points are chosen on the visible text alone, only ever
//! between two grapheme clusters (never inside 🇩🇪, 👍🏽 or 👨‍👩‍👧, so never
//! inside a character or a surrogate pair either; only a single cluster
//! longer than the limit is cut between its characters). A reply takes as
//! few messages as it can: the fewest that fit when every message is
//! filled to the limit. Within that, each cut is as pleasant as the count
//! allows — the last blank line, else line break, else space in the second
//! half of the message — and otherwise as late as the limit allows. Then
//! the pieces are written out, part by part: text is escaped as it is
//! written (so no `&amp;` is ever cut), a tag is written only once text
//! follows it (no empty tags), and at a cut every open tag is closed and
//! opened again at the start of the next part.

use unicode_segmentation::UnicodeSegmentation;

use super::{Part, Piece, Tag, escape, units};

/// The pieces as messages; no message is empty.
pub fn split(pieces: &[Piece], limit: usize) -> Vec<Part> {
    let text: String = pieces
        .iter()
        .filter_map(|piece| match piece {
            Piece::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if text.is_empty() {
        return Vec::new();
    }
    let cuts = Cuts::new(&text, limit.max(2)).points();
    Writer::new(cuts).write(pieces)
}

/// Where `text` may be cut: every grapheme cluster boundary, with the
/// UTF-16 units before it.
struct Cuts<'a> {
    text: &'a str,
    limit: usize,
    /// `(byte offset, units before it)`, from 0 to the end of the text.
    bounds: Vec<(usize, usize)>,
}

impl<'a> Cuts<'a> {
    fn new(text: &'a str, limit: usize) -> Self {
        let mut bounds = Vec::with_capacity(text.len() / 2 + 1);
        let mut before = 0;
        for (at, cluster) in text.grapheme_indices(true) {
            let size = units(cluster);
            if size > limit {
                // A cluster no message can hold: between its characters.
                for (inner, c) in cluster.char_indices() {
                    bounds.push((at + inner, before));
                    before += c.len_utf16();
                }
            } else {
                bounds.push((at, before));
                before += size;
            }
        }
        bounds.push((text.len(), before));
        Self {
            text,
            limit,
            bounds,
        }
    }

    fn total(&self) -> usize {
        self.bounds.last().map_or(0, |b| b.1)
    }

    /// The last boundary a message starting at boundary `from` can reach.
    fn reach(&self, from: usize) -> usize {
        let most = self.bounds[from].1 + self.limit;
        let last = self.bounds.partition_point(|b| b.1 <= most) - 1;
        last.max(from + 1).min(self.bounds.len() - 1)
    }

    /// The fewest messages the text from boundary `from` on takes.
    fn fewest(&self, mut from: usize) -> usize {
        let mut parts = 1;
        while self.total() - self.bounds[from].1 > self.limit {
            from = self.reach(from);
            parts += 1;
        }
        parts
    }

    /// Byte offsets where a new part starts.
    fn points(&self) -> Vec<usize> {
        let mut cuts = Vec::new();
        let mut from = 0;
        while self.total() - self.bounds[from].1 > self.limit {
            let end = self.reach(from);
            let fewest = self.fewest(from);
            // Not in the first half: a short message wastes room.
            let floor = self.bounds[from].1 + (self.bounds[end].1 - self.bounds[from].1) / 2;
            let fits = |at: usize| at > from && self.fewest(at) < fewest;
            let before = |at: usize| &self.text[..self.bounds[at].0];
            let latest = |kind: &dyn Fn(&str) -> bool| {
                (from + 1..=end)
                    .rev()
                    .take_while(|at| self.bounds[*at].1 > floor)
                    .find(|at| kind(before(*at)))
            };
            let at = [
                latest(&|t: &str| t.ends_with("\n\n")),
                latest(&|t: &str| t.ends_with('\n')),
                latest(&|t: &str| t.ends_with([' ', '\t'])),
            ]
            .into_iter()
            .flatten()
            .find(|at| fits(*at))
            .unwrap_or(end);
            cuts.push(self.bounds[at].0);
            from = at;
        }
        cuts
    }
}

/// Writes pieces out as parts, cutting at the visible-text offsets.
struct Writer {
    cuts: std::vec::IntoIter<usize>,
    next_cut: Option<usize>,
    /// Visible bytes written so far.
    offset: usize,
    /// Open tags, and whether each is written in the current part.
    stack: Vec<(Tag, bool)>,
    parts: Vec<Part>,
    html: String,
    text: String,
}

impl Writer {
    fn new(cuts: Vec<usize>) -> Self {
        let mut cuts = cuts.into_iter();
        let next_cut = cuts.next();
        Self {
            cuts,
            next_cut,
            offset: 0,
            stack: Vec::new(),
            parts: Vec::new(),
            html: String::new(),
            text: String::new(),
        }
    }

    fn write(mut self, pieces: &[Piece]) -> Vec<Part> {
        for piece in pieces {
            match piece {
                Piece::Open(tag) => self.stack.push((tag.clone(), false)),
                Piece::Close => {
                    if let Some((tag, written)) = self.stack.pop()
                        && written
                    {
                        self.html.push_str(tag.close());
                    }
                }
                Piece::Text(text) => self.text_piece(text),
            }
        }
        self.finish_part();
        self.parts
    }

    fn text_piece(&mut self, mut text: &str) {
        while !text.is_empty() {
            let room = self
                .next_cut
                .map_or(text.len(), |cut| cut.saturating_sub(self.offset));
            if room == 0 {
                self.finish_part();
                self.next_cut = self.cuts.next();
                continue;
            }
            let take = room.min(text.len());
            let (now, later) = text.split_at(take);
            self.open_pending();
            self.html.push_str(&escape(now));
            self.text.push_str(now);
            self.offset += now.len();
            text = later;
        }
    }

    /// Writes the tags not yet written in this part.
    fn open_pending(&mut self) {
        for (tag, written) in &mut self.stack {
            if !*written {
                self.html.push_str(&tag.open());
                *written = true;
            }
        }
    }

    /// Closes what is open and ends the part.
    fn finish_part(&mut self) {
        for (tag, written) in self.stack.iter_mut().rev() {
            if *written {
                self.html.push_str(tag.close());
                *written = false;
            }
        }
        if !self.text.is_empty() {
            self.parts.push(Part {
                html: std::mem::take(&mut self.html),
                text: std::mem::take(&mut self.text),
            });
        } else {
            self.html.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{LIMIT, render};

    #[test]
    fn short_text_is_one_part() {
        let parts = render("hello *there*");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].html, "hello <i>there</i>");
    }

    #[test]
    fn tags_open_at_a_cut_are_closed_and_opened_again() {
        let pieces = vec![
            Piece::Open(Tag::Bold),
            Piece::Text("aaaa bbbb".into()),
            Piece::Close,
        ];
        let parts = split(&pieces, 6);
        assert_eq!(
            parts.iter().map(|p| p.html.as_str()).collect::<Vec<_>>(),
            ["<b>aaaa </b>", "<b>bbbb</b>"]
        );
    }

    #[test]
    fn surrogate_pairs_are_never_cut_and_units_are_utf16() {
        let text = "😀".repeat(3000);
        let parts = render(&text);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| crate::render::units(&p.text) <= LIMIT));
        assert_eq!(parts[0].text.chars().count(), 2048);
        assert_eq!(
            parts.iter().map(|p| p.text.as_str()).collect::<String>(),
            text
        );
    }

    #[test]
    fn emoji_clusters_are_never_cut() {
        for cluster in ["🇩🇪", "👍🏽", "👨‍👩‍👧", "x\u{301}"] {
            // One letter first, so the limit falls inside a cluster.
            let text = format!("y{}", cluster.repeat(9000 / units(cluster)));
            let parts = render(&text);
            assert!(parts.len() >= 2, "{cluster}");
            for part in &parts {
                assert!(units(&part.text) <= LIMIT, "{cluster}");
                assert_eq!(
                    part.text.trim_start_matches('y').replace(cluster, ""),
                    "",
                    "{cluster}: a part that starts or ends inside a cluster"
                );
            }
            assert_eq!(
                parts.iter().map(|p| p.text.as_str()).collect::<String>(),
                text
            );
            // As full as whole clusters allow.
            assert!(units(&parts[0].text) > LIMIT - units(cluster), "{cluster}");
        }
    }

    #[test]
    fn a_long_reply_takes_as_few_messages_as_fit() {
        // Ten paragraphs of 1,502 units: 15,018 in all, which fit in four
        // messages; cutting at the last blank line of each message would
        // take five.
        let paragraph = format!("{}.\n\n", "word ".repeat(300).trim_end());
        assert_eq!(units(&paragraph), 1502);
        let text = paragraph.repeat(10);
        let parts = render(text.trim_end());
        assert_eq!(
            parts.len(),
            4,
            "{:?}",
            parts.iter().map(|p| units(&p.text)).collect::<Vec<_>>()
        );
        for part in &parts[..3] {
            assert!(units(&part.text) > LIMIT / 2);
            // Still between words.
            assert!(
                part.text.ends_with([' ', '\n']),
                "{:?}",
                &part.text[part.text.len() - 5..]
            );
        }
    }

    #[test]
    fn a_single_cluster_longer_than_the_limit_is_cut_between_its_characters() {
        let zalgo = format!("a{}", "\u{301}".repeat(5000));
        let parts = render(&zalgo);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| units(&p.text) <= LIMIT));
    }

    #[test]
    fn paragraphs_are_preferred_cut_points_where_the_count_allows() {
        // Four paragraphs of 1,502 units: two messages either way, so the
        // cut is at the blank line in the second half of the first.
        let para = format!("{}\n\n", "word ".repeat(300));
        let parts = render(&para.repeat(4));
        assert_eq!(parts.len(), 2);
        assert!(units(&parts[0].text) > LIMIT / 2);
        assert!(
            parts[0].text.ends_with("\n\n"),
            "{:?}",
            &parts[0].text[parts[0].text.len() - 10..]
        );
    }
}
