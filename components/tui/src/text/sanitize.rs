//! Keeping control sequences away from the terminal.
//!
//! Text from a model, a tool or another client can contain escape sequences
//! that would move the cursor, change colours, retitle the window or worse.
//! Everything printed goes through [`sanitize`] first.

/// Columns a tab expands to.
const TAB: &str = "    ";

/// `text` without escape sequences and control characters: newlines stay,
/// tabs become spaces, `\r\n` becomes `\n`, and every other control
/// character (and every ANSI/VT escape sequence) is removed.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\u{1b}' => skip_escape(&mut chars),
            // C1 CSI and OSC introducers start sequences too.
            '\u{9b}' => skip_until_final(&mut chars),
            '\u{9d}' => skip_until_string_end(&mut chars),
            c if c.is_control() => {}
            // Bidirectional overrides can disguise what text says.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_until_final(chars),
        Some(']') | Some('P') | Some('_') | Some('^') | Some('X') => skip_until_string_end(chars),
        // Two-character sequences (ESC c, ESC 7, …) and charset selections.
        Some('(') | Some(')') | Some('*') | Some('+') | Some('#') | Some('%') => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a CSI sequence: parameters and intermediates up to a final byte.
fn skip_until_final(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            // Not a well-formed sequence: stop skipping here.
            return;
        }
    }
}

/// Skips a string sequence (OSC, DCS, …) up to BEL or ST.
fn skip_until_string_end(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(sanitize("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(sanitize("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(sanitize("bell\u{7} nul\0 del\u{7f}"), "bell nul del");
        assert_eq!(sanitize("tab\there"), "tab    here");
        assert_eq!(sanitize("dos\r\nline\rover"), "dos\nline\nover");
        assert_eq!(sanitize("蟹 🦀 é"), "蟹 🦀 é");
        assert_eq!(sanitize("\u{202e}evil"), "evil");
        assert_eq!(sanitize("dangling\u{1b}"), "dangling");
    }
}
