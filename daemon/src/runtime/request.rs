//! Building a model request from a conversation.
//!
//! The system message is assembled fresh for every call: the speaking
//! agent's prompt, the hooks' fragments, the `Crab.md` instructions and, when
//! more than one agent speaks in the conversation, the framing that explains
//! who said what. None of it is stored in the history.
//!
//! Assistant messages written by a guest are shown to every model wrapped in
//! `<from agent="name">…</from>`, so each agent can tell the speakers apart.

use crabllm_core::{
    ChatCompletionRequest, FunctionCall, FunctionDef, Tool, ToolCall, ToolChoice, ToolType,
};

use crate::config::agent::AgentDef;
use crate::hook::{ToolSpec, escape_attribute};
use crate::storage::{Message, Role};

/// Who is speaking on this turn.
pub(crate) enum Speaker<'a> {
    /// The conversation's own agent.
    Primary(&'a AgentDef),
    /// A guest in the primary's conversation: text only.
    Guest {
        guest: &'a AgentDef,
        primary: &'a str,
    },
}

impl Speaker<'_> {
    pub(crate) fn agent(&self) -> &AgentDef {
        match self {
            Self::Primary(agent) => agent,
            Self::Guest { guest, .. } => guest,
        }
    }
}

/// The inputs of one model call.
pub(crate) struct RequestParts<'a> {
    pub speaker: Speaker<'a>,
    /// The summary of what came before the last compaction, if any.
    pub summary: Option<&'a Message>,
    pub history: &'a [Message],
    pub hook_prompts: Vec<String>,
    pub instructions: Option<String>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: Option<&'a str>,
    /// The model, or empty for the daemon's active model.
    pub model: String,
}

/// A guest's message as every model sees it.
pub(crate) fn tagged(agent: &str, content: &str) -> String {
    format!(
        "<from agent=\"{}\">\n{content}\n</from>",
        escape_attribute(agent)
    )
}

impl RequestParts<'_> {
    pub(crate) fn build(self) -> ChatCompletionRequest {
        let agent = self.speaker.agent();
        let mut system = agent.prompt.trim().to_owned();
        for fragment in &self.hook_prompts {
            push_section(&mut system, fragment);
        }
        if let Some(instructions) = &self.instructions {
            push_section(&mut system, instructions);
        }
        let has_guests = self
            .history
            .iter()
            .any(|m| m.role == Role::Assistant && !m.agent.is_empty());
        match &self.speaker {
            Speaker::Guest { guest, primary } => {
                push_section(&mut system, &guest_framing(&guest.name, primary))
            }
            Speaker::Primary(primary) if has_guests => {
                push_section(&mut system, &primary_framing(&primary.name))
            }
            Speaker::Primary(_) => {}
        }

        let mut messages = Vec::with_capacity(self.history.len() + 2);
        if !system.is_empty() {
            messages.push(crabllm_core::Message::system(system));
        }
        messages.extend(
            self.summary
                .into_iter()
                .chain(self.history)
                .map(wire_message),
        );

        let tools: Vec<Tool> = self
            .tools
            .into_iter()
            .map(|spec| Tool {
                kind: ToolType::Function,
                function: FunctionDef {
                    name: spec.name,
                    description: Some(spec.description),
                    parameters: Some(spec.parameters),
                },
                strict: None,
                cache_control: None,
            })
            .collect();
        let tool_choice = match (&tools.is_empty(), self.tool_choice) {
            (false, Some(choice)) if !choice.is_empty() => Some(ToolChoice::from(choice)),
            _ => None,
        };
        ChatCompletionRequest {
            model: self.model,
            messages,
            tools: (!tools.is_empty()).then_some(tools),
            tool_choice,
            reasoning_effort: agent.config.thinking.then(|| "medium".to_owned()),
            ..Default::default()
        }
    }
}

fn push_section(system: &mut String, section: &str) {
    let section = section.trim();
    if section.is_empty() {
        return;
    }
    if !system.is_empty() {
        system.push_str("\n\n");
    }
    system.push_str(section);
}

fn guest_framing(guest: &str, primary: &str) -> String {
    format!(
        "You are {guest}, joining this conversation as a guest. It belongs to the agent {primary} and \
         its user. Assistant messages wrapped in <from agent=\"...\"> tags were written by the agent named \
         in the tag; assistant messages without a tag were written by {primary}. Reply as yourself, in \
         text only: you cannot call tools in this conversation."
    )
}

fn primary_framing(primary: &str) -> String {
    format!(
        "Other agents have joined this conversation as guests. Their messages are wrapped in \
         <from agent=\"...\"> tags. You are {primary}: continue responding as yourself."
    )
}

/// A history message in the provider's shape.
fn wire_message(message: &Message) -> crabllm_core::Message {
    match message.role {
        Role::User => crabllm_core::Message::user(message.content.clone()),
        Role::System => crabllm_core::Message::system(message.content.clone()),
        Role::Tool => crabllm_core::Message::tool(
            message.tool_call_id.clone().unwrap_or_default(),
            message.content.clone(),
        ),
        Role::Assistant => {
            let content = if message.agent.is_empty() {
                message.content.clone()
            } else {
                tagged(&message.agent, &message.content)
            };
            let mut wire = crabllm_core::Message::assistant(content);
            if !message.tool_calls.is_empty() {
                if message.content.is_empty() {
                    wire.content = None;
                }
                wire.tool_calls = Some(
                    message
                        .tool_calls
                        .iter()
                        .map(|call| ToolCall {
                            index: None,
                            id: call.id.clone(),
                            kind: ToolType::Function,
                            function: FunctionCall {
                                name: call.name.clone(),
                                arguments: call.arguments.clone(),
                            },
                        })
                        .collect(),
                );
            }
            wire
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::agent::AgentConfig;

    fn agent(name: &str, prompt: &str) -> AgentDef {
        AgentDef {
            name: name.into(),
            config: AgentConfig::default(),
            prompt: prompt.into(),
        }
    }

    fn history() -> Vec<Message> {
        let mut guest_reply = Message::assistant("I am the guest");
        guest_reply.agent = "gu\"est".into();
        vec![
            Message::user("hello"),
            Message::assistant("I am primary"),
            guest_reply,
        ]
    }

    #[test]
    fn a_guest_sees_framing_its_own_prompt_and_tagged_messages() {
        let primary = agent("crab", "primary prompt");
        let guest = agent("owl", "guest prompt");
        let history = history();
        let request = RequestParts {
            speaker: Speaker::Guest {
                guest: &guest,
                primary: &primary.name,
            },
            summary: None,
            history: &history,
            hook_prompts: vec![],
            instructions: Some("<instructions>be kind</instructions>".into()),
            tools: vec![],
            tool_choice: None,
            model: String::new(),
        }
        .build();
        let system = request.messages[0].content_str().unwrap();
        assert!(system.starts_with("guest prompt"), "{system}");
        assert!(system.contains("joining this conversation as a guest"));
        assert!(system.contains("be kind"));
        assert!(!system.contains("primary prompt"));
        let tagged = request.messages[3].content_str().unwrap();
        assert!(
            tagged.starts_with("<from agent=\"gu&quot;est\">"),
            "{tagged}"
        );
        assert_eq!(request.messages[2].content_str(), Some("I am primary"));
        assert!(request.tools.is_none());
    }

    #[test]
    fn the_primary_gets_framing_only_when_guests_spoke() {
        let primary = agent("crab", "primary prompt");
        let plain = vec![Message::user("hello")];
        let request = RequestParts {
            speaker: Speaker::Primary(&primary),
            summary: None,
            history: &plain,
            hook_prompts: vec!["hook fragment".into()],
            instructions: None,
            tools: vec![],
            tool_choice: Some("auto"),
            model: "m".into(),
        }
        .build();
        let system = request.messages[0].content_str().unwrap();
        assert_eq!(system, "primary prompt\n\nhook fragment");
        assert!(request.tool_choice.is_none(), "no tools, no tool_choice");

        let history = history();
        let request = RequestParts {
            speaker: Speaker::Primary(&primary),
            summary: None,
            history: &history,
            hook_prompts: vec![],
            instructions: None,
            tools: vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: serde_json::json!({}),
            }],
            tool_choice: Some("required"),
            model: "m".into(),
        }
        .build();
        assert!(
            request.messages[0]
                .content_str()
                .unwrap()
                .contains("joined this conversation as guests")
        );
        assert_eq!(request.tool_choice, Some(ToolChoice::Required));
    }
}
