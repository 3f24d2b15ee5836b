//! Tab completion: slash commands, skills (`/name`), and agent names after
//! `/agent` and `/guest`.

use crate::slash_commands::COMMANDS;

/// What Tab can complete, learnt from the daemon.
#[derive(Debug, Default, Clone)]
pub(crate) struct Completer {
    pub skills: Vec<String>,
    pub agents: Vec<String>,
}

/// The candidates for the word at `range` of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completion {
    pub range: std::ops::Range<usize>,
    pub candidates: Vec<String>,
}

impl Completion {
    /// What replaces the word: the only candidate, or the candidates'
    /// longest common prefix.
    pub(crate) fn replacement(&self) -> String {
        match self.candidates.as_slice() {
            [only] => only.clone(),
            many => common_prefix(many),
        }
    }
}

impl Completer {
    /// Completions for the word under `cursor` (a byte offset) in `text`.
    pub(crate) fn complete(&self, text: &str, cursor: usize) -> Option<Completion> {
        if !text.starts_with('/') || !text.is_char_boundary(cursor) {
            return None;
        }
        let first_end = text.find(char::is_whitespace).unwrap_or(text.len());
        if cursor <= first_end {
            let word = &text[..cursor];
            let mut candidates: Vec<String> = COMMANDS
                .iter()
                .map(|command| format!("/{}", command.name))
                .chain(self.skills.iter().map(|skill| format!("/{skill}")))
                .filter(|candidate| candidate.starts_with(word))
                .collect();
            candidates.sort();
            candidates.dedup();
            return (!candidates.is_empty()).then_some(Completion {
                range: 0..first_end,
                candidates,
            });
        }
        let command = &text[..first_end];
        if command != "/agent" && command != "/guest" {
            return None;
        }
        let rest = &text[first_end..];
        let arg_start = first_end + (rest.len() - rest.trim_start().len());
        let arg_end = text[arg_start..]
            .find(char::is_whitespace)
            .map_or(text.len(), |end| arg_start + end);
        if cursor < arg_start || cursor > arg_end {
            return None;
        }
        let word = &text[arg_start..cursor];
        let mut candidates: Vec<String> = self
            .agents
            .iter()
            .filter(|agent| agent.starts_with(word))
            .cloned()
            .collect();
        candidates.sort();
        (!candidates.is_empty()).then_some(Completion {
            range: arg_start..arg_end,
            candidates,
        })
    }
}

fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut end = first.len();
    for word in &words[1..] {
        end = first
            .char_indices()
            .zip(word.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((index, c), _)| index + c.len_utf8())
            .min(end);
    }
    first[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completer() -> Completer {
        Completer {
            skills: vec!["commit".into(), "compose".into()],
            agents: vec!["crab".into(), "ranger".into(), "researcher".into()],
        }
    }

    #[test]
    fn commands_and_skills_complete_after_a_slash() {
        let c = completer().complete("/he", 3).unwrap();
        assert_eq!(c.candidates, ["/help"]);
        assert_eq!(c.replacement(), "/help");
        let c = completer().complete("/com", 4).unwrap();
        assert_eq!(c.candidates, ["/commit", "/compact", "/compose"]);
        assert_eq!(c.replacement(), "/com");
        assert!(completer().complete("hello /he", 9).is_none());
        assert!(completer().complete("/zzz", 4).is_none());
    }

    #[test]
    fn agent_names_complete_after_agent_and_guest() {
        let c = completer().complete("/agent r", 8).unwrap();
        assert_eq!(c.range, 7..8);
        assert_eq!(c.candidates, ["ranger", "researcher"]);
        assert_eq!(c.replacement(), "r");
        let c = completer().complete("/guest cr hello", 9).unwrap();
        assert_eq!(c.candidates, ["crab"]);
        assert!(completer().complete("/model r", 8).is_none());
    }

    #[test]
    fn common_prefixes_respect_characters() {
        assert_eq!(common_prefix(&["蟹a".into(), "蟹b".into()]), "蟹");
        assert_eq!(common_prefix(&["abc".into(), "x".into()]), "");
    }
}
