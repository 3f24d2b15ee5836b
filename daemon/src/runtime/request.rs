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
    pub hook_prompts: &'a [String],
    pub instructions: Option<&'a str>,
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
    /// The request, holding what `wire` and `tools` lend it: give them back
    /// with [`give_back`] once the call no longer needs the request.
    pub(crate) fn build(
        self,
        wire: &mut WireHistory,
        tools: &mut Vec<Tool>,
    ) -> ChatCompletionRequest {
        let agent = self.speaker.agent();
        let mut system = agent.prompt.trim().to_owned();
        for fragment in self.hook_prompts {
            push_section(&mut system, fragment);
        }
        if let Some(instructions) = self.instructions {
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

        let mut head = Vec::with_capacity(2);
        if !system.is_empty() {
            head.push(crabllm_core::Message::system(system));
        }
        head.extend(self.summary.map(wire_message));
        let messages = wire.lend(head, self.history);

        let tool_choice = match (tools.is_empty(), self.tool_choice) {
            (false, Some(choice)) if !choice.is_empty() => Some(ToolChoice::from(choice)),
            _ => None,
        };
        ChatCompletionRequest {
            model: self.model,
            messages,
            tools: (!tools.is_empty()).then(|| std::mem::take(tools)),
            tool_choice,
            reasoning_effort: agent.config.thinking.then(|| "medium".to_owned()),
            ..Default::default()
        }
    }
}

/// Takes back what [`RequestParts::build`] lent a request.
pub(crate) fn give_back(
    request: ChatCompletionRequest,
    wire: &mut WireHistory,
    tools: &mut Vec<Tool>,
) {
    wire.take_back(request.messages);
    if let Some(lent) = request.tools {
        *tools = lent;
    }
}

/// The tools a model is offered, in the provider's shape: built once per
/// turn and lent to each of its calls.
pub(crate) fn tool_defs(specs: Vec<ToolSpec>) -> Vec<Tool> {
    specs
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
        .collect()
}

/// What the tools a turn offers are built from: when it is the same as the
/// previous turn's, so are the tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolsKey {
    /// The snapshot's generation (its hooks, its agents, their settings).
    pub snapshot: u64,
    /// The speaking agent, by name within that snapshot.
    pub agent: String,
    /// The chain's trigger (a component's own tools are not offered to the
    /// chains it starts).
    pub trigger: Option<String>,
    /// Whether the chain began with a gateway user (the gate's rule).
    pub gateway: bool,
    /// Every hook's [`Hook::stamp`](crate::hook::Hook::stamp), in order.
    pub stamps: Vec<u64>,
}

/// A conversation's tools in the provider's shape, kept from one turn to
/// the next while their [`ToolsKey`] stays the same: building them copies
/// every tool's JSON schema, which was 8 % of the daemon's CPU in a turn.
/// A turn takes them and gives them back when it ends; a turn that ends
/// early (an error, a cancel) leaves nothing, and the next one builds them.
#[derive(Default)]
pub(crate) struct KeptTools {
    kept: Option<(ToolsKey, Vec<Tool>)>,
}

impl KeptTools {
    /// The tools for `key`: the kept ones if they were built for it,
    /// otherwise `build()`'s.
    pub(crate) fn take(&mut self, key: &ToolsKey, build: impl FnOnce() -> Vec<Tool>) -> Vec<Tool> {
        match self.kept.take() {
            Some((kept_key, tools)) if kept_key == *key => tools,
            _ => build(),
        }
    }

    /// Keeps `tools`, built for `key`, for the next turn.
    pub(crate) fn keep(&mut self, key: ToolsKey, tools: Vec<Tool>) {
        self.kept = Some((key, tools));
    }
}

/// A conversation's history in the provider's shape, kept beside the
/// history so that each model call borrows the messages instead of copying
/// every one of them (and its strings) again.
///
/// It holds the head of the last request (system prompt, summary) and then
/// one message per history message. When its length disagrees with the
/// history's (a lent request never came back, the history was loaded or
/// cleared behind its back), the next [`lend`](Self::lend) rebuilds it from
/// the history, so a lost lend costs one copy, never a wrong request.
#[derive(Default)]
pub(crate) struct WireHistory {
    messages: Vec<crabllm_core::Message>,
    /// How many of `messages` are the last request's head.
    head: usize,
    /// The head of the request out on loan.
    lent_head: usize,
}

impl WireHistory {
    /// Adds a message appended to the history.
    pub(crate) fn push(&mut self, message: &Message) {
        self.messages.push(wire_message(message));
    }

    /// Forgets every message (the history was cleared).
    pub(crate) fn clear(&mut self) {
        self.messages.clear();
        self.head = 0;
    }

    /// The messages of a request: `head`, then `history` in the provider's
    /// shape.
    fn lend(
        &mut self,
        head: Vec<crabllm_core::Message>,
        history: &[Message],
    ) -> Vec<crabllm_core::Message> {
        let mut messages = std::mem::take(&mut self.messages);
        let old_head = std::mem::take(&mut self.head);
        self.lent_head = head.len();
        if messages.len() != old_head + history.len() {
            messages.clear();
            messages.reserve(head.len() + history.len());
            messages.extend(head);
            messages.extend(history.iter().map(wire_message));
        } else if old_head == head.len() {
            for (slot, message) in messages.iter_mut().zip(head) {
                *slot = message;
            }
        } else {
            messages.splice(..old_head, head);
        }
        messages
    }

    /// Takes back the messages [`lend`](Self::lend) gave a request.
    fn take_back(&mut self, messages: Vec<crabllm_core::Message>) {
        // Messages pushed while the request was out land in the empty
        // vector and are dropped here: the length check rebuilds them.
        self.messages = messages;
        self.head = self.lent_head;
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

    fn wire_of(history: &[Message]) -> WireHistory {
        let mut wire = WireHistory::default();
        for message in history {
            wire.push(message);
        }
        wire
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
            hook_prompts: &[],
            instructions: Some("<instructions>be kind</instructions>"),
            tool_choice: None,
            model: String::new(),
        }
        .build(&mut wire_of(&history), &mut Vec::new());
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
            hook_prompts: &["hook fragment".into()],
            instructions: None,
            tool_choice: Some("auto"),
            model: "m".into(),
        }
        .build(&mut wire_of(&plain), &mut Vec::new());
        let system = request.messages[0].content_str().unwrap();
        assert_eq!(system, "primary prompt\n\nhook fragment");
        assert!(request.tool_choice.is_none(), "no tools, no tool_choice");

        let history = history();
        let request = RequestParts {
            speaker: Speaker::Primary(&primary),
            summary: None,
            history: &history,
            hook_prompts: &[],
            instructions: None,
            tool_choice: Some("required"),
            model: "m".into(),
        }
        .build(
            &mut wire_of(&history),
            &mut tool_defs(vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: serde_json::json!({}),
            }]),
        );
        assert!(
            request.messages[0]
                .content_str()
                .unwrap()
                .contains("joined this conversation as guests")
        );
        assert_eq!(request.tool_choice, Some(ToolChoice::Required));
    }

    /// The messages a request gets, as JSON, built from nothing.
    fn fresh(head: &[&str], history: &[Message]) -> Vec<serde_json::Value> {
        head.iter()
            .map(|text| crabllm_core::Message::system(text.to_string()))
            .chain(history.iter().map(wire_message))
            .map(|message| serde_json::to_value(message).unwrap())
            .collect()
    }

    fn as_json(messages: &[crabllm_core::Message]) -> Vec<serde_json::Value> {
        messages
            .iter()
            .map(|message| serde_json::to_value(message).unwrap())
            .collect()
    }

    fn heads(texts: &[&str]) -> Vec<crabllm_core::Message> {
        texts
            .iter()
            .map(|text| crabllm_core::Message::system(text.to_string()))
            .collect()
    }

    #[test]
    fn a_lent_history_is_what_a_fresh_copy_would_be() {
        let mut history = Vec::new();
        let mut wire = WireHistory::default();
        // Each step: the messages appended, then the head of the call.
        let steps: [(&[&str], &[&str]); 5] = [
            (&["hello"], &["system"]),
            (&["call a tool", "its result"], &["system"]),
            (&[], &["system", "summary"]),
            (&["more"], &[]),
            (&["and more"], &["other system"]),
        ];
        for (appended, head) in steps {
            for text in appended {
                let message = Message::user(*text);
                wire.push(&message);
                history.push(message);
            }
            let lent = wire.lend(heads(head), &history);
            assert_eq!(as_json(&lent), fresh(head, &history));
            wire.take_back(lent);
        }
    }

    #[test]
    fn a_lend_that_never_came_back_is_rebuilt_not_trusted() {
        let mut history = vec![Message::user("one"), Message::assistant("two")];
        let mut wire = wire_of(&history);
        let lost = wire.lend(heads(&["system"]), &history);
        drop(lost);
        for text in ["three", "four"] {
            let message = Message::user(text);
            wire.push(&message);
            history.push(message);
        }
        let lent = wire.lend(heads(&["system"]), &history);
        assert_eq!(as_json(&lent), fresh(&["system"], &history));

        // Pushed while a request is out: dropped on its return, rebuilt on
        // the next lend.
        let message = Message::user("five");
        wire.push(&message);
        history.push(message);
        wire.take_back(lent);
        let lent = wire.lend(heads(&["system"]), &history);
        assert_eq!(as_json(&lent), fresh(&["system"], &history));

        // A history loaded behind its back.
        wire.take_back(lent);
        let loaded = vec![Message::user("loaded")];
        let lent = wire.lend(heads(&[]), &loaded);
        assert_eq!(as_json(&lent), fresh(&[], &loaded));
    }

    #[test]
    fn the_tools_come_back_after_the_call() {
        let history = vec![Message::user("hello")];
        let mut wire = wire_of(&history);
        let mut tools = tool_defs(vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            parameters: serde_json::json!({}),
        }]);
        let primary = agent("crab", "prompt");
        for _ in 0..2 {
            let request = RequestParts {
                speaker: Speaker::Primary(&primary),
                summary: None,
                history: &history,
                hook_prompts: &[],
                instructions: None,
                tool_choice: None,
                model: "m".into(),
            }
            .build(&mut wire, &mut tools);
            assert_eq!(request.tools.as_ref().map(Vec::len), Some(1));
            assert!(tools.is_empty(), "lent, not copied");
            give_back(request, &mut wire, &mut tools);
            assert_eq!(tools.len(), 1);
        }
    }

    #[test]
    fn kept_tools_are_reused_only_for_the_same_key() {
        let key = ToolsKey {
            snapshot: 1,
            agent: "crab".into(),
            trigger: None,
            gateway: false,
            stamps: vec![0, 3],
        };
        let built = std::cell::Cell::new(0);
        let build = || {
            built.set(built.get() + 1);
            tool_defs(vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: serde_json::json!({}),
            }])
        };
        let mut kept = KeptTools::default();
        let tools = kept.take(&key, build);
        assert_eq!(built.get(), 1);
        kept.keep(key.clone(), tools);
        let tools = kept.take(&key, build);
        assert_eq!((built.get(), tools.len()), (1, 1), "the same key: kept");
        // Taken and not given back (a turn that failed): built again.
        let tools = kept.take(&key, build);
        assert_eq!(built.get(), 2);
        kept.keep(key.clone(), tools);

        let changes = [
            ToolsKey {
                snapshot: 2,
                ..key.clone()
            },
            ToolsKey {
                agent: "other".into(),
                ..key.clone()
            },
            ToolsKey {
                trigger: Some("cron".into()),
                ..key.clone()
            },
            ToolsKey {
                gateway: true,
                ..key.clone()
            },
            ToolsKey {
                stamps: vec![0, 4],
                ..key.clone()
            },
        ];
        for (n, changed) in changes.into_iter().enumerate() {
            let tools = kept.take(&key, build);
            kept.keep(key.clone(), tools);
            let before = built.get();
            kept.take(&changed, build);
            assert_eq!(built.get(), before + 1, "change {n}: built again");
            kept.keep(key.clone(), build());
        }
    }
}
