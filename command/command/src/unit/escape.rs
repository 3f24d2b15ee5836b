//! Escaping for every format a unit is written in.
//!
//! Each function turns one raw value into an [`Escaped`] one for one kind of
//! place in one format, or refuses it with a [`Refusal`] that says why. A
//! template field has the type [`Escaped`], which only these functions
//! create, so a value cannot reach a unit without passing through one.
//!
//! The rules, by format:
//!
//! - XML (launchd plists, Task Scheduler XML): `& < > " '` become entities;
//!   tab, newline and carriage return become character references so they
//!   survive XML's newline normalisation; other control characters cannot be
//!   written in XML 1.0 at all and are refused.
//! - systemd: every value is subject to specifier expansion, so `%` becomes
//!   `%%`. `ExecStart=` words and `Environment=` assignments are written in
//!   double quotes with C escapes (`\\`, `\"`, `\n`, `\xNN`); `ExecStart=`
//!   also expands `$VAR` in arguments, so `$` becomes `$$` there (and only
//!   there); its program path cannot hold quotes, backslashes or control
//!   characters at all, so those are refused. Path
//!   settings (`WorkingDirectory=`, `StandardOutput=append:`,
//!   `EnvironmentFile=`) take the rest of the line verbatim, with no quoting,
//!   so they must be absolute and free of control characters, and must not
//!   end in whitespace or a backslash (the line would be trimmed or
//!   continued).
//! - `cmd.exe` (the Task Scheduler action): values are written in double
//!   quotes, inside which `& | < > ^ ( )` are literal. A double quote cannot
//!   be escaped there, and `%` would be expanded by both Task Scheduler and
//!   `cmd.exe`, so values holding either (or any control character) are
//!   refused; neither can appear in a Windows file name anyway, except `%`.

use std::fmt;

/// A value already escaped for the place it is rendered in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escaped(String);

impl Escaped {
    /// A value that needs no escaping because the renderer produced it
    /// (numbers, durations, fixed words).
    pub(crate) fn literal(value: impl fmt::Display) -> Self {
        Self(value.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Escaped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a value cannot be written in a place.
pub type Refusal = String;

/// Text content or an attribute value in XML.
pub fn xml(value: &str) -> Result<Escaped, Refusal> {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if c.is_control() && (c as u32) < 0x20 => {
                return Err(format!(
                    "it contains the control character U+{:04X}, which XML cannot hold",
                    c as u32
                ));
            }
            '\u{FFFE}' | '\u{FFFF}' => {
                return Err(format!(
                    "it contains U+{:04X}, which XML cannot hold",
                    c as u32
                ));
            }
            c => out.push(c),
        }
    }
    Ok(Escaped(out))
}

/// Free text in a systemd unit (`Description=`): specifiers escaped,
/// control characters refused (a newline would end the setting).
pub fn systemd_text(value: &str) -> Result<Escaped, Refusal> {
    refuse_control(value)?;
    if value.ends_with('\\') {
        return Err("it ends in a backslash, which would continue the line".into());
    }
    Ok(Escaped(value.trim().replace('%', "%%")))
}

/// A path in a systemd setting that takes the rest of the line verbatim.
pub fn systemd_path(value: &str) -> Result<Escaped, Refusal> {
    refuse_control(value)?;
    if !value.starts_with('/') {
        return Err("systemd needs an absolute path".into());
    }
    if value.ends_with(char::is_whitespace) || value.ends_with('\\') {
        return Err(
            "it ends in whitespace or a backslash, which systemd would trim or treat as a line continuation"
                .into(),
        );
    }
    Ok(Escaped(value.replace('%', "%%")))
}

/// The program of an `ExecStart=` command line, quoted. systemd expands
/// specifiers in it but not `$VAR`, and refuses quotes, backslashes and
/// control characters in an executable's path.
pub fn systemd_exec_program(value: &str) -> Result<Escaped, Refusal> {
    if let Some(c) = value
        .chars()
        .find(|&c| c == '"' || c == '\\' || c == '\'' || c.is_control())
    {
        return Err(format!(
            "systemd refuses {c:?} in the path of the program it runs"
        ));
    }
    if !value.starts_with('/') {
        return Err("systemd needs an absolute path".into());
    }
    Ok(Escaped(format!("\"{}\"", value.replace('%', "%%"))))
}

/// One argument of an `ExecStart=` command line, quoted.
pub fn systemd_exec_word(value: &str) -> Escaped {
    let mut out = String::from("\"");
    push_c_escaped(&mut out, value, true);
    out.push('"');
    Escaped(out)
}

/// An `Environment=` assignment, quoted as one word.
pub fn systemd_environment(key: &str, value: &str) -> Result<Escaped, Refusal> {
    if key.is_empty()
        || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        || key.as_bytes()[0].is_ascii_digit()
    {
        return Err(format!("{key:?} is not a valid environment variable name"));
    }
    let mut out = String::from("\"");
    out.push_str(key);
    out.push('=');
    push_c_escaped(&mut out, value, false);
    out.push('"');
    Ok(Escaped(out))
}

/// C-style escapes inside systemd double quotes, plus `%%` (and `$$` in
/// command lines, where systemd expands variables).
fn push_c_escaped(out: &mut String, value: &str, command_line: bool) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '%' => out.push_str("%%"),
            '$' if command_line => out.push_str("$$"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            c => out.push(c),
        }
    }
}

/// One double-quoted word of a `cmd.exe` command line.
pub fn cmd_word(value: &str) -> Result<String, Refusal> {
    if let Some(c) = value
        .chars()
        .find(|&c| c == '"' || c == '%' || c.is_control())
    {
        let what = match c {
            '"' => "a double quote, which cmd.exe cannot escape inside quotes".to_owned(),
            '%' => "'%', which Task Scheduler and cmd.exe would expand as a variable".to_owned(),
            c => format!("the control character U+{:04X}", c as u32),
        };
        return Err(format!("it contains {what}"));
    }
    Ok(format!("\"{value}\""))
}

fn refuse_control(value: &str) -> Result<(), Refusal> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "it contains the control character U+{:04X}, which cannot be written on one line",
            c as u32
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_keeps_whitespace_exact() {
        assert_eq!(
            xml("a & <b> \"c\" 'd'\n\te").unwrap().as_str(),
            "a &amp; &lt;b&gt; &quot;c&quot; &apos;d&apos;&#10;&#9;e"
        );
        assert!(xml("bell\u{7}").is_err());
        assert!(xml("nul\0").is_err());
        assert_eq!(xml("100% $HOME ü").unwrap().as_str(), "100% $HOME ü");
    }

    #[test]
    fn systemd_exec_words_escape_quotes_specifiers_and_variables() {
        assert_eq!(
            systemd_exec_word("a \"b\" \\c %h $X\nz").as_str(),
            "\"a \\\"b\\\" \\\\c %%h $$X\\nz\""
        );
        assert_eq!(systemd_exec_word("\u{1}").as_str(), "\"\\x01\"");
        assert_eq!(
            systemd_exec_program("/a b/50%/$X").unwrap().as_str(),
            "\"/a b/50%%/$X\""
        );
        for bad in ["/a\"b", "/a\\b", "/a'b", "/a\nb", "rel"] {
            assert!(systemd_exec_program(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn systemd_environment_keeps_dollars_but_escapes_specifiers() {
        assert_eq!(
            systemd_environment("PATH", "/a b:$HOME/%u")
                .unwrap()
                .as_str(),
            "\"PATH=/a b:$HOME/%%u\""
        );
        assert!(systemd_environment("A-B", "x").is_err());
        assert!(systemd_environment("1A", "x").is_err());
    }

    #[test]
    fn systemd_paths_must_be_absolute_and_single_line() {
        assert_eq!(
            systemd_path("/h/50% off/x").unwrap().as_str(),
            "/h/50%% off/x"
        );
        assert!(systemd_path("relative").is_err());
        assert!(systemd_path("/a\nb").is_err());
        assert!(systemd_path("/a ").is_err());
        assert!(systemd_path("/a\\").is_err());
    }

    #[test]
    fn cmd_words_refuse_what_cmd_cannot_carry() {
        assert_eq!(cmd_word(r"C:\a & b (x)^").unwrap(), "\"C:\\a & b (x)^\"");
        for bad in ["a\"b", "50%", "a\nb"] {
            assert!(cmd_word(bad).is_err(), "{bad:?} accepted");
        }
    }
}
