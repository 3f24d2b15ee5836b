//! Property tests: no input makes wrapping, cutting, cleaning or Markdown
//! rendering panic, split a character, or overflow the width.

use crabtalk_tui::{
    Layout, Line, MarkdownStream, Span, Style, Wrap, display_width, markdown, sanitize, truncate,
    wrap,
};
use proptest::prelude::*;
use unicode_segmentation::UnicodeSegmentation;

/// Text mixing ASCII, CJK, emoji (with ZWJ and skin tones), combining marks,
/// controls, escapes and Markdown syntax.
fn text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a",
        "word",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        "蟹",
        "は",
        "海",
        "🦀",
        "👩‍🔬",
        "👍🏽",
        "e\u{301}",
        "\u{200d}",
        "\u{fe0f}",
        "\u{1b}[31m",
        "\u{1b}",
        "\r",
        "\0",
        "*",
        "**",
        "`",
        "```",
        "# ",
        "- ",
        "1. ",
        "| a | b |\n|---|---|\n",
        "> ",
        "[x](y)",
        "~~",
        "\u{202e}",
        "ﷺ",
        "\u{10ffff}",
    ]);
    prop_oneof![
        prop::collection::vec(pieces, 0..60).prop_map(|pieces| pieces.concat()),
        any::<String>(),
    ]
}

/// Non-whitespace graphemes, in order: what wrapping must keep.
fn visible(text: &str) -> Vec<String> {
    text.graphemes(true)
        .filter(|g| !g.chars().all(char::is_whitespace))
        .map(str::to_owned)
        .collect()
}

fn check_lines(lines: &[Line], width: usize) -> Result<(), TestCaseError> {
    for line in lines {
        if line.width() <= width {
            continue;
        }
        // Only a cluster wider than the room left after a prefix may
        // overflow, alone on its line.
        let plain = line.plain();
        let last = plain.graphemes(true).next_back().unwrap_or("");
        let before = &plain[..plain.len() - last.len()];
        prop_assert!(
            display_width(before) < width,
            "{plain:?} is wider than {width}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn truncate_keeps_a_prefix_within_the_width(text in text(), width in 0usize..40) {
        let cut = truncate(&text, width);
        prop_assert!(display_width(&cut) <= width);
        let kept = cut.strip_suffix('…').unwrap_or(&cut);
        prop_assert!(text.starts_with(kept), "{kept:?} is not a prefix of {text:?}");
        // The cut falls between grapheme clusters.
        let boundaries: Vec<usize> = text.grapheme_indices(true).map(|(i, _)| i).chain([text.len()]).collect();
        prop_assert!(boundaries.contains(&kept.len()));
    }

    #[test]
    fn wrapping_keeps_every_visible_cluster_in_order_within_the_width(
        text in text(),
        width in 1usize..50,
        prefix in "[ >•]{0,4}",
    ) {
        let text = sanitize(&text);
        let options = Wrap::words(width).prefixed(Line::plain_text(prefix.clone()));
        let lines = wrap(&[Span::new(text.clone(), Style::PLAIN.bold())], &options);
        if display_width(&prefix) < width {
            check_lines(&lines, width)?;
        }
        let wrapped: String = lines
            .iter()
            .map(|line| line.plain()[prefix.len()..].to_owned())
            .collect::<Vec<_>>()
            .join("\n");
        prop_assert_eq!(visible(&wrapped), visible(&text));
    }

    #[test]
    fn sanitized_text_has_no_control_characters(text in text()) {
        let clean = sanitize(&text);
        prop_assert!(clean.chars().all(|c| c == '\n' || !c.is_control()), "{clean:?}");
    }

    #[test]
    fn markdown_of_any_text_fits_the_width(text in text(), width in 1usize..60) {
        let lines = markdown::render(&text, width);
        if width >= 8 {
            check_lines(&lines, width)?;
        }
        for line in &lines {
            prop_assert!(line.plain().chars().all(|c| !c.is_control()));
        }
    }

    #[test]
    fn streaming_any_text_in_any_pieces_never_panics(
        text in text(),
        cuts in prop::collection::vec(0usize..200, 0..10),
        width in 8usize..60,
        max_live in 1usize..8,
    ) {
        let layout = Layout { width, max_live };
        let mut stream = MarkdownStream::new();
        let chars: Vec<char> = text.chars().collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(chars.len())).collect();
        cuts.push(chars.len());
        cuts.sort_unstable();
        let mut start = 0;
        for cut in cuts {
            let piece: String = chars[start..cut].iter().collect();
            let frame = stream.push(&piece, layout);
            prop_assert!(frame.live.len() <= max_live);
            start = cut;
        }
        stream.finish(layout);
    }
}
