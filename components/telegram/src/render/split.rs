//! Cutting rendered [`Piece`]s into messages of at most `limit` UTF-16
//! units of visible text.
//!
//! First the cut points are chosen on the visible text alone: as late as
//! the limit allows, at the last blank line, else line break, else space
//! before it, else between two characters (never inside one, so never
//! inside a surrogate pair). Then the pieces are written out, part by
//! part: text is escaped as it is written (so no `&amp;` is ever cut), a
//! tag is written only once text follows it (no empty tags), and at a cut
//! every open tag is closed and opened again at the start of the next
//! part.

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
    let cuts = cut_points(&text, limit);
    Writer::new(cuts).write(pieces)
}

/// Byte offsets in `text` where a new part starts.
fn cut_points(text: &str, limit: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut start = 0;
    let mut remaining = units(text);
    loop {
        let rest = &text[start..];
        if remaining <= limit {
            return cuts;
        }
        // The longest prefix of `rest` within the limit.
        let mut used = 0;
        let mut end = 0;
        for (at, c) in rest.char_indices() {
            if used + c.len_utf16() > limit {
                break;
            }
            used += c.len_utf16();
            end = at + c.len_utf8();
        }
        let window = &rest[..end];
        // Not too early: a cut in the first third wastes a message.
        let floor = window.len() / 3;
        let at = [
            window.rfind("\n\n").map(|i| i + 2),
            window.rfind('\n').map(|i| i + 1),
            window.rfind([' ', '\t']).map(|i| i + 1),
        ]
        .into_iter()
        .flatten()
        .find(|at| *at > floor && *at < window.len() + 1)
        .unwrap_or(end);
        let at = if at == 0 {
            end.max(first_char_len(rest))
        } else {
            at
        };
        remaining -= units(&rest[..at]);
        start += at;
        cuts.push(start);
    }
}

fn first_char_len(text: &str) -> usize {
    text.chars().next().map_or(1, char::len_utf8)
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
    fn paragraphs_are_preferred_cut_points() {
        let para = format!("{}\n\n", "word ".repeat(500));
        let parts = render(&para.repeat(3));
        assert!(parts.len() >= 2);
        assert!(
            parts[0].text.ends_with("\n\n"),
            "{:?}",
            &parts[0].text[parts[0].text.len() - 10..]
        );
    }
}
