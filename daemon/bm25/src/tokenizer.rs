//! Text to terms: the one tokenizer every index and every query goes through,
//! so a word is found exactly when it was indexed the same way.
//!
//! - Words are runs of Unicode letters and digits (`char::is_alphanumeric`),
//!   lowercased with full Unicode case mapping. Everything else separates.
//! - Scripts written without spaces (Han, Hiragana, Katakana, and the CJK
//!   blocks around them) would otherwise make a whole sentence one "word". Each
//!   such character is a term on its own, and so is each pair of neighbouring
//!   ones: `会议记录` gives `会 议 记 录 会议 议记 记录`. A one-character query
//!   still matches, and a query of several characters scores higher on text
//!   that has them next to each other.
//! - A term is at most [`MAX_TERM_BYTES`] bytes (cut on a character
//!   boundary), so hostile text cannot blow up the term dictionary with one
//!   huge "word". Queries are cut the same way, so cut terms still match.

use std::ops::Range;

/// The longest term kept, in bytes of UTF-8.
pub const MAX_TERM_BYTES: usize = 64;

/// One term and where in the text it came from (byte range of the source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub term: String,
    pub span: Range<usize>,
}

/// The terms of `text`, in order, with repeats.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |term, _| out.push(term.to_owned()));
    out
}

/// The terms of `text` with their byte spans, in order, with repeats.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token(text, |term, span| {
        out.push(Token {
            term: term.to_owned(),
            span,
        })
    });
    out
}

/// Calls `emit(term, span)` for every term of `text`, reusing one buffer.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str, Range<usize>)) {
    let mut word = String::new();
    let mut word_start = None::<usize>;
    // The previous character of an unbroken run of CJK characters.
    let mut prev_cjk = None::<(char, usize)>;
    let mut pair = String::new();

    for (at, ch) in text.char_indices() {
        if is_cjk(ch) {
            if let Some(start) = word_start.take() {
                emit_word(&mut word, start..at, &mut emit);
            }
            let end = at + ch.len_utf8();
            let mut single = [0u8; 4];
            emit(ch.encode_utf8(&mut single), at..end);
            if let Some((prev, prev_at)) = prev_cjk {
                pair.clear();
                pair.push(prev);
                pair.push(ch);
                emit(&pair, prev_at..end);
            }
            prev_cjk = Some((ch, at));
            continue;
        }
        prev_cjk = None;
        if ch.is_ascii() {
            // Most text is ASCII: skip the Unicode tables.
            if ch.is_ascii_alphanumeric() {
                word_start.get_or_insert(at);
                word.push(ch.to_ascii_lowercase());
            } else if let Some(start) = word_start.take() {
                emit_word(&mut word, start..at, &mut emit);
            }
        } else if ch.is_alphanumeric() {
            word_start.get_or_insert(at);
            word.extend(ch.to_lowercase());
        } else if let Some(start) = word_start.take() {
            emit_word(&mut word, start..at, &mut emit);
        }
    }
    if let Some(start) = word_start {
        emit_word(&mut word, start..text.len(), &mut emit);
    }
}

fn emit_word(word: &mut String, span: Range<usize>, emit: &mut impl FnMut(&str, Range<usize>)) {
    if word.len() > MAX_TERM_BYTES {
        let mut cut = MAX_TERM_BYTES;
        while !word.is_char_boundary(cut) {
            cut -= 1;
        }
        word.truncate(cut);
    }
    emit(word, span);
    word.clear();
}

/// Characters of scripts that do not separate words with spaces.
fn is_cjk(ch: char) -> bool {
    matches!(ch as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3100..=0x312F    // Bopomofo
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x323AF  // CJK extensions B to H
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_non_alphanumerics_and_lowercases() {
        assert_eq!(
            terms("Deploy the API-server, v2! ÉCOLE straße"),
            ["deploy", "the", "api", "server", "v2", "école", "straße"]
        );
    }

    #[test]
    fn cjk_gives_characters_and_neighbour_pairs() {
        assert_eq!(
            terms("会议记录 ok"),
            ["会", "议", "会议", "记", "议记", "录", "记录", "ok"]
        );
        // A CJK run next to a Latin word splits it without a space.
        assert_eq!(terms("rust语言"), ["rust", "语", "言", "语言"]);
    }

    #[test]
    fn spans_point_at_the_source_text() {
        let text = "Ünïcode 会议 done";
        for token in tokens(text) {
            let source = &text[token.span.clone()];
            assert!(terms(source).contains(&token.term), "{token:?}");
        }
    }

    #[test]
    fn long_words_are_cut_on_a_char_boundary() {
        let long = "é".repeat(100);
        let got = terms(&long);
        assert_eq!(got.len(), 1);
        assert!(got[0].len() <= MAX_TERM_BYTES);
        assert_eq!(got[0], "é".repeat(MAX_TERM_BYTES / 2));
    }

    #[test]
    fn empty_and_punctuation_only_text_has_no_terms() {
        assert!(terms("").is_empty());
        assert!(terms(" -- !! \n\t").is_empty());
    }
}
