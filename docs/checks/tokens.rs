//! Rust source read as far as the import checks need it: comments and
//! string or character literals blanked out (lines kept where they were),
//! then identifiers, `::` and single punctuation characters, each with its
//! line. Not a Rust lexer: numbers come out as identifiers and punctuation,
//! which no check looks at.

/// `source` with every comment and string or character literal replaced by
/// spaces, lines kept where they were.
pub fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        // Line comment.
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
            continue;
        }
        // Block comment, nested.
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            continue;
        }
        let after_ident = i > 0 && ident(chars[i - 1]);
        // Raw string: r"…", r#"…"#, br"…".
        if !after_ident && (c == 'r' || (c == 'b' && next == Some('r'))) {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while chars.get(start + hashes) == Some(&'#') {
                hashes += 1;
            }
            if chars.get(start + hashes) == Some(&'"') {
                let mut j = start + hashes + 1;
                loop {
                    if j >= chars.len() {
                        break;
                    }
                    if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                for &skipped in &chars[i..j.min(chars.len())] {
                    out.push(blank(skipped));
                }
                i = j;
                continue;
            }
        }
        // String.
        if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
            continue;
        }
        // Character literal (a lifetime or a label stays).
        if c == '\'' {
            let end = if next == Some('\\') {
                (i + 2..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for &skipped in &chars[i..=end] {
                    out.push(blank(skipped));
                }
                i = end + 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// One token of code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// The tokens of code (comments and literals already blanked by
/// [`code_only`]), each with its 1-based line.
pub fn tokens(code: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<(String, usize)> {
        tokens(&code_only(source))
            .into_iter()
            .filter_map(|(token, line)| match token {
                Token::Ident(name) => Some((name, line)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_and_literals_are_blanked_and_lines_kept() {
        let source = r####"a // b
/* c /* nested */ d */ e
"f \" g" 'h' '\n' r#"i "j""# br"k" l
fn m<'n>() {}
"####;
        let found: Vec<(String, usize)> = idents(source);
        assert_eq!(
            found,
            [
                ("a".to_owned(), 1),
                ("e".to_owned(), 2),
                ("l".to_owned(), 3),
                ("fn".to_owned(), 4),
                ("m".to_owned(), 4),
                ("n".to_owned(), 4),
            ]
        );
    }

    #[test]
    fn path_separators_are_one_token() {
        assert_eq!(
            tokens("a::b:c"),
            [
                (Token::Ident("a".into()), 1),
                (Token::PathSep, 1),
                (Token::Ident("b".into()), 1),
                (Token::Punct(':'), 1),
                (Token::Ident("c".into()), 1),
            ]
        );
    }
}
