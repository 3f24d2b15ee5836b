//! Display width, and cutting text to a width on grapheme boundaries.

use std::borrow::Cow;

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// The marker appended to text that was cut.
pub(crate) const ELLIPSIS: &str = "…";

/// How many terminal columns `text` takes (control characters count zero).
pub fn display_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

/// How many columns one grapheme cluster takes: at most two, since a
/// terminal draws a cluster in one or two cells.
pub(crate) fn grapheme_width(grapheme: &str) -> usize {
    if grapheme.chars().all(char::is_control) {
        return 0;
    }
    grapheme.width().min(2)
}

/// `text` cut to at most `max` columns, with `…` when something was cut.
/// Cuts happen between grapheme clusters, never inside a character.
pub fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    if display_width(text) <= max {
        return Cow::Borrowed(text);
    }
    if max == 0 {
        return Cow::Borrowed("");
    }
    let budget = max - 1; // room for the ellipsis
    let mut used = 0;
    let mut end = 0;
    for (start, grapheme) in text.grapheme_indices(true) {
        let width = grapheme_width(grapheme);
        if used + width > budget {
            break;
        }
        used += width;
        end = start + grapheme.len();
    }
    Cow::Owned(format!("{}{ELLIPSIS}", &text[..end]))
}

/// The first line of `text`, and whether there was more after it.
#[cfg(test)]
pub(crate) fn first_line(text: &str) -> (&str, bool) {
    let trimmed = text.trim_matches('\n');
    match trimmed.split_once('\n') {
        Some((first, _)) => (first, true),
        None => (trimmed, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_count_columns_not_bytes() {
        assert_eq!(display_width("crab"), 4);
        assert_eq!(display_width("蟹"), 2);
        assert_eq!(display_width("🦀"), 2);
        assert_eq!(
            display_width("e\u{301}"),
            1,
            "a combining accent takes no column"
        );
        assert_eq!(display_width("👩‍🔬"), 2, "a ZWJ sequence is one cell pair");
        assert_eq!(display_width("a\u{7}b"), 2);
    }

    #[test]
    fn truncate_cuts_on_grapheme_boundaries_with_an_ellipsis() {
        assert_eq!(truncate("hello", 5), "hello");
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("蟹蟹蟹", 4), "蟹…");
        assert_eq!(truncate("蟹蟹蟹", 5), "蟹蟹…");
        assert_eq!(truncate("🦀🦀", 2), "…");
        assert_eq!(truncate("e\u{301}e\u{301}e\u{301}", 2), "e\u{301}…");
        assert_eq!(truncate("anything", 0), "");
    }

    #[test]
    fn first_line_reports_whether_more_follows() {
        assert_eq!(first_line("one\ntwo"), ("one", true));
        assert_eq!(first_line("\none\n"), ("one", false));
        assert_eq!(first_line(""), ("", false));
    }
}
