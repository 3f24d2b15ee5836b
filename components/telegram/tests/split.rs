//! The splitter, as a property: any Markdown up to 20,000 characters
//! (CJK, emoji, nested formatting, code blocks, links, lists, quotes)
//! becomes messages of at most 4096 UTF-16 units each, each valid in
//! Telegram's HTML subset as the fake Bot API reads it (written
//! independently of the renderer), whose texts together are the whole
//! rendered text.

use crabtalk_fake_bot_api::html;
use crabtalk_telegram::render::{LIMIT, pieces, render, split, units};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "the",
    "gateway",
    "streams",
    "replies",
    "telegram",
    "message",
    "a",
    "of",
    "in",
    "limit",
    "😀",
    "👨‍👩‍👧",
    "a&b<c>\"d\"",
    "**bold**",
    "_it_",
    "***both***",
    "~~gone~~",
    "`co<de>`",
    "[link](https://example.com/?a=1&b=2)",
    "**bold _nested `code`_**",
    "&amp;",
    "漢字",
    "かな",
    "한국어",
    "カタカナ",
    "中文字符",
    "👍🏽",
    "x\u{301}",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(WORDS).prop_map(str::to_owned),
        1 => prop::collection::vec(prop::char::range('\u{4e00}', '\u{4fff}'), 1..8)
            .prop_map(|chars| chars.into_iter().collect()),
    ]
}

fn code_line() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(&b"abc<>&{}();= x"[..]), 0..40)
        .prop_map(|bytes| bytes.into_iter().map(char::from).collect())
}

fn block() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(word(), 1..120).prop_map(|w| w.join(" ")),
        1 => prop::collection::vec(code_line(), 1..80)
            .prop_map(|lines| format!("```rust\n{}\n```", lines.join("\n"))),
        1 => prop::collection::vec(word(), 1..30).prop_map(|w| format!("> {}", w.join(" "))),
        1 => prop::collection::vec(word(), 1..10).prop_map(|w| w.iter().map(|x| format!("- {x}")).collect::<Vec<_>>().join("\n")),
        1 => prop::collection::vec(word(), 1..6).prop_map(|w| format!("# {}", w.join(" "))),
        1 => Just("| a | b |\n|---|---|\n| 漢 | 😀 |".to_string()),
    ]
}

fn document() -> impl Strategy<Value = String> {
    prop::collection::vec(block(), 1..200).prop_map(|blocks| {
        let mut text = blocks.join("\n\n");
        if text.chars().count() > 20_000 {
            text = text.chars().take(20_000).collect();
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn parts_fit_parse_and_add_up_to_the_whole(text in document()) {
        let pieces = pieces(&text);
        let whole: String = pieces.iter().filter_map(|p| match p {
            crabtalk_telegram::render::Piece::Text(t) => Some(t.as_str()),
            _ => None,
        }).collect();
        let parts = render(&text);
        let mut joined = String::new();
        for part in &parts {
            let parsed = html::parse(&part.html).map_err(|e| TestCaseError::fail(format!("{e}\n{}", part.html)))?;
            prop_assert!(parsed.units() <= LIMIT, "{} units", parsed.units());
            prop_assert!(!parsed.text.is_empty());
            prop_assert_eq!(&parsed.text, &part.text);
            joined.push_str(&parsed.text);
        }
        prop_assert_eq!(joined, whole);
    }

    #[test]
    fn small_limits_cut_between_characters_and_reopen_tags(text in document(), limit in 1usize..200) {
        let pieces = pieces(&text);
        let whole: String = pieces.iter().filter_map(|p| match p {
            crabtalk_telegram::render::Piece::Text(t) => Some(t.as_str()),
            _ => None,
        }).collect();
        let parts = split(&pieces, limit.max(2));
        let mut joined = String::new();
        for part in &parts {
            let parsed = html::parse(&part.html).map_err(|e| TestCaseError::fail(format!("{e}\n{}", part.html)))?;
            prop_assert!(units(&parsed.text) <= limit.max(2));
            joined.push_str(&parsed.text);
        }
        prop_assert_eq!(joined, whole);
    }
}
