//! What a hook may look at when it adds to a system prompt, and how names
//! are written into the prompt's XML-like blocks.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::agent::AgentDef;

/// What a hook may look at when it contributes to a system prompt.
pub(crate) struct PromptContext<'a> {
    pub agent: &'a AgentDef,
    /// Every agent, for hooks that point to the others (delegation).
    pub agents: &'a BTreeMap<String, Arc<AgentDef>>,
}

/// Escapes a name for an XML attribute (`<skill name="…">`,
/// `<from agent="…">`).
pub(crate) fn escape_attribute(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_names_cannot_close_their_quotes() {
        assert_eq!(
            escape_attribute("a\"b<c>&'d"),
            "a&quot;b&lt;c&gt;&amp;&apos;d"
        );
    }
}
