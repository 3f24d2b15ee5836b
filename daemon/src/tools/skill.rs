//! `skill`: load a skill's instructions by name (RFC 0004), and `/name rest`
//! slash commands that do the same before a message enters the history.
//!
//! Resolution: the agent's skill scope first, then a guard against anything
//! path-like, then a fresh read from disk (so an edited skill is used at
//! once); when nothing matches exactly, a fuzzy list of what does.

use serde::Deserialize;

use super::scope::Scope;
use crate::config::agent::AgentDef;
use crate::hook::{
    Hook, PromptContext, ToolContext, ToolFuture, ToolOutput, ToolSpec, escape_attribute,
    parse_arguments,
};
use crate::skills::{SkillDirs, SkillEntry, is_valid_name};
use crate::storage::ToolCallRecord;

/// The `skill` tool and slash commands.
pub(crate) struct SkillHook {
    dirs: SkillDirs,
}

#[derive(Deserialize)]
struct Arguments {
    #[serde(default)]
    name: String,
}

impl SkillHook {
    pub(crate) fn new(dirs: SkillDirs) -> Self {
        Self { dirs }
    }

    /// The skills `agent` may use.
    fn available(&self, agent: &AgentDef) -> Vec<SkillEntry> {
        let scope = Scope::of(agent);
        self.dirs
            .discover()
            .skills
            .into_iter()
            .filter(|skill| scope.allows_skill(&skill.name))
            .collect()
    }

    /// The skill as the model receives it.
    fn render(name: &str, body: &str) -> String {
        format!(
            "<skill name=\"{}\">\n{body}\n</skill>",
            escape_attribute(name)
        )
    }

    fn invoke(&self, agent: &AgentDef, name: &str) -> ToolOutput {
        let name = name.trim().trim_start_matches('/');
        let available = self.available(agent);
        if name.is_empty() {
            return ToolOutput::ok(listing(&available, "Skills you can load"));
        }
        if !Scope::of(agent).allows_skill(name) {
            return ToolOutput::error(format!(
                "skill {name:?} is outside this agent's scope; allowed skills: {}",
                agent.config.skills.join(", ")
            ));
        }
        if !is_valid_name(name) {
            return ToolOutput::error(format!(
                "{name:?} is not a skill name (no paths); pass just the name"
            ));
        }
        match self.dirs.load(name) {
            Some(Ok(skill)) => ToolOutput::ok(Self::render(&skill.name, &skill.body)),
            Some(Err(problem)) => ToolOutput::error(problem.to_string()),
            None => {
                let needle = name.to_lowercase();
                let close: Vec<SkillEntry> = available
                    .iter()
                    .filter(|s| {
                        s.name.to_lowercase().contains(&needle)
                            || s.description.to_lowercase().contains(&needle)
                    })
                    .cloned()
                    .collect();
                let (list, heading) = if close.is_empty() {
                    (available, "No skill matches; skills you can load")
                } else {
                    (close, "No skill has that exact name; close matches")
                };
                ToolOutput::error(format!(
                    "no skill named {name:?}. {}",
                    listing(&list, heading)
                ))
            }
        }
    }
}

fn listing(skills: &[SkillEntry], heading: &str) -> String {
    if skills.is_empty() {
        return "No skills are available.".into();
    }
    let mut text = format!("{heading}:\n");
    for skill in skills {
        text.push_str(&format!("- {}: {}\n", skill.name, skill.description));
    }
    text
}

impl Hook for SkillHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "skill".into(),
            description: "Load a skill by name: returns its instructions, which you then follow. \
                Call with an empty name to list the skills you can use."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The skill's name, or empty to list them."}},
                "required": ["name"]
            }),
        }]
    }

    fn offers(&self, agent: &AgentDef, _: &str) -> bool {
        !self.available(agent).is_empty()
    }

    /// The skill tool is offered while the agent has a skill to load.
    fn stamp(&self, agent: &AgentDef) -> u64 {
        u64::from(self.offers(agent, "skill"))
    }

    fn system_prompt(&self, context: &PromptContext<'_>) -> Option<String> {
        let available = self.available(context.agent);
        if available.is_empty() {
            return None;
        }
        let mut text = String::from(
            "<skills>\nSkills hold instructions for particular jobs. Load one with the skill tool when a task matches it.\n",
        );
        for skill in &available {
            text.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
        text.push_str("</skills>");
        Some(text)
    }

    /// `/name rest` → the skill's instructions, then `rest`. Anything that is
    /// not a known skill in scope is left as it is.
    fn preprocess(&self, agent: &AgentDef, content: &str) -> Option<String> {
        let command = content.strip_prefix('/')?;
        let (name, rest) = match command.split_once(char::is_whitespace) {
            Some((name, rest)) => (name, rest.trim()),
            None => (command, ""),
        };
        if !is_valid_name(name) || !Scope::of(agent).allows_skill(name) {
            return None;
        }
        let skill = self.dirs.load(name)?.ok()?;
        let mut message = Self::render(&skill.name, &skill.body);
        if !rest.is_empty() {
            message.push_str("\n\n");
            message.push_str(rest);
        }
        Some(message)
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let output = match parse_arguments::<Arguments>(call) {
            Ok(arguments) => self.invoke(&context.agent, &arguments.name),
            Err(error) => error,
        };
        Some(Box::pin(std::future::ready(output)))
    }
}
