//! `$CRABTALK_HOME/env`: `KEY=value` lines (provider keys) for services.
//!
//! systemd units load it with `EnvironmentFile=-`; the process backend
//! loads it here, with the same rules: blank lines and `#` comments are
//! skipped, an optional `export ` prefix is allowed, and a value wrapped in
//! matching single or double quotes is unwrapped.

use std::path::Path;

/// The variables of an env file; a missing file has none.
pub fn read(path: &Path) -> std::io::Result<Vec<(String, String)>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse(&text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}

/// The variables of an env file's text; malformed lines are skipped.
pub fn parse(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let (key, value) = line.split_once('=')?;
            let key = key.trim();
            let valid = !key.is_empty()
                && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !key.as_bytes()[0].is_ascii_digit();
            if !valid {
                return None;
            }
            let value = value.trim();
            let value = ['"', '\'']
                .iter()
                .find_map(|&q| value.strip_prefix(q).and_then(|v| v.strip_suffix(q)))
                .unwrap_or(value);
            Some((key.to_owned(), value.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_assignments_and_skips_the_rest() {
        let vars = parse(
            "# keys\nOPENAI_API_KEY=sk-1\n\nexport B=\"two words\"\nC='x=y'\nnot a line\n9X=bad\n",
        );
        assert_eq!(
            vars,
            [
                ("OPENAI_API_KEY".to_owned(), "sk-1".to_owned()),
                ("B".to_owned(), "two words".to_owned()),
                ("C".to_owned(), "x=y".to_owned()),
            ]
        );
        assert!(
            read(Path::new("/definitely/missing/env"))
                .unwrap()
                .is_empty()
        );
    }
}
